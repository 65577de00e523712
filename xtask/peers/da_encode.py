"""DA-style SSE encoding in Python, the way Dynamic Agents writes its frames.

Used by `cargo xtask bench-peers` as the Python peer of `lce encode --to
custom|agui`. Per canonical line: `json.loads`, a dict built in the key order
of wire-formats.md §3 (`custom`) or §4 (`agui`), the frame written with
`json.dumps` (`ensure_ascii=True` for custom, `False` for agui). Tool starts
are held until their streamed arguments are complete (D13), tool results are
cut to 2000 code points (§6), `agui` announces namespace changes with
`CUSTOM NAMESPACE_CONTEXT` and writes float Unix-second timestamps. No
validation: DA trusts its own producer.

    python3 da_encode.py --format custom|agui [--seconds S] [--check OUT] FILE

Prints one JSON line: {"events": n, "seconds": t} for the timed encode loop
(the file is read into memory first; the loop repeats over the run until S
seconds have passed, at least once). --check OUT writes one pass's frames.
"""
import argparse
import json
import sys
import time
from datetime import datetime

LIMIT = 2000


def truncate(s):
    if len(s) <= LIMIT:
        return s
    return s[:LIMIT] + "...[%d chars]" % (len(s) - LIMIT)


def frame(out, name, payload, ascii_):
    out.append("event: %s\ndata: %s\n\n" % (name, json.dumps(payload, ensure_ascii=ascii_)))


def encode_custom(lines, out):
    held = {}  # tool_call_id -> [tool_name, args text or None, namespace, args]
    order = []

    def release(out):
        for cid in order:
            name, text, ns, args = held[cid]
            if text is not None:
                args = json.loads(text)
            frame(out, "tool_start", {"tool_name": name, "tool_call_id": cid, "args": args, "namespace": ns}, True)
        held.clear()
        order.clear()

    for line in lines:
        ev = json.loads(line)
        ty = ev["type"]
        d = ev["data"]
        ns = ev["namespace"]
        if ty == "tool.arguments.delta":
            h = held.get(d["tool_call_id"])
            if h is not None:
                h[1] = (h[1] or "") + d["delta"]
            continue
        if order and ty != "tool.started":
            release(out)
        if ty == "text.delta":
            if d["delta"]:
                frame(out, "content", {"text": d["delta"], "namespace": ns}, True)
        elif ty == "tool.started":
            if order:
                release(out)
            args = d.get("arguments") or {}
            held[d["tool_call_id"]] = [d["tool_name"], None, ns, args]
            order.append(d["tool_call_id"])
        elif ty == "tool.finished":
            p = {"tool_call_id": d["tool_call_id"], "namespace": ns}
            r = d.get("result")
            if isinstance(r, str) and r:
                p["result"] = truncate(r)
            elif r not in (None, ""):
                p["result"] = truncate(json.dumps(r))
            frame(out, "tool_end", p, True)
        elif ty == "tool.error":
            frame(out, "tool_end", {"tool_call_id": d["tool_call_id"], "namespace": ns, "error": "ERROR: " + d["message"]}, True)
        elif ty == "warning":
            frame(out, "warning", {"message": d["message"], "namespace": []}, True)
        elif ty == "run.error":
            frame(out, "error", {"error": d["message"]}, True)
        elif ty == "run.finished":
            frame(out, "done", {}, True)


def seconds(ts):
    return datetime.fromisoformat(ts).timestamp()


# encode_agui repeats encode_custom's hold and event loop on purpose: each is
# the straight-line Python one DA-style service runs for its protocol, timed
# alone; a shared helper would add a layer neither has.
def encode_agui(lines, out):
    announced = []
    open_text = []
    held = {}
    order = []

    def ns_check(ns, ts):
        nonlocal announced
        if ns != announced:
            announced = ns
            frame(out, "CUSTOM", {"type": "CUSTOM", "name": "NAMESPACE_CONTEXT", "value": {"namespace": ns}, "timestamp": ts}, False)

    def release(ts):
        for cid in order:
            name, text, ns, args, ts = held[cid]
            if text is not None:
                args = json.loads(text)
            ns_check(ns, ts)
            frame(out, "TOOL_CALL_START", {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": name, "timestamp": ts}, False)
            frame(out, "TOOL_CALL_ARGS", {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": json.dumps(args), "timestamp": ts}, False)
        held.clear()
        order.clear()

    for line in lines:
        ev = json.loads(line)
        ty = ev["type"]
        d = ev["data"]
        ns = ev["namespace"]
        ts = seconds(ev["timestamp"])
        if ty == "tool.arguments.delta":
            h = held.get(d["tool_call_id"])
            if h is not None:
                h[1] = (h[1] or "") + d["delta"]
            continue
        if order and ty != "tool.started":
            release(ts)
        if ty == "run.started":
            frame(out, "RUN_STARTED", {"type": "RUN_STARTED", "runId": ev["run_id"], "threadId": ev["conversation_id"], "timestamp": ts}, False)
        elif ty == "text.started":
            ns_check(ns, ts)
            open_text.append(d["message_id"])
            frame(out, "TEXT_MESSAGE_START", {"type": "TEXT_MESSAGE_START", "messageId": d["message_id"], "role": "assistant", "timestamp": ts}, False)
        elif ty == "text.delta":
            if d["delta"]:
                ns_check(ns, ts)
                frame(out, "TEXT_MESSAGE_CONTENT", {"type": "TEXT_MESSAGE_CONTENT", "messageId": d["message_id"], "delta": d["delta"], "timestamp": ts}, False)
        elif ty == "text.finished":
            if d["message_id"] in open_text:
                open_text.remove(d["message_id"])
            frame(out, "TEXT_MESSAGE_END", {"type": "TEXT_MESSAGE_END", "messageId": d["message_id"], "timestamp": ts}, False)
        elif ty == "tool.started":
            if order:
                release(ts)
            held[d["tool_call_id"]] = [d["tool_name"], None, ns, d.get("arguments") or {}, ts]
            order.append(d["tool_call_id"])
        elif ty in ("tool.finished", "tool.error"):
            ns_check(ns, ts)
            cid = d["tool_call_id"]
            if ty == "tool.error":
                content = "ERROR: " + d["message"]
            else:
                r = d.get("result")
                content = r if isinstance(r, str) else ("" if r is None else json.dumps(r))
            if content:
                frame(out, "TOOL_CALL_RESULT", {"type": "TOOL_CALL_RESULT", "message_id": d.get("result_ref") or cid, "tool_call_id": cid, "content": truncate(content), "role": "tool", "timestamp": ts}, False)
            frame(out, "TOOL_CALL_END", {"type": "TOOL_CALL_END", "toolCallId": cid, "timestamp": ts}, False)
        elif ty == "warning":
            frame(out, "CUSTOM", {"type": "CUSTOM", "name": "WARNING", "value": {"message": d["message"], "namespace": []}, "timestamp": ts}, False)
        elif ty == "run.error":
            frame(out, "RUN_ERROR", {"type": "RUN_ERROR", "message": d["message"], "timestamp": ts}, False)
        elif ty == "run.finished":
            for mid in open_text:
                frame(out, "TEXT_MESSAGE_END", {"type": "TEXT_MESSAGE_END", "messageId": mid, "timestamp": ts}, False)
            open_text.clear()
            frame(out, "RUN_FINISHED", {"type": "RUN_FINISHED", "runId": ev["run_id"], "threadId": ev["conversation_id"], "outcome": "success", "timestamp": ts}, False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--format", choices=["custom", "agui"], required=True)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--check")
    p.add_argument("file")
    a = p.parse_args()
    with open(a.file, encoding="utf-8") as f:
        lines = f.read().splitlines()
    enc = encode_custom if a.format == "custom" else encode_agui
    if a.check:
        out = []
        enc(lines, out)
        with open(a.check, "w", encoding="utf-8") as f:
            f.write("".join(out))
    n = 0
    # The same timing loop as agui_v1_official.py's, so the two peers' figures
    # compare; each peer is a standalone script, run by path.
    t0 = time.perf_counter()
    while True:
        out = []
        enc(lines, out)
        n += len(lines)
        el = time.perf_counter() - t0
        if el >= a.seconds:
            break
    print(json.dumps({"events": n, "seconds": el}))


if __name__ == "__main__":
    sys.exit(main())
