"""Every ```python block of README.md, docs/*.md and crates/*/README.md runs
as written: each in a fresh namespace, from the repository root (so paths
such as fixtures/scenarios/... resolve), with the installed package `lce`.
A block that cannot run here says why on the line before its fence:
`<!-- not run: REASON -->` (the shell blocks are checked by
crates/lce-cli/tests/doc_snippets.rs under the same marker)."""

import contextlib
import io
import os
import re

import pytest

from conftest import ROOT

MARKER = re.compile(r"^\s*<!-- not run: (\S.*?) -->\s*$")


def markdown_files():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted(p for p in (ROOT / "crates").glob("*/README.md"))
    return files


def python_blocks():
    """(file:line, code, reason it is not run or None) of each block."""
    out = []
    for path in markdown_files():
        lines = path.read_text(encoding="utf-8").split("\n")
        i = 0
        while i < len(lines):
            fence = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
            if not fence:
                i += 1
                continue
            start, indent, lang = i, len(fence.group(1)), fence.group(2)
            i += 1
            body = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i][indent:])
                i += 1
            i += 1
            if lang == "python":
                skip = MARKER.match(lines[start - 1]) if start else None
                name = f"{path.relative_to(ROOT)}:{start + 1}"
                out.append((name, "\n".join(body) + "\n", skip and skip.group(1)))
    return out


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("name, code, not_run", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_python_block_runs(name, code, not_run, monkeypatch):
    if not_run:
        pytest.skip(not_run)
    monkeypatch.chdir(ROOT)
    for key in [k for k in os.environ if k.startswith("LCE_LIMIT_")]:
        monkeypatch.delenv(key)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, name, "exec"), {"__name__": "__doc_snippet__"})
