"""Property: on random runs, the Python path and the CLI agree.

Runs are the bundled scenarios, mutated: lines dropped, duplicated, swapped,
cut short or replaced by junk, the run cut early. `lce.encode_run` must give
`lce encode`'s bytes, its exit status (intervened or not) and its message.
"""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lce
from conftest import FORMATS, cli_encode, fixture, same_output, stems

SCENARIOS = {name: fixture("scenarios", name).read_bytes().splitlines() for name in stems("scenarios")}

EXAMPLES = int(os.environ.get("LCE_HYPOTHESIS_EXAMPLES", "60"))

mutation = st.one_of(
    st.tuples(st.just("drop"), st.integers(0, 200)),
    st.tuples(st.just("dup"), st.integers(0, 200)),
    st.tuples(st.just("swap"), st.integers(0, 200), st.integers(0, 200)),
    st.tuples(st.just("cut"), st.integers(0, 200), st.integers(0, 400)),
    st.tuples(st.just("junk"), st.integers(0, 200), st.binary(max_size=40)),
    st.tuples(st.just("end"), st.integers(0, 200)),
)


def mutate(lines, mutations):
    lines = list(lines)
    for m in mutations:
        if not lines:
            break
        i = m[1] % len(lines)
        if m[0] == "drop":
            del lines[i]
        elif m[0] == "dup":
            lines.insert(i, lines[i])
        elif m[0] == "swap":
            j = m[2] % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif m[0] == "cut":
            lines[i] = lines[i][: m[2]]
        elif m[0] == "junk":
            lines[i] = m[2].replace(b"\n", b"")
        elif m[0] == "end":
            lines = lines[: i + 1]
    return lines


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(SCENARIOS)),
    mutations=st.lists(mutation, max_size=4),
    fmt=st.sampled_from(FORMATS),
    ephemeral=st.booleans(),
)
def test_python_and_cli_agree(name, mutations, fmt, ephemeral):
    lines = mutate(SCENARIOS[name], mutations)
    data = b"".join(line + b"\n" for line in lines)
    extra = ["--ephemeral"] if ephemeral else []
    result = lce.encode_run(lines, to=fmt, ephemeral=ephemeral)
    out, status, stderr = cli_encode(data, fmt, *extra)
    assert status in (0, 1), stderr
    assert same_output(data, fmt, result.data, out)
    assert result.intervened == (status == 1)
    assert (result.reason or "") == stderr.strip()
    # check() agrees with the chain on whether the run is valid (in adapter
    # mode, as the chain validates; ephemeral as asked).
    problems = lce.check(lines, mode="adapter", ephemeral=ephemeral)
    if not result.intervened:
        assert problems == []
