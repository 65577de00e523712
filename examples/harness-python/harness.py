#!/usr/bin/env python3
"""A scripted agent harness that speaks lce's upstream protocol.

Standard library only, Python 3.9+. `lce serve --upstream http://HOST:PORT`
calls it; the protocol is `docs/upstream.md`, the events are Canonical
Lifecycle Events v1. See README.md in this folder.

    python3 examples/harness-python/harness.py --port 9000

Routes:

- ``POST /runs``: a start (``message``) or a resume (``resume_data``); the
  answer streams the run's canonical events, one per line
  (``application/x-ndjson``, the default) or one per SSE ``data:`` frame
  (``--framing sse``), over HTTP/1.1 with ``Transfer-Encoding: chunked``,
  each event written and sent as it is produced.
- ``POST /runs/{run_id}/cancel``: ends a streaming run with ``run.cancelled``;
  ``200 {"cancelled": true}``, or ``404 {"cancelled": false}`` for a run
  that is unknown or already decided its terminal.

The agent is scripted and deterministic (only the timestamps come from the
clock): a start writes a short text, streams the arguments of a
``delete_file`` call and asks for its approval; a resume runs (approve, edit)
or rejects (reject) that call and answers. A message with the word "slow"
streams 200 text deltas first, so a cancel can arrive mid-run.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import re
import signal
import socket
import sys
import threading
import traceback
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import unquote, urlsplit

HARNESS_ID = "harness-python"
ADAPTER_VERSION = "1.0.0"

TOOL_NAME = "delete_file"
TOOL_ARGS = {"path": "/tmp/report.txt"}
# The tool call's arguments as streamed: the fragments join to one JSON
# object equal to TOOL_ARGS (D6).
TOOL_ARG_FRAGMENTS = ['{"path": ', '"/tmp/rep', 'ort.txt"}']

START_DELTAS = [
    "I can clean that up. ",
    "The old report ",
    "is in /tmp/report.txt, ",
    "so I will delete it.",
]
SLOW_DELTA_COUNT = 200

MAX_BODY_BYTES = 1 << 20  # a request body larger than this is refused (413)
MAX_ID_BYTES = 256  # D19's bound on identifiers
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"


def now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with milliseconds and a ``Z``."""
    t = datetime.now(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def short_hash(*parts: str) -> str:
    """A deterministic 12-hex-digit id part (ids stay bounded whatever
    length the run id has)."""
    h = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return h[:12]


class Config:
    def __init__(
        self,
        pace: float = 0.05,
        framing: str = "ndjson",
        require_auth: Optional[str] = None,
        quiet: bool = False,
        agents: Optional[List[str]] = None,
    ) -> None:
        if framing not in ("ndjson", "sse"):
            raise ValueError("framing must be ndjson or sse")
        self.pace = max(0.0, float(pace))
        self.framing = framing
        self.require_auth = require_auth
        self.quiet = quiet
        # None: every agent id plays the script.
        self.agents = agents


class Pending:
    """The approval a conversation waits for (kept between start and resume)."""

    def __init__(self, tool_call_id: str, arguments: Dict[str, Any], agent_id: str) -> None:
        self.tool_call_id = tool_call_id
        self.arguments = arguments
        self.agent_id = agent_id


class Run:
    """A run while its stream is open."""

    def __init__(self, run_id: str, conversation_id: str) -> None:
        self.run_id = run_id
        self.conversation_id = conversation_id
        # Set (under the state lock) by a cancel or shutdown, before the
        # terminal is decided: the stream then ends with run.cancelled.
        self.cancel_reason: Optional[str] = None
        # Set (under the state lock) once the run's terminal is chosen; a
        # cancel after that is refused (404).
        self.terminal_decided = False
        # Wakes the run's pauses at once on a cancel.
        self.wake = threading.Event()


class State:
    """What all requests share: the streaming runs and the pending approvals."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)
        self.runs: Dict[str, Run] = {}
        self.pending: Dict[str, Pending] = {}

    def register(self, run: Run) -> bool:
        with self.lock:
            if run.run_id in self.runs:
                return False
            self.runs[run.run_id] = run
            return True

    def unregister(self, run: Run) -> None:
        with self.lock:
            if self.runs.get(run.run_id) is run:
                del self.runs[run.run_id]
            self.idle.notify_all()

    def cancel(self, run_id: str, reason: str) -> bool:
        with self.lock:
            run = self.runs.get(run_id)
            if run is None or run.terminal_decided:
                return False
            if run.cancel_reason is None:
                run.cancel_reason = reason
            run.wake.set()
            return True

    def cancel_all(self, reason: str, wait_seconds: float) -> None:
        """Shutdown: end every streaming run with run.cancelled{reason} and
        wait (bounded) for their streams to close."""
        with self.lock:
            for run in self.runs.values():
                if not run.terminal_decided and run.cancel_reason is None:
                    run.cancel_reason = reason
                run.wake.set()
            self.idle.wait_for(lambda: not self.runs, timeout=wait_seconds)


class Cancelled(Exception):
    """The run was cancelled: its stream ends with run.cancelled."""


class Disconnected(Exception):
    """The reader went away: nothing more can be sent."""


class RunStream:
    """Writes one run's events: envelope, sequence, framing, pacing, cancel."""

    def __init__(self, state: State, run: Run, config: Config, write: Callable[[bytes], None]) -> None:
        self.state = state
        self.run = run
        self.config = config
        self._write = write
        self.sequence = 0
        # What the run may have done outside the stream (run.cancelled and
        # run.error must say): none, possible, known.
        self.side_effects = "none"

    def _send(self, type_: str, data: Dict[str, Any]) -> None:
        self._write_frame(self._frame(type_, data))

    def _frame(self, type_: str, data: Dict[str, Any]) -> bytes:
        event = {
            "version": 1,
            "type": type_,
            "run_id": self.run.run_id,
            "conversation_id": self.run.conversation_id,
            "sequence": self.sequence,
            "timestamp": now_rfc3339(),
            "namespace": [],
            "data": data,
        }
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        body = line.encode("utf-8")
        self.sequence += 1
        if self.config.framing == "sse":
            return b"data: " + body + b"\n\n"
        return body + b"\n"

    def _write_frame(self, frame: bytes) -> None:
        try:
            self._write(frame)
        except OSError as exc:  # BrokenPipeError, ConnectionResetError, ...
            raise Disconnected() from exc

    def _pause(self) -> None:
        if self.sequence > 0 and self.config.pace > 0:
            self.run.wake.wait(self.config.pace)

    def together(self, events: List[Tuple[str, Dict[str, Any]]]) -> None:
        """Non-terminal events written as one chunk, after one pace: lce
        reads them as ready together, so it never waits between them (a
        wait after a re-emitted tool.started would release it, D13a, and a
        rejected call would then show on DA's wires)."""
        self._pause()
        with self.state.lock:
            if self.run.cancel_reason is not None:
                self.run.terminal_decided = True
                raise Cancelled()
        self._write_frame(b"".join(self._frame(t, d) for t, d in events))

    def first(self, type_: str, data: Dict[str, Any]) -> None:
        """run.started: always sent, so a cancelled run still starts with it
        (rule 2)."""
        self._send(type_, data)

    def event(self, type_: str, data: Dict[str, Any]) -> None:
        """A non-terminal event, after the pace; raises Cancelled instead
        when the run was cancelled."""
        self._pause()
        with self.state.lock:
            if self.run.cancel_reason is not None:
                self.run.terminal_decided = True
                raise Cancelled()
        self._send(type_, data)

    def terminal(
        self,
        type_: str,
        data: Dict[str, Any],
        commit: Optional[Callable[[], None]] = None,
        undo: Optional[Callable[[], None]] = None,
    ) -> None:
        """The run's own terminal, unless a cancel came first. `commit` runs
        under the state lock as the terminal is decided (before it is sent,
        so a resume can never overtake it); `undo` runs if it cannot be sent."""
        self._pause()
        with self.state.lock:
            if self.run.cancel_reason is not None:
                self.run.terminal_decided = True
                raise Cancelled()
            self.run.terminal_decided = True
            if commit is not None:
                commit()
        try:
            self._send(type_, data)
        except Disconnected:
            if undo is not None:
                with self.state.lock:
                    undo()
            raise

    def cancelled(self) -> None:
        with self.state.lock:
            self.run.terminal_decided = True
            reason = self.run.cancel_reason or "client_request"
        self._send("run.cancelled", {"reason": reason, "side_effect_status": self.side_effects})

    def error(self, code: str, message: str) -> None:
        with self.state.lock:
            self.run.terminal_decided = True
        self._send(
            "run.error",
            {
                "code": code,
                "message": message,
                "retryable": False,
                "side_effect_status": self.side_effects,
            },
        )


# --- The scripted agent -------------------------------------------------


def run_started() -> Dict[str, Any]:
    return {"harness_id": HARNESS_ID, "adapter_version": ADAPTER_VERSION}


def text(out: RunStream, message_id: str, deltas: List[str]) -> None:
    out.event("text.started", {"message_id": message_id, "role": "assistant"})
    for delta in deltas:
        out.event("text.delta", {"message_id": message_id, "delta": delta})
    out.event("text.finished", {"message_id": message_id})


def play_start(out: RunStream, state: State, agent_id: str, message: str) -> None:
    run = out.run
    key = short_hash(run.run_id)
    message_id = "msg-%s-1" % key
    tool_call_id = "call_%s" % key
    interrupt_id = "int-%s" % key

    out.first("run.started", run_started())
    if re.search(r"\bslow\b", message, re.IGNORECASE):
        deltas = ["Part %d of a slow answer. " % (i + 1) for i in range(SLOW_DELTA_COUNT)]
    else:
        deltas = START_DELTAS
    text(out, message_id, deltas)
    out.event("tool.started", {"tool_call_id": tool_call_id, "tool_name": TOOL_NAME, "arguments": {}})
    for fragment in TOOL_ARG_FRAGMENTS:
        out.event("tool.arguments.delta", {"tool_call_id": tool_call_id, "delta": fragment})
    out.event(
        "interrupt.requested",
        {
            "interrupt_id": interrupt_id,
            "interrupt_type": "tool_approval",
            "agent_id": agent_id,
            "tool_approvals": [
                {
                    "tool_call_id": tool_call_id,
                    "tool_name": TOOL_NAME,
                    "tool_args": dict(TOOL_ARGS),
                    "allowed_decisions": ["approve", "edit", "reject"],
                }
            ],
        },
    )

    pending = Pending(tool_call_id, dict(TOOL_ARGS), agent_id)

    def commit() -> None:
        state.pending[run.conversation_id] = pending

    def undo() -> None:
        if state.pending.get(run.conversation_id) is pending:
            del state.pending[run.conversation_id]

    out.terminal("run.interrupted", {"interrupt_id": interrupt_id, "reason": "tool_approval"}, commit, undo)


class BadResume(ValueError):
    pass


def parse_decision(resume_data: str) -> Dict[str, Any]:
    """`{"type": "tool_approval", "decision": D}` or `{..., "decisions": [D, ...]}`
    where D is "approve" | "reject" | "edit", or an object naming it in
    "type" or "decision" (an edit carries its new arguments in "args" or
    "edited_action": {"args": ...}). Only the first decision counts: the
    script asks about one call."""
    try:
        obj = json.loads(resume_data)
    except ValueError:
        raise BadResume("resume_data is not JSON")
    if not isinstance(obj, dict) or obj.get("type") != "tool_approval":
        raise BadResume("resume_data is not a tool approval")
    if "decision" in obj:
        decision = obj["decision"]
    elif isinstance(obj.get("decisions"), list) and obj["decisions"]:
        decision = obj["decisions"][0]
    else:
        raise BadResume("no decision")
    args = None
    if isinstance(decision, dict):
        inner = decision
        decision = inner.get("type", inner.get("decision"))
        args = inner.get("args")
        edited = inner.get("edited_action")
        if args is None and isinstance(edited, dict):
            args = edited.get("args")
    if decision not in ("approve", "reject", "edit"):
        raise BadResume("unknown decision")
    if decision == "edit" and not isinstance(args, dict):
        raise BadResume("an edit without arguments")
    return {"decision": decision, "args": args}


def play_resume(out: RunStream, state: State, resume_data: str) -> None:
    run = out.run
    out.first("run.started", run_started())
    try:
        decision = parse_decision(resume_data)
    except BadResume:
        out.error("invalid_resume_data", "The resume request could not be understood.")
        return
    with state.lock:
        pending = state.pending.pop(run.conversation_id, None)
    if pending is None:
        out.error("no_pending_interrupt", "There is no pending approval to resume.")
        return

    message_id = "msg-%s-1" % short_hash(run.run_id)
    arguments = decision["args"] if decision["decision"] == "edit" else pending.arguments
    path = arguments.get("path") if isinstance(arguments.get("path"), str) else "the file"
    # D13: the resumed run re-emits the call's tool.started, with its
    # complete arguments, before its result or error.
    started = ("tool.started", {"tool_call_id": pending.tool_call_id, "tool_name": TOOL_NAME, "arguments": arguments})
    if decision["decision"] == "reject":
        # The re-emitted start and its rejection in one chunk (D13, D13a).
        rejected = {
            "tool_call_id": pending.tool_call_id,
            "code": "tool_rejected",
            "message": "The user rejected this tool call.",
            "retryable": False,
        }
        out.together([started, ("tool.error", rejected)])
        text(out, message_id, ["Understood: I did not delete %s. " % path, "The file is unchanged."])
    else:
        out.event(*started)
        out.side_effects = "possible"  # the tool runs now
        out.event("tool.finished", {"tool_call_id": pending.tool_call_id, "result": "Deleted %s" % path})
        out.side_effects = "known"
        text(out, message_id, ["Done: ", "%s is deleted." % path])
    # thread_state is the coordinator's to fill (D10a).
    out.terminal("run.finished", {"outcome": "success", "stop_reason": "end_turn"})


# --- HTTP ------------------------------------------------------------------


class HttpError(Exception):
    def __init__(self, status: int, body: Dict[str, Any], close: bool = False) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.close = close


def valid_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value.encode("utf-8")) <= MAX_ID_BYTES
        and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)
    )


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked responses, kept-alive connections
    server_version = "harness-python/1.0"
    disable_nagle_algorithm = True  # each event leaves at once
    timeout = 120  # seconds a kept-alive connection may idle (or a write may block)
    server: "HarnessServer"

    # -- plumbing

    def version_string(self) -> str:
        return self.server_version

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        # The request line and status only: never a header (Authorization).
        if not self.server.config.quiet:
            sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))

    def _json(self, status: int, body: Dict[str, Any], close: bool = False, extra: Optional[Dict[str, str]] = None) -> None:
        payload = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self._echo_request_id()
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)

    def _echo_request_id(self) -> None:
        rid = self.headers.get("X-Request-Id")
        if rid and len(rid) <= 200 and all(0x20 < ord(c) < 0x7F for c in rid):
            self.send_header("X-Request-Id", rid)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = self.headers.get("Content-Length")
        if length is None:
            raise HttpError(411, {"error": "a body with Content-Length is required"}, close=True)
        try:
            n = int(length)
        except ValueError:
            raise HttpError(400, {"error": "bad Content-Length"}, close=True)
        if n < 0 or n > MAX_BODY_BYTES:
            raise HttpError(413, {"error": "body too large"}, close=True)
        return self.rfile.read(n)

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise HttpError(400, {"error": "bad chunked body"}, close=True)
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return bytes(body)
            if len(body) + size > MAX_BODY_BYTES:
                raise HttpError(413, {"error": "body too large"}, close=True)
            body += self.rfile.read(size)
            self.rfile.readline(1024)  # the chunk's CRLF

    def _authorized(self) -> bool:
        token = self.server.config.require_auth
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode("utf-8"), ("Bearer " + token).encode("utf-8"))

    # -- routes

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path
        try:
            body = self._read_body()
            if not self._authorized():
                raise HttpError(401, {"error": "unauthorized"})
            if path == "/runs":
                self._runs(body)
                return
            m = re.fullmatch(r"/runs/([^/]+)/cancel", path)
            if m:
                self._cancel(unquote(m.group(1)))
                return
            raise HttpError(404, {"error": "not found"})
        except HttpError as e:
            extra = {"WWW-Authenticate": "Bearer"} if e.status == 401 else None
            self._json(e.status, e.body, close=e.close, extra=extra)

    def do_GET(self) -> None:  # noqa: N802
        self._json(404, {"error": "not found"})

    def _cancel(self, run_id: str) -> None:
        if self.server.state.cancel(run_id, "client_request"):
            self._json(200, {"cancelled": True})
        else:
            self._json(404, {"cancelled": False})

    def _runs(self, raw: bytes) -> None:
        try:
            req = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise HttpError(400, {"error": "the body is not JSON"})
        if not isinstance(req, dict):
            raise HttpError(400, {"error": "the body is not a JSON object"})
        for name in ("run_id", "conversation_id", "agent_id"):
            if not valid_id(req.get(name)):
                raise HttpError(400, {"error": "%s must be a non-empty string of at most %d bytes" % (name, MAX_ID_BYTES)})
        agents = self.server.config.agents
        if agents is not None and req["agent_id"] not in agents:
            raise HttpError(404, {"error": "no such agent"})
        has_message = isinstance(req.get("message"), str)
        has_resume = isinstance(req.get("resume_data"), str)
        if has_message == has_resume:
            raise HttpError(400, {"error": "give exactly one of message (a string) and resume_data (a string)"})
        # client_context (any JSON) is accepted and not used by this script.

        state = self.server.state
        run = Run(req["run_id"], req["conversation_id"])
        if not state.register(run):
            raise HttpError(409, {"error": "this run is already streaming"})
        try:
            self._stream(run, req, has_message)
        finally:
            state.unregister(run)

    def _stream(self, run: Run, req: Dict[str, Any], is_start: bool) -> None:
        config = self.server.config
        state = self.server.state
        # HTTP/1.1: chunked, one chunk per event. An HTTP/1.0 request (no
        # chunked encoding there) gets a body that ends when the connection
        # closes.
        chunked = self.request_version != "HTTP/1.0"

        def write(data: bytes) -> None:
            if chunked:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            else:
                self.wfile.write(data)

        out = RunStream(state, run, config, write)
        try:
            self.send_response(200)
            self.send_header("Content-Type", SSE if config.framing == "sse" else NDJSON)
            self.send_header("Cache-Control", "no-cache")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self._echo_request_id()
            self.end_headers()
            try:
                if is_start:
                    play_start(out, state, req["agent_id"], req["message"])
                else:
                    play_resume(out, state, req["resume_data"])
            except Cancelled:
                out.cancelled()
            except Disconnected:
                raise
            except Exception:  # a bug in the script: a safe terminal, the trace on stderr only
                traceback.print_exc(file=sys.stderr)
                with state.lock:
                    decided = run.terminal_decided
                if not decided:
                    out.error("internal", "Agent execution failed.")
            if chunked:
                self.wfile.write(b"0\r\n\r\n")  # the end of the chunked body
        except (Disconnected, OSError):
            self.close_connection = True


class HarnessServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: Any, config: Config) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.config = config
        self.state = State()
        super().__init__(address, Handler)

    def url(self) -> str:
        host, port = self.server_address[0], self.server_address[1]
        if ":" in host:
            host = "[%s]" % host
        return "http://%s:%d" % (host, port)

    def stop(self, grace: float = 2.0) -> None:
        """Ends every streaming run with run.cancelled{shutdown}, then stops
        serving (call from another thread than serve_forever's)."""
        self.state.cancel_all("shutdown", grace)
        self.shutdown()
        self.server_close()


def make_server(host: str = "127.0.0.1", port: int = 0, config: Optional[Config] = None) -> HarnessServer:
    return HarnessServer((host, port), config or Config())


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="A scripted agent speaking lce's upstream protocol (docs/upstream.md).")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9000, help="port (0: any free port; default 9000)")
    p.add_argument(
        "--framing",
        choices=("ndjson", "sse"),
        default="ndjson",
        help="application/x-ndjson (default) or text/event-stream",
    )
    p.add_argument("--pace", type=float, default=0.05, help="seconds between events (default 0.05; 0 = none)")
    p.add_argument(
        "--require-auth",
        metavar="TOKEN",
        help="answer 401 to requests without 'Authorization: Bearer TOKEN'",
    )
    p.add_argument("--quiet", action="store_true", help="no request log on stderr")
    p.add_argument(
        "--agents",
        metavar="NAME[,NAME...]",
        help="answer 404 to runs of any other agent_id (default: every agent plays the script)",
    )
    args = p.parse_args(argv)
    if args.pace < 0:
        p.error("--pace must be >= 0")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    agents = [a for a in args.agents.split(",") if a] if args.agents else None
    config = Config(pace=args.pace, framing=args.framing, require_auth=args.require_auth, quiet=args.quiet, agents=agents)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server = make_server(args.host, args.port, config)
    except OSError as e:
        print("cannot listen on %s:%d: %s" % (args.host, args.port, e.strerror), file=sys.stderr)
        return 2

    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="serve", daemon=True)
    serving.start()
    print("listening on %s" % server.url(), flush=True)
    while not stop.wait(0.1):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
