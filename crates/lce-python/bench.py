"""The Python package against its references, per event, in one process.

Run by `cargo xtask bench-python`, which builds and installs the wheel
(release) in a venv, builds the release `lce`, generates the corpus and
passes its folder:

    python crates/lce-python/bench.py --corpus DIR --lce BIN [--seconds S]

The corpus folder holds three groups of runs, each a set of `.jsonl` files
of one run each:

- `short/`: generated runs of 3 to 200 events (`lce_testkit::corpus`, the
  three mixes in turn, lengths drawn once with a fixed seed: unicode text,
  reasoning, tool calls with arguments and results, subagents);
- `scenarios/`: the bundled scenarios (fixtures/scenarios: interrupts,
  cancellations, errors, resumes);
- `long/`: one generated `mixed` run of 20000 events.

For each group and format (`custom`, `agui`) every contender goes over
every run of the group, in rounds (contenders interleaved within a round),
until `--seconds` per contender have passed (a contender's sample in a
round is as many passes as take about a tenth of that); a figure is the
median over the rounds of (CPU time of the sample / events it covered),
in microseconds per event: the CPU time (user + system) of this process,
or of the `lce` processes for the CLI rows, so that other work on the
machine counts less than with wall time. The contenders:

- `da_encode.py`: `xtask/peers/da_encode.py`'s encoder, written the way
  Dynamic Agents writes its frames (json.loads per line, json.dumps per
  frame, the C accelerator), no validation;
- `lce.encode`: `lce.encode(lines, to=F)` per run (the whole chain of
  `lce encode`: parse, sanitize, validate, coordinate, encode);
- `lce.Encoder`: `Encoder(F)` per run, `encode(line)` per line, `finish()`
  (no validation: the peer's job);
- `lce encode (CLI)`: `lce encode --to F RUN > /dev/null`, one process per
  run; the CPU time of a process on a 2-event run (its start-up and exit,
  measured in the same rounds) is subtracted per run, so the figure is the
  CLI's per-event work with its start-up amortised away, as over one file
  of many runs (`lce encode` takes one run per file). Left out of the
  `scenarios` group, whose runs (3 to 29 events, some 20 µs of work) are
  too short for the difference with a ~3 ms start-up to be meaningful;
- and, per event (no format), `RunValidator.push(dict)`,
  `RunValidator.push_json(bytes)` (when the package has it) and
  `json.dumps(dict)` over the group's events, each run in a fresh
  validator (adapter mode).

The peer's bytes are compared with `lce.Encoder`'s on every run (`same`
counts the runs where they are equal). Prints a table and one JSON line per
figure.
"""

import argparse
import importlib.util
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import time

import lce

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORMATS = ("custom", "agui")


def peer():
    spec = importlib.util.spec_from_file_location("da_encode", ROOT / "xtask" / "peers" / "da_encode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(folder):
    runs = []
    for path in sorted(folder.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if lines:
            runs.append((path, lines))
    return runs


def rounds(contenders, events, seconds):
    """{name: median µs per event} of each contender (a function doing one
    pass over the group), interleaved round by round. A contender's sample
    is as many passes as take about a tenth of `seconds` (one at least);
    rounds go on until every contender has had `seconds` and 3 rounds."""
    reps = {}
    for name, fn in contenders.items():
        clock = clock_of(name)
        t0 = clock()
        fn()
        reps[name] = max(1, round(seconds / 10 / max(clock() - t0, 1e-9)))
    samples = {name: [] for name in contenders}
    spent = {name: 0.0 for name in contenders}
    while True:
        for name, fn in contenders.items():
            clock = clock_of(name)
            t0 = clock()
            for _ in range(reps[name]):
                fn()
            dt = clock() - t0
            spent[name] += dt
            samples[name].append(dt * 1e6 / events / reps[name])
        if min(spent.values()) >= seconds and min(len(s) for s in samples.values()) >= 3:
            return {name: statistics.median(s) for name, s in samples.items()}


def children_cpu():
    """CPU time (user + system) of the finished child processes."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def clock_of(name):
    """The CLI rows count the `lce` processes' CPU time, the others this
    process's."""
    return children_cpu if name in ("lce encode (CLI)", "_floor") else time.process_time


def cli_pass(binary, fmt, paths):
    def run():
        for path in paths:
            subprocess.run([binary, "encode", "--to", fmt, str(path)], stdout=subprocess.DEVNULL, check=False)

    return run


def encoders(group, runs, binary, floor_run, seconds, da):
    events = sum(len(lines) for _, lines in runs)
    rows = []
    for fmt in FORMATS:
        da_fn = da.encode_custom if fmt == "custom" else da.encode_agui

        def run_peer():
            for _, lines in runs:
                out = []
                da_fn(lines, out)
                "".join(out).encode("utf-8")

        def run_encode():
            for _, lines in runs:
                lce.encode(lines, to=fmt)

        def run_encoder():
            for _, lines in runs:
                enc = lce.Encoder(fmt)
                out = [enc.encode(line) for line in lines]
                out.append(enc.finish())
                b"".join(out)

        same = 0
        for _, lines in runs:
            out = []
            da_fn(lines, out)
            enc = lce.Encoder(fmt)
            mine = b"".join([enc.encode(line) for line in lines] + [enc.finish()])
            same += "".join(out).encode("utf-8") == mine
        contenders = {
            "da_encode.py": run_peer,
            "lce.encode": run_encode,
            "lce.Encoder": run_encoder,
        }
        if binary and group != "scenarios":
            paths = [path for path, _ in runs]
            contenders["lce encode (CLI)"] = cli_pass(binary, fmt, paths)
            # The start-up of one process, once per run of the group.
            contenders["_floor"] = cli_pass(binary, fmt, [floor_run] * len(paths))
        us = rounds(contenders, events, seconds)
        if "_floor" in us:
            us["lce encode (CLI)"] = max(us["lce encode (CLI)"] - us.pop("_floor"), 0.0)
        peer_us = us["da_encode.py"]
        cli_us = us.get("lce encode (CLI)")
        for name, value in us.items():
            rows.append(
                {
                    "group": group,
                    "format": fmt,
                    "who": name,
                    "us_per_event": round(value, 3),
                    "peer_over_this": round(peer_us / value, 2) if value else None,
                    "this_over_cli": round(value / cli_us, 2) if cli_us else None,
                    "same_bytes_runs": f"{same}/{len(runs)}" if name == "lce.Encoder" else None,
                }
            )
    return rows


def validators(group, runs, seconds):
    dicts = [[json.loads(line) for line in lines] for _, lines in runs]
    raw = [[line.encode("utf-8") for line in lines] for _, lines in runs]
    events = sum(len(d) for d in dicts)

    def push_dict():
        for run in dicts:
            push = lce.RunValidator("adapter").push
            for ev in run:
                push(ev)

    def push_bytes():
        for run in raw:
            push = lce.RunValidator("adapter").push
            for ev in run:
                push(ev)

    def push_json():
        for run in raw:
            push = lce.RunValidator("adapter").push_json
            for ev in run:
                push(ev)

    def dumps():
        for run in dicts:
            for ev in run:
                json.dumps(ev)

    contenders = {"json.dumps(dict)": dumps, "RunValidator.push(dict)": push_dict, "RunValidator.push(bytes)": push_bytes}
    if hasattr(lce.RunValidator, "push_json"):
        contenders["RunValidator.push_json(bytes)"] = push_json
    us = rounds(contenders, events, seconds)
    ref = us["json.dumps(dict)"]
    return [
        {"group": group, "format": "-", "who": name, "us_per_event": round(value, 3), "this_over_dumps": round(value / ref, 2)}
        for name, value in us.items()
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True, help="the folder with short/, scenarios/, long/ and floor.jsonl")
    p.add_argument("--lce", help="the release lce binary (the CLI rows are left out without it)")
    p.add_argument("--seconds", type=float, default=2.0, help="time per contender and group")
    p.add_argument("--groups", default="short,scenarios,long")
    a = p.parse_args()
    corpus = pathlib.Path(a.corpus)
    da = peer()
    print(f"python {platform.python_version()}, lce {lce.__version__}, {platform.machine()}, {os.cpu_count()} cores")
    rows = []
    for group in a.groups.split(","):
        runs = load(corpus / group)
        events = sum(len(lines) for _, lines in runs)
        print(f"{group}: {len(runs)} runs, {events} events (lengths {min(len(l) for _, l in runs)}..{max(len(l) for _, l in runs)})", flush=True)
        rows += encoders(group, runs, a.lce, corpus / "floor.jsonl", a.seconds, da)
        rows += validators(group, runs, a.seconds)
    print()
    print("| group | format | contender | µs/event | peer ÷ this | this ÷ CLI | this ÷ json.dumps | bytes = peer |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        cells = [
            r["group"],
            r["format"],
            r["who"],
            f"{r['us_per_event']:.3f}",
            f"{r['peer_over_this']:.2f}" if r.get("peer_over_this") else "",
            f"{r['this_over_cli']:.2f}" if r.get("this_over_cli") else "",
            f"{r['this_over_dumps']:.2f}" if r.get("this_over_dumps") else "",
            r.get("same_bytes_runs") or "",
        ]
        print("| " + " | ".join(cells) + " |")
    print()
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
