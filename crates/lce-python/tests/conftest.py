"""Shared paths and helpers of the pytest suite of the `lce` package."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "fixtures"
FORMATS = ["custom", "agui", "agui-v1"]


def stems(kind):
    """The fixture names of fixtures/KIND/*.jsonl, sorted."""
    return sorted(p.stem for p in (FIXTURES / kind).glob("*.jsonl"))


def fixture(kind, name, ext="jsonl"):
    return FIXTURES / kind / f"{name}.{ext}"


def expect(kind, name):
    return json.loads(fixture(kind, name, "expect").read_text(encoding="utf-8"))


def lce_bin():
    """The `lce` binary the CLI comparisons run (ci.sh builds it)."""
    path = os.environ.get("LCE_BIN") or str(ROOT / "target" / "debug" / "lce")
    if not pathlib.Path(path).is_file():
        path = shutil.which("lce") or path
    return path


def cli_encode(data, to, *extra):
    """`lce encode --to TO` over a regular file holding `data`: (stdout bytes,
    exit status, stderr text)."""
    binary = lce_bin()
    if not pathlib.Path(binary).is_file():
        pytest.skip(f"no lce binary at {binary} (cargo build -p lce-cli)")
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        f.write(data)
        f.flush()
        p = subprocess.run(
            [binary, "encode", "--to", to, *extra, f.name],
            capture_output=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("LCE_LIMIT_")},
        )
        stderr = p.stderr.decode("utf-8", "replace")
        return p.stdout, p.returncode, stderr.replace(f.name + ":", "")


def same_output(data, fmt, ours, theirs):
    """Whether two encodings of `data` agree: byte for byte, except where the
    coordinator had to write `run.started` itself before anything was
    forwarded: it then reads the clock (docs/coordinator.md), and only the
    `custom` wire, which has no timestamps, compares exactly."""
    if ours == theirs:
        return True
    if fmt == "custom":
        return False
    import re

    mask = lambda b: re.sub(rb'"timestamp": ?[0-9.]+', b'"timestamp": T', b)
    return b"RUN_STARTED" in ours and mask(ours) == mask(theirs)
