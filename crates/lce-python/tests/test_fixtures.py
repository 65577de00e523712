"""The bundled fixtures through the Python API: goldens byte for byte,
every invalid run's rule, every malformed line, every hostile event."""

import json

import pytest

import lce
from conftest import FORMATS, cli_encode, expect, fixture, same_output, stems


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", stems("scenarios"))
def test_scenario_equals_golden(name, fmt):
    data = fixture("scenarios", name).read_bytes()
    golden = fixture(f"golden/{fmt}", name, "sse").read_bytes()
    assert lce.encode(data, to=fmt) == golden
    # The same lines in other forms: a file object, a list of str lines.
    with open(fixture("scenarios", name), "rb") as f:
        assert lce.encode(f, to=fmt) == golden
    lines = data.decode("utf-8").splitlines()
    result = lce.encode_run(lines, to=fmt)
    assert result.data == golden
    assert not result.intervened and result.reason is None


@pytest.mark.parametrize("name", stems("scenarios"))
def test_scenario_is_valid(name):
    data = fixture("scenarios", name).read_bytes()
    assert lce.check(data) == []
    v = lce.RunValidator(mode="full")
    for line in data.splitlines():
        v.push(line)
    v.finish()
    assert v.is_terminated


@pytest.mark.parametrize("name", stems("scenarios"))
def test_incremental_encoder_equals_the_chain_on_valid_runs(name):
    # A valid run needs no coordinator: sanitized, then encoded event by
    # event, it gives the chain's bytes (the sanitizer replaces control
    # characters, json-escapes-in-text has one).
    data = fixture("scenarios", name).read_bytes()
    for fmt in FORMATS:
        enc = lce.Encoder(to=fmt)
        out = b"".join(enc.encode(lce.sanitize(line)) for line in data.splitlines())
        out += enc.finish()
        assert out == fixture(f"golden/{fmt}", name, "sse").read_bytes()


def rule_of(want):
    """The Python `.rule` of an .expect's rule id."""
    return "run_identity" if want["rule"] == "X" else int(want["rule"])


@pytest.mark.parametrize("name", stems("invalid"))
def test_invalid_raises_the_rule(name):
    want = expect("invalid", name)
    data = fixture("invalid", name).read_bytes()
    v = lce.RunValidator(mode="full")
    with pytest.raises(lce.Violation) as info:
        for line in data.splitlines():
            v.push(line)
        v.finish()
    e = info.value
    assert isinstance(e, lce.LceError) and isinstance(e, ValueError)
    assert (e.rule_id, e.decision, e.sequence) == (want["rule"], want.get("decision"), want["sequence"])
    assert e.rule == rule_of(want)
    assert e.event_type is not None
    assert str(e).startswith(f"seq {want['sequence']}: rule {want['rule']} (")
    # lce.check lists it first.
    problems = lce.check(data)
    assert problems and problems[0].rule == rule_of(want)
    assert problems[0].sequence == want["sequence"]
    assert problems[0].decision == want.get("decision")


@pytest.mark.parametrize("name", stems("invalid"))
def test_invalid_is_repaired_like_the_cli(name):
    data = fixture("invalid", name).read_bytes()
    for fmt in FORMATS:
        result = lce.encode_run(data, to=fmt)
        out, status, stderr = cli_encode(data, fmt)
        assert same_output(data, fmt, result.data, out)
        assert result.intervened == (status == 1)
        assert status in (0, 1)
        if result.intervened:
            assert stderr.strip() == result.reason


@pytest.mark.parametrize("name", stems("malformed"))
def test_malformed_line(name):
    want = expect("malformed", name)
    data = fixture("malformed", name).read_bytes()
    problems = lce.check(data)
    parse = [p for p in problems if p.kind != "violation"]
    assert [(p.line, p.kind, p.rule) for p in parse][:1] == [(want["line"], want["kind"], "parse")]
    # One line at a time: the bad line raises lce.ParseError.
    lines = data.split(b"\n")
    with pytest.raises(lce.ParseError) as info:
        lce.RunValidator(mode="full").push(lines[want["line"] - 1])
    assert info.value.kind == want["kind"]
    assert info.value.path == want.get("path", info.value.path)
    result = lce.encode_run(data, to="custom")
    assert result.intervened and result.cause == "parse" and result.line == want["line"]
    out, status, stderr = cli_encode(data, "custom")
    assert (result.data, result.reason) == (out, stderr.strip())


@pytest.mark.parametrize("name", stems("hostile"))
def test_hostile(name):
    want = expect("hostile", name)
    text = fixture("hostile", name).read_text(encoding="utf-8")
    line = text.rstrip("\n")
    if want["outcome"] == "rejected":
        with pytest.raises(lce.Rejected) as info:
            lce.sanitize(line)
        e = info.value
        assert (e.kind, e.field, e.index, e.size, e.limit) == (
            want["kind"], want["field"], want["index"], want["size"], want["limit"],
        )
        assert "PAYLOADMARK" not in str(e)
        # The whole chain stops it too.
        result = lce.encode_run(text, to="custom")
        assert result.intervened and result.cause == "sanitize"
    else:
        expected = line if want["outcome"] == "unchanged" else want["expected_line"]
        assert lce.sanitize(line) == expected
        assert lce.sanitize(line.encode()) == expected.encode()
        assert lce.sanitize(json.loads(line)) == json.loads(expected)
        # Idempotent.
        assert lce.sanitize(expected) == expected
    for absent in want.get("absent", []):
        try:
            assert absent not in lce.sanitize(line)
        except lce.Rejected as e:
            assert absent not in str(e)
    # A hostile fixture is one event, without run.started: the coordinator
    # writes one, timed by the clock (see same_output).
    for fmt in FORMATS:
        result = lce.encode_run(text, to=fmt)
        out, status, stderr = cli_encode(text.encode(), fmt)
        assert (result.intervened, result.reason) == (status == 1, stderr.strip() or None)
        assert same_output(text, fmt, result.data, out)
