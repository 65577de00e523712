"""The official Python AG-UI 1.0 SDK (`ag-ui-protocol` 1.0.0) over agui-v1 events.

Used by `cargo xtask bench-peers`. Input: an agui-v1 SSE file (`lce encode
--to agui-v1`). Per event, in the timed loop: the event's JSON validated
strictly into the SDK's `Event` union with pydantic (`TypeAdapter(Event)
.validate_json(data, strict=True)`), then written back as an SSE frame by the
SDK's `EventEncoder`.

    target/peers-venv/bin/python agui_v1_official.py [--seconds S] FILE.sse

Prints one JSON line: {"events": n, "seconds": t}.
"""
import argparse
import json
import time

from pydantic import TypeAdapter

from ag_ui.core import Event
from ag_ui.encoder import EventEncoder


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("file")
    a = p.parse_args()
    with open(a.file, encoding="utf-8") as f:
        datas = [l[6:] for l in f.read().split("\n") if l.startswith("data: ")]
    adapter = TypeAdapter(Event)
    encoder = EventEncoder()
    n = 0
    # The same timing loop as da_encode.py's, so the two peers' figures
    # compare; each peer is a standalone script, run by path.
    t0 = time.perf_counter()
    while True:
        out = []
        for d in datas:
            out.append(encoder.encode(adapter.validate_json(d, strict=True)))
        n += len(datas)
        el = time.perf_counter() - t0
        if el >= a.seconds:
            break
    print(json.dumps({"events": n, "seconds": el}))


if __name__ == "__main__":
    main()
