"""The API's shape, its errors, laziness and robustness."""

import json
import threading

import pytest

import lce
from conftest import FIXTURES, fixture

RUN = fixture("scenarios", "tool-call-arguments-at-start").read_text(encoding="utf-8")
LINES = RUN.splitlines()


def test_exception_hierarchy():
    assert issubclass(lce.LceError, ValueError)
    for e in (lce.Violation, lce.Rejected, lce.ParseError, lce.LimitsError):
        assert issubclass(e, lce.LceError)


def test_version():
    assert lce.__version__.count(".") == 2


def test_event_forms_are_equivalent():
    for fmt in ("custom", "agui", "agui-v1"):
        by_str = lce.encode(LINES, to=fmt)
        assert lce.encode([l.encode() for l in LINES], to=fmt) == by_str
        assert lce.encode(RUN, to=fmt) == by_str
        assert lce.encode(RUN.encode(), to=fmt) == by_str
        assert lce.encode([l + "\n" for l in LINES], to=fmt) == by_str
        assert lce.encode(iter([RUN]), to=fmt) == by_str
        # A dict is written with json.dumps: the same run here.
        assert lce.encode([json.loads(l) for l in LINES], to=fmt) == by_str


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError):
        lce.encode([1, 2], to="custom")
    with pytest.raises(TypeError):
        lce.encode({"a": 1}, to="custom")
    with pytest.raises(TypeError):
        lce.encode(5, to="custom")
    with pytest.raises(TypeError):
        lce.RunValidator().push(3.5)
    with pytest.raises(TypeError):
        lce.sanitize(None)
    with pytest.raises(ValueError):
        lce.encode(LINES, to="xml")
    with pytest.raises(ValueError):
        lce.RunValidator(mode="strict")


def test_lines_are_read_lazily_and_errors_come_back():
    taken = []

    def gen():
        for i, line in enumerate(LINES):
            taken.append(i)
            yield line

    assert lce.encode(gen(), to="custom") == lce.encode(LINES, to="custom")
    assert taken == list(range(len(LINES)))

    def broken():
        yield LINES[0]
        raise RuntimeError("adapter died")

    with pytest.raises(RuntimeError, match="adapter died"):
        lce.encode(broken(), to="custom")
    with pytest.raises(RuntimeError, match="adapter died"):
        lce.check(broken())


def test_a_long_generator_is_consumed_in_batches():
    # 5000 lines: more than one batch; the coordinator ends the run at the
    # first broken rule and drains the rest.
    seen = []

    def many():
        for i in range(5000):
            seen.append(i)
            yield LINES[0] if i == 0 else LINES[1]

    result = lce.encode_run(many(), to="custom")
    assert result.intervened and result.cause in ("1", "5")
    assert len(seen) >= 1


def test_empty_input():
    for lines in ([], "", b""):
        result = lce.encode_run(lines, to="custom")
        assert result.intervened and result.cause == "12"
        problems = lce.check(lines)
        assert [(p.rule, p.message) for p in problems] == [(12, "input ended without any event")]


def test_violation_attributes():
    v = lce.RunValidator(mode="full")
    v.push(LINES[0])
    bad = json.loads(LINES[1])
    bad["sequence"] = 0
    with pytest.raises(lce.Violation) as info:
        v.push(bad)
    e = info.value
    assert (e.rule, e.rule_id, e.rule_name, e.sequence, e.event_type) == (1, "1", "sequence", 0, bad["type"])
    # Stuck on it until cleared.
    with pytest.raises(lce.Violation):
        v.push(LINES[1])
    v.clear_failure()
    v.push(LINES[1])


def test_adapter_mode_skips_rule_13():
    lines = [json.loads(l) for l in LINES]
    lines[-1]["data"].pop("thread_state", None)
    with pytest.raises(lce.Violation) as info:
        v = lce.RunValidator(mode="full")
        for l in lines:
            v.push(l)
    assert info.value.rule == 13
    v = lce.RunValidator(mode="adapter")
    for l in lines:
        v.push(l)
    v.finish()


def test_check_lists_every_problem():
    data = (FIXTURES / "invalid" / "r05-text-delta-before-start.jsonl").read_text()
    problems = lce.check(data)
    assert problems[0].rule == 5 and problems[0].kind == "violation"
    assert str(problems[0]).startswith(f"{problems[0].line}: seq ")
    assert "Problem(" in repr(problems[0])


def test_parse_error_attributes():
    with pytest.raises(lce.ParseError) as info:
        lce.sanitize('{"version":1,')
    assert info.value.kind == "syntax"
    problems = lce.check(LINES[:2] + ["{oops"] + LINES[2:])
    assert (problems[0].line, problems[0].rule, problems[0].sequence) == (3, "parse", None)


def test_limits(tmp_path):
    assert lce.Limits() == lce.Limits.load(env={})
    assert lce.Limits(tool_result_bytes=10).tool_result_bytes == 10
    assert lce.Limits(metadata_allowlist=["a", "b"]).metadata_allowlist == ["a", "b"]
    toml = tmp_path / "l.toml"
    toml.write_text("tool_result_bytes = 1000\n")
    assert lce.Limits.load(toml, env={}).tool_result_bytes == 1000
    js = tmp_path / "l.json"
    js.write_text('{"display_bytes": 5000}')
    limits = lce.Limits.load(str(js), env={"LCE_LIMIT_TOOL_RESULT_BYTES": "77"})
    assert (limits.display_bytes, limits.tool_result_bytes) == (5000, 77)
    assert lce.Limits.load(env={"LCE_LIMIT_NAME_BYTES": "64"}).to_dict()["name_bytes"] == 64
    with pytest.raises(lce.LimitsError):
        lce.Limits(no_such_limit=1)
    with pytest.raises(lce.LimitsError):
        lce.Limits.load(tmp_path / "missing.toml", env={})
    with pytest.raises(lce.LimitsError):
        lce.Limits.load(env={"LCE_LIMIT_TOOL_RESULT_BYTES": "lots"})
    with pytest.raises(TypeError):
        lce.Limits(tool_result_bytes="10")


def test_limits_from_the_process_environment(monkeypatch):
    monkeypatch.setenv("LCE_LIMIT_TOOL_RESULT_BYTES", "1234")
    assert lce.Limits.load().tool_result_bytes == 1234


def test_limits_apply():
    result = fixture("scenarios", "long-tool-result-emoji-at-cut").read_text()
    small = lce.Limits(tool_result_bytes=100)
    assert lce.encode(result, to="custom", limits=small) != lce.encode(result, to="custom")


def test_sanitize_returns_the_form_given():
    line = LINES[1]
    assert lce.sanitize(line) == line
    assert lce.sanitize(line.encode()) == line.encode()
    assert lce.sanitize(line + "\n") == line
    assert lce.sanitize(json.loads(line)) == json.loads(line)


def test_encoder_after_finish():
    enc = lce.Encoder(to="agui-v1")
    assert enc.format == "agui-v1"
    enc.encode(LINES[0])
    enc.finish()
    with pytest.raises(lce.LceError):
        enc.encode(LINES[1])


def test_ephemeral_and_agent_name_like_the_cli():
    from conftest import cli_encode

    data = fixture("scenarios", "form-input-interrupt").read_bytes()
    for fmt in ("custom", "agui", "agui-v1"):
        ours = lce.encode(data, to=fmt, agent_name="Bob", ephemeral=True)
        theirs, status, _ = cli_encode(data, fmt, "--agent-name", "Bob", "--ephemeral")
        assert ours == theirs


def test_gil_is_released_for_batches():
    # Another Python thread runs while a long run is encoded.
    big = "\n".join(LINES[:-1] + ["{bad"] * 20000)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    for _ in range(5):
        lce.check(big)
    stop.set()
    t.join()
    assert ticks


@pytest.mark.parametrize("junk", [
    b"", b"\n", b"\xff\xfe", b"{}", b"[]", b"null", b'{"version":1}', b"\x00" * 100,
    "\ud800".encode("utf-8", "surrogatepass"), b"{" * 10000, b'"' + b"a" * 100000,
])
def test_junk_never_crashes(junk):
    for fmt in ("custom", "agui", "agui-v1"):
        assert lce.encode_run([junk], to=fmt).intervened
    lce.check([junk])
    with pytest.raises((lce.LceError, TypeError)):
        lce.sanitize(junk)
    with pytest.raises(lce.LceError):
        lce.RunValidator().push(junk)
    with pytest.raises(lce.LceError):
        lce.Encoder(to="custom").encode(junk)


def test_lone_surrogate_str_is_invalid_utf8():
    with pytest.raises(lce.ParseError) as info:
        lce.sanitize('{"a":"\ud800"}')
    assert info.value.kind == "invalid_utf8"


def test_line_too_long():
    problems = lce.check([b"x" * (4 * 1024 * 1024 + 1)])
    assert problems[0].kind == "line_too_long"


@pytest.mark.parametrize("kw", [
    {"tool_result_bytes": -1}, {"tool_result_bytes": 10**30}, {"events_per_run": 0},
    {"metadata_allowlist": ["a,b"]},
])
def test_bad_limits_raise_limits_error(kw):
    with pytest.raises(lce.LimitsError):
        lce.Limits(**kw)


@pytest.mark.parametrize("window", [0, 1, 2**62])
def test_any_window(window):
    data = fixture("scenarios", "nested-subagents-two-levels").read_text()
    assert lce.check(data, window=window) == []
    v = lce.RunValidator(mode="full", window=window)
    for line in data.splitlines():
        v.push(line)
    v.finish()
