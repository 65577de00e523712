"""Tests of the example harness over real HTTP (standard library only).

    python3 -m unittest discover -s examples/harness-python

Each test starts the server in-process on a free port and drives it with
http.client. When the lce binary is built (target/debug/lce, or $LCE_BIN),
the captured runs are also checked with `lce check --adapter`.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import harness

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")

START_TYPES = (
    ["run.started", "text.started"]
    + ["text.delta"] * len(harness.START_DELTAS)
    + ["text.finished", "tool.started"]
    + ["tool.arguments.delta"] * len(harness.TOOL_ARG_FRAGMENTS)
    + ["interrupt.requested", "run.interrupted"]
)
APPROVE_TYPES = [
    "run.started",
    "tool.started",
    "tool.finished",
    "text.started",
    "text.delta",
    "text.delta",
    "text.finished",
    "run.finished",
]
REJECT_TYPES = [
    "run.started",
    "tool.started",
    "tool.error",
    "text.started",
    "text.delta",
    "text.delta",
    "text.finished",
    "run.finished",
]

APPROVE = json.dumps({"type": "tool_approval", "decision": "approve"})
REJECT_LIST = json.dumps({"type": "tool_approval", "decisions": [{"type": "reject"}]})


def lce_binary() -> Optional[Path]:
    given = os.environ.get("LCE_BIN")
    if given:
        return Path(given)
    candidate = Path(__file__).resolve().parents[2] / "target" / "debug" / "lce"
    return candidate if candidate.exists() else None


class Harness:
    """One server on a free port, serving in a background thread."""

    def __init__(self, **config: Any) -> None:
        config.setdefault("pace", 0)
        config.setdefault("quiet", True)
        self.server = harness.make_server("127.0.0.1", 0, harness.Config(**config))
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(5)

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def post(self, path: str, body: Any, headers: Optional[Dict[str, str]] = None) -> Tuple[int, Dict[str, Any]]:
        """A request with a JSON answer: (status, body)."""
        conn = self.connection()
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()

    def open_run(self, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> "RunReader":
        conn = self.connection()
        hdrs = {
            "Content-Type": "application/json",
            "Accept": "application/x-ndjson, text/event-stream",
            **(headers or {}),
        }
        conn.request("POST", "/runs", json.dumps(body), hdrs)
        return RunReader(conn, conn.getresponse())

    def run(self, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> List[Dict[str, Any]]:
        reader = self.open_run(body, headers)
        try:
            return reader.rest()
        finally:
            reader.close()


class RunReader:
    """Reads a run's events as they arrive, in either framing."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self.conn = conn
        self.resp = resp
        self.sse = (resp.getheader("Content-Type") or "").startswith("text/event-stream")

    def next(self) -> Optional[Dict[str, Any]]:
        if not self.sse:
            line = self.resp.readline()
            if not line:
                return None
            assert line.endswith(b"\n"), line
            return json.loads(line)
        data: List[bytes] = []
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if line == b"":
                if data:
                    return json.loads(b"\n".join(data))
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)

    def rest(self) -> List[Dict[str, Any]]:
        events = []
        while True:
            event = self.next()
            if event is None:
                return events
            events.append(event)

    def close(self) -> None:
        self.conn.close()


def start_body(run_id: str, conversation_id: str, message: str = "hi") -> Dict[str, Any]:
    return {
        "run_id": run_id,
        "conversation_id": conversation_id,
        "agent_id": "demo",
        "message": message,
        "client_context": None,
    }


def resume_body(run_id: str, conversation_id: str, resume_data: str) -> Dict[str, Any]:
    return {
        "run_id": run_id,
        "conversation_id": conversation_id,
        "agent_id": "demo",
        "resume_data": resume_data,
        "client_context": {"locale": "en"},
    }


class HarnessTest(unittest.TestCase):
    def setUp(self) -> None:
        self.h = Harness()
        self.addCleanup(self.h.stop)
        self.captured: List[List[Dict[str, Any]]] = []

    def assertRun(self, events: List[Dict[str, Any]], run_id: str, conversation_id: str, types: List[str]) -> None:
        self.assertEqual([e["type"] for e in events], types)
        self.assertEqual([e["sequence"] for e in events], list(range(len(events))))
        for e in events:
            self.assertEqual(
                list(e), ["version", "type", "run_id", "conversation_id", "sequence", "timestamp", "namespace", "data"]
            )
            self.assertEqual(e["version"], 1)
            self.assertEqual(e["run_id"], run_id)
            self.assertEqual(e["conversation_id"], conversation_id)
            self.assertEqual(e["namespace"], [])
            self.assertRegex(e["timestamp"], TIMESTAMP)
        self.captured.append(events)

    def tearDown(self) -> None:
        # Every run a test captured is also a valid adapter run for lce.
        lce = lce_binary()
        if lce is None or not self.captured:
            return
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for i, events in enumerate(self.captured):
                path = Path(tmp) / ("run-%d.jsonl" % i)
                path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
                files.append(str(path))
            done = subprocess.run([str(lce), "check", "--adapter", *files], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)

    # -- start and resume

    def test_start_streams_text_then_asks_to_approve_the_tool_call(self) -> None:
        reader = self.h.open_run(start_body("run-1", "conv-1"))
        self.assertEqual(reader.resp.status, 200)
        self.assertEqual(reader.resp.getheader("Content-Type"), "application/x-ndjson")
        self.assertEqual(reader.resp.getheader("Transfer-Encoding"), "chunked")
        events = reader.rest()
        reader.close()
        self.assertRun(events, "run-1", "conv-1", START_TYPES)

        text = "".join(e["data"]["delta"] for e in events if e["type"] == "text.delta")
        self.assertIn("/tmp/report.txt", text)
        tool = events[START_TYPES.index("tool.started")]["data"]
        self.assertEqual(tool["tool_name"], "delete_file")
        self.assertEqual(tool["arguments"], {})
        args = "".join(e["data"]["delta"] for e in events if e["type"] == "tool.arguments.delta")
        self.assertEqual(json.loads(args), {"path": "/tmp/report.txt"})
        interrupt = events[-2]["data"]
        self.assertEqual(interrupt["interrupt_type"], "tool_approval")
        self.assertEqual(interrupt["agent_id"], "demo")
        self.assertEqual(
            interrupt["tool_approvals"],
            [
                {
                    "tool_call_id": tool["tool_call_id"],
                    "tool_name": "delete_file",
                    "tool_args": {"path": "/tmp/report.txt"},
                    "allowed_decisions": ["approve", "edit", "reject"],
                }
            ],
        )
        self.assertEqual(events[-1]["data"], {"interrupt_id": interrupt["interrupt_id"], "reason": "tool_approval"})

    def test_approve_runs_the_tool_and_finishes(self) -> None:
        start = self.h.run(start_body("run-1", "conv-1"))
        call_id = start[-2]["data"]["tool_approvals"][0]["tool_call_id"]
        events = self.h.run(resume_body("run-2", "conv-1", APPROVE))
        self.assertRun(events, "run-2", "conv-1", APPROVE_TYPES)
        self.assertEqual(
            events[1]["data"],
            {"tool_call_id": call_id, "tool_name": "delete_file", "arguments": {"path": "/tmp/report.txt"}},
        )
        self.assertEqual(events[2]["data"], {"tool_call_id": call_id, "result": "Deleted /tmp/report.txt"})
        self.assertEqual(events[-1]["data"], {"outcome": "success", "stop_reason": "end_turn"})
        # The approval was used up.
        again = self.h.run(resume_body("run-3", "conv-1", APPROVE))
        self.assertRun(again, "run-3", "conv-1", ["run.started", "run.error"])
        self.assertEqual(again[1]["data"]["code"], "no_pending_interrupt")

    def test_reject_in_a_decisions_list_reports_tool_rejected(self) -> None:
        start = self.h.run(start_body("run-1", "conv-1"))
        call_id = start[-2]["data"]["tool_approvals"][0]["tool_call_id"]
        events = self.h.run(resume_body("run-2", "conv-1", REJECT_LIST))
        self.assertRun(events, "run-2", "conv-1", REJECT_TYPES)
        self.assertEqual(events[1]["data"]["arguments"], {"path": "/tmp/report.txt"})
        self.assertEqual(
            events[2]["data"],
            {
                "tool_call_id": call_id,
                "code": "tool_rejected",
                "message": "The user rejected this tool call.",
                "retryable": False,
            },
        )

    def test_edit_runs_the_tool_with_the_edited_arguments(self) -> None:
        self.h.run(start_body("run-1", "conv-1"))
        edit = json.dumps({"type": "tool_approval", "decision": {"type": "edit", "args": {"path": "/tmp/old.txt"}}})
        events = self.h.run(resume_body("run-2", "conv-1", edit))
        self.assertRun(events, "run-2", "conv-1", APPROVE_TYPES)
        self.assertEqual(events[1]["data"]["arguments"], {"path": "/tmp/old.txt"})

    def test_resume_errors_are_runs_that_end_in_run_error(self) -> None:
        events = self.h.run(resume_body("run-1", "conv-none", APPROVE))
        self.assertRun(events, "run-1", "conv-none", ["run.started", "run.error"])
        self.assertEqual(
            events[1]["data"],
            {
                "code": "no_pending_interrupt",
                "message": "There is no pending approval to resume.",
                "retryable": False,
                "side_effect_status": "none",
            },
        )
        self.h.run(start_body("run-2", "conv-2"))
        bad = self.h.run(resume_body("run-3", "conv-2", '{"type": "tool_approval", "decision": "maybe"}'))
        self.assertRun(bad, "run-3", "conv-2", ["run.started", "run.error"])
        self.assertEqual(bad[1]["data"]["code"], "invalid_resume_data")
        # A bad resume leaves the approval pending.
        good = self.h.run(resume_body("run-4", "conv-2", APPROVE))
        self.assertRun(good, "run-4", "conv-2", APPROVE_TYPES)

    def test_conversations_keep_their_own_approvals(self) -> None:
        a = self.h.run(start_body("run-a", "conv-a"))
        b = self.h.run(start_body("run-b", "conv-b"))
        ra = self.h.run(resume_body("run-a2", "conv-a", REJECT_LIST))
        rb = self.h.run(resume_body("run-b2", "conv-b", APPROVE))
        self.assertEqual(ra[1]["data"]["tool_call_id"], a[-2]["data"]["tool_approvals"][0]["tool_call_id"])
        self.assertEqual(rb[1]["data"]["tool_call_id"], b[-2]["data"]["tool_approvals"][0]["tool_call_id"])
        self.assertNotEqual(ra[1]["data"]["tool_call_id"], rb[1]["data"]["tool_call_id"])

    # -- cancel

    def test_cancel_ends_a_streaming_run_with_run_cancelled(self) -> None:
        self.h.server.config.pace = 0.01
        reader = self.h.open_run(start_body("run-slow", "conv-1", "Write something slow please"))
        seen = [reader.next() for _ in range(6)]  # run.started, text.started, 4 deltas
        status, answer = self.h.post("/runs/run-slow/cancel", {})
        self.assertEqual((status, answer), (200, {"cancelled": True}))
        events = seen + reader.rest()
        reader.close()
        types = [e["type"] for e in events]
        self.assertRun(events, "run-slow", "conv-1", types)
        self.assertEqual(types[:2], ["run.started", "text.started"])
        self.assertEqual(set(types[2:-1]), {"text.delta"})
        self.assertLess(len(types), 2 + harness.SLOW_DELTA_COUNT)
        self.assertEqual(events[-1]["data"], {"reason": "client_request", "side_effect_status": "none"})
        # The run is over: a second cancel finds nothing.
        self.assertEqual(self.h.post("/runs/run-slow/cancel", {}), (404, {"cancelled": False}))

    def test_cancel_of_an_unknown_or_finished_run_is_404(self) -> None:
        self.assertEqual(self.h.post("/runs/nope/cancel", {}), (404, {"cancelled": False}))
        self.h.run(start_body("run-1", "conv-1"))
        self.assertEqual(self.h.post("/runs/run-1/cancel", {}), (404, {"cancelled": False}))

    def test_events_arrive_as_they_are_produced(self) -> None:
        self.h.server.config.pace = 0.05  # a slow start takes over 10 s in all
        began = time.monotonic()
        reader = self.h.open_run(start_body("run-live", "conv-1", "slow"))
        first = [reader.next() for _ in range(3)]
        self.assertLess(time.monotonic() - began, 5)
        self.assertEqual([e["type"] for e in first], ["run.started", "text.started", "text.delta"])
        self.assertEqual(self.h.post("/runs/run-live/cancel", {})[0], 200)
        self.assertEqual(reader.rest()[-1]["type"], "run.cancelled")
        reader.close()

    def test_shutdown_cancels_the_runs_still_streaming(self) -> None:
        self.h.server.config.pace = 0.01
        reader = self.h.open_run(start_body("run-slow", "conv-1", "slow"))
        seen = [reader.next() for _ in range(3)]
        threading.Thread(target=self.h.server.state.cancel_all, args=("shutdown", 5)).start()
        events = seen + reader.rest()
        reader.close()
        self.assertRun(events, "run-slow", "conv-1", [e["type"] for e in events])
        self.assertEqual(events[-1]["data"], {"reason": "shutdown", "side_effect_status": "none"})

    def test_a_reader_that_goes_away_ends_the_run(self) -> None:
        self.h.server.config.pace = 0.01
        reader = self.h.open_run(start_body("run-gone", "conv-1", "slow"))
        reader.next()
        reader.resp.close()
        reader.close()
        deadline = time.monotonic() + 5
        while self.h.server.state.runs and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(self.h.server.state.runs, {})
        self.assertEqual(self.h.post("/runs/run-gone/cancel", {}), (404, {"cancelled": False}))

    def test_http_1_0_gets_a_close_delimited_body(self) -> None:
        body = json.dumps(start_body("run-10", "conv-1")).encode()
        with socket.create_connection(("127.0.0.1", self.h.port), timeout=10) as sock:
            sock.sendall(b"POST /runs HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            raw = b""
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                raw += data
        head, _, payload = raw.partition(b"\r\n\r\n")
        self.assertNotIn(b"chunked", head.lower())
        events = [json.loads(line) for line in payload.decode().splitlines()]
        self.assertRun(events, "run-10", "conv-1", START_TYPES)

    def test_a_chunked_request_body_is_read(self) -> None:
        conn = self.h.connection()
        body = json.dumps(start_body("run-ch", "conv-1")).encode()
        conn.request("POST", "/runs", iter([body[:10], body[10:]]), {"Content-Type": "application/json"}, encode_chunked=True)
        reader = RunReader(conn, conn.getresponse())
        self.assertRun(reader.rest(), "run-ch", "conv-1", START_TYPES)
        reader.close()

    # -- requests lce should never send

    def test_bad_requests_get_4xx_json(self) -> None:
        self.assertEqual(self.h.post("/runs", {"run_id": "r"})[0], 400)
        both = dict(start_body("r", "c"), resume_data=APPROVE)
        self.assertEqual(self.h.post("/runs", both)[0], 400)
        self.assertEqual(self.h.post("/runs", dict(start_body("r", "c"), run_id=""))[0], 400)
        self.assertEqual(self.h.post("/elsewhere", {})[0], 404)

    def test_a_run_id_already_streaming_is_409(self) -> None:
        self.h.server.config.pace = 0.01
        reader = self.h.open_run(start_body("run-dup", "conv-1", "slow"))
        reader.next()
        self.assertEqual(self.h.post("/runs", start_body("run-dup", "conv-1"))[0], 409)
        self.h.post("/runs/run-dup/cancel", {})
        reader.rest()
        reader.close()


class SseFramingTest(unittest.TestCase):
    def test_sse_frames_carry_the_same_events(self) -> None:
        h = Harness(framing="sse")
        self.addCleanup(h.stop)
        reader = h.open_run(start_body("run-1", "conv-1"))
        self.assertEqual(reader.resp.getheader("Content-Type"), "text/event-stream")
        events = reader.rest()
        reader.close()
        self.assertEqual([e["type"] for e in events], START_TYPES)
        self.assertEqual([e["sequence"] for e in events], list(range(len(START_TYPES))))
        resumed = h.run(resume_body("run-2", "conv-1", APPROVE))
        self.assertEqual([e["type"] for e in resumed], APPROVE_TYPES)


class AuthTest(unittest.TestCase):
    def test_require_auth_refuses_requests_without_the_bearer_token(self) -> None:
        h = Harness(require_auth="s3cret-token")
        self.addCleanup(h.stop)
        self.assertEqual(h.post("/runs", start_body("r1", "c1")), (401, {"error": "unauthorized"}))
        wrong = {"Authorization": "Bearer nope"}
        self.assertEqual(h.post("/runs", start_body("r1", "c1"), wrong)[0], 401)
        self.assertEqual(h.post("/runs/r1/cancel", {}, wrong)[0], 401)
        good = {"Authorization": "Bearer s3cret-token", "X-Request-Id": "req-7"}
        reader = h.open_run(start_body("r1", "c1"), good)
        self.assertEqual(reader.resp.status, 200)
        self.assertEqual(reader.resp.getheader("X-Request-Id"), "req-7")
        self.assertEqual([e["type"] for e in reader.rest()], START_TYPES)
        reader.close()


if __name__ == "__main__":
    unittest.main()
