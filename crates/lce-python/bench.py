"""lce.Encoder against the DA-style Python encoder, in one process.

The contenders encode the same generated run (the corpus of `cargo xtask
bench-peers`: 100000 `mixed` events, seed 1, under target/peers/) into the
same format, each looping over the whole run until --seconds have passed:

- peer: `xtask/peers/da_encode.py`'s encoder (json.loads per line, dicts
  written with json.dumps, as Dynamic Agents does), imported as a module;
- lce.Encoder: `Encoder(to=F).encode(line)` per line, then `finish()`
  (no validation: the same job as the peer);
- lce.encode: the whole chain of `lce encode` over the run (parse,
  sanitize, validate, coordinate, encode), the GIL released per batch.

Both encoders' bytes are compared (one pass each). Prints a table and one
JSON line per row.

    python crates/lce-python/bench.py [--events N] [--seconds S] [--corpus FILE]
"""

import argparse
import importlib.util
import json
import pathlib
import platform
import subprocess
import sys
import time

import lce

ROOT = pathlib.Path(__file__).resolve().parents[2]


def corpus(events, path):
    if path:
        return pathlib.Path(path)
    out = ROOT / "target" / "peers" / f"corpus-mixed-{events}.jsonl"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["cargo", "xtask", "corpus", "--events", str(events), "--mix", "mixed", "--seed", "1", "--out", str(out)],
            cwd=ROOT,
            check=True,
        )
    return out


def peer():
    spec = importlib.util.spec_from_file_location("da_encode", ROOT / "xtask" / "peers" / "da_encode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, n, seconds):
    """events/s of fn() (one pass over n events), looped for `seconds`."""
    done = 0
    t0 = time.perf_counter()
    while True:
        fn()
        done += n
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return done / elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=100000)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--corpus")
    a = p.parse_args()
    path = corpus(a.events, a.corpus)
    lines = path.read_text(encoding="utf-8").splitlines()
    n = len(lines)
    da = peer()
    print(f"bench: {n} events from {path.name}, about {a.seconds} s per contender")
    print(f"python {platform.python_version()}, lce {lce.__version__}, {platform.machine()}")
    rows = []
    for fmt, enc_fn in (("custom", da.encode_custom), ("agui", da.encode_agui)):
        def run_peer():
            out = []
            enc_fn(lines, out)
            return "".join(out).encode("utf-8")

        def run_encoder():
            enc = lce.Encoder(to=fmt)
            out = [enc.encode(line) for line in lines]
            out.append(enc.finish())
            return b"".join(out)

        def run_chain():
            return lce.encode(lines, to=fmt)

        same = run_peer() == run_encoder()
        peer_rate = timed(run_peer, n, a.seconds)
        enc_rate = timed(run_encoder, n, a.seconds)
        chain_rate = timed(run_chain, n, a.seconds)
        for who, rate in (("da_encode.py", peer_rate), ("lce.Encoder", enc_rate), ("lce.encode (chain)", chain_rate)):
            rows.append({"format": fmt, "who": who, "events_per_s": round(rate), "vs_peer": round(rate / peer_rate, 2), "same_bytes": same})
    print(f"{'format':8} {'contender':20} {'events/s':>12} {'vs peer':>8}")
    for r in rows:
        print(f"{r['format']:8} {r['who']:20} {r['events_per_s']:>12,} {r['vs_peer']:>7.2f}x")
    print("bytes: lce.Encoder " + ("==" if all(r["same_bytes"] for r in rows) else "!=") + " da_encode.py")
    for r in rows:
        print(json.dumps(r))
    return 0 if all(r["same_bytes"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
