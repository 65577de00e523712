"""The fast paths of issue 33 change no result.

- A `dict` event is written to JSON in Rust when it is made of builtin types
  (the bytes `json.dumps(d, ensure_ascii=False, separators=(",", ":"))`
  gives), and by `json.dumps` otherwise: every frame and every error must be
  what the `str` line written by `json.dumps` gives.
- `RunValidator.push_json(bytes)` is `push` without the conversion; a bad
  line raises `lce.ParseError` naming the call's position.
- The lines of one batch share one buffer: how items are cut into lines and
  numbered is unchanged.
"""

import collections
import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lce
from conftest import FORMATS, fixture

RUN = fixture("scenarios", "tool-call-arguments-at-start").read_text(encoding="utf-8")
LINES = RUN.splitlines()
FIRST = json.loads(LINES[0])


def dumps(d):
    return json.dumps(d, ensure_ascii=False, separators=(",", ":"))


def outcome(fn, *args):
    """What a call gives: its value, or its exception's type, message and
    the attributes lce sets."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        attrs = {k: getattr(e, k, None) for k in ("kind", "line", "path", "offset", "rule", "sequence")}
        return ("err", type(e).__name__, str(e), attrs)


def tool_started(arguments, **extra):
    event = {
        "version": 1,
        "type": "tool.started",
        "run_id": FIRST["run_id"],
        "conversation_id": FIRST["conversation_id"],
        "sequence": 1,
        "timestamp": "2026-08-17T09:00:00.001Z",
        "namespace": [],
        "data": {"tool_call_id": "call-1", "tool_name": "search", "arguments": arguments},
    }
    event.update(extra)
    return event


def frames(fmt, events):
    enc = lce.Encoder(fmt)
    return b"".join([enc.encode(e) for e in events] + [enc.finish()])


def same_as_dumps(event):
    """The dict and its json.dumps line give the same frames or the same
    error, in every format, to the validator and to sanitize."""
    line = outcome(dumps, event)
    if line[0] == "err":
        # json.dumps refuses it: so must lce, with json.dumps's exception.
        for fmt in FORMATS:
            got = outcome(frames, fmt, [FIRST, event])
            assert got[0] == "err" and got[1:3] == line[1:3]
        return
    text = line[1]
    for fmt in FORMATS:
        assert outcome(frames, fmt, [FIRST, event]) == outcome(frames, fmt, [FIRST, text])
    v1, v2 = lce.RunValidator(), lce.RunValidator()
    v1.push(FIRST)
    v2.push(FIRST)
    assert outcome(v1.push, event) == outcome(v2.push, text)
    assert outcome(lce.sanitize, event)[0] == outcome(lce.sanitize, text)[0]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_dict_arguments_encode_as_their_json_dumps_line(arguments):
    same_as_dumps(tool_started({"value": arguments}))


@settings(max_examples=100, deadline=None)
@given(st.text(), st.text())
def test_dict_strings_encode_as_their_json_dumps_line(name, text):
    same_as_dumps(tool_started({"q": text}, data={"tool_call_id": name or "c", "tool_name": text or "t", "arguments": {}}))


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


@pytest.mark.parametrize("arguments", [
    {"s": "quote \" backslash \\ newline \n tab \t nul \x00 bell \x07 del \x7f é 日本 🎉"},
    {"f": [0.1, -0.0, 1e16, 1e-7, 1.5e300, 123456789.0, 2.5]},
    {"i": [0, -1, 2**63 - 1, -(2**63), 2**63, 10**30]},
    {"nan": float("nan")},
    {"inf": float("-inf")},
    {"t": (1, "two", None, True, False)},
    {"ordered": collections.OrderedDict(a=1)},
    {"default": collections.defaultdict(int, a=1)},
    {"enum": Color.RED},
    {"sub": Text("x")},
    {1: "int key"},
    {None: "none key", True: "bool key", 1.5: "float key"},
    {"lone": "\ud800"},
    {"deep": nested(60)},
    {"deeper": nested(70)},
    {"object": object()},
    {"bytes": b"x"},
    {"set": {1}},
])
def test_unusual_dicts_behave_as_with_json_dumps(arguments):
    same_as_dumps(tool_started(arguments))


def test_circular_dict_raises_what_json_dumps_raises():
    loop = {}
    loop["self"] = loop
    same_as_dumps(tool_started(loop))
    with pytest.raises(ValueError, match="Circular"):
        lce.RunValidator().push(tool_started(loop))


def test_dict_subclass_event_and_key_order():
    event = collections.OrderedDict(reversed(list(json.loads(LINES[1]).items())))
    for fmt in FORMATS:
        assert frames(fmt, [FIRST, event]) == frames(fmt, [FIRST, dumps(event)])


def test_push_json_is_push():
    for mode in ("adapter", "full"):
        a, b = lce.RunValidator(mode), lce.RunValidator(mode)
        for i, line in enumerate(LINES):
            raw = line.encode()
            # A final newline is allowed; bytearray works too.
            b.push_json(raw + b"\n" if i % 2 else bytearray(raw))
            a.push(line)
            assert a.events == b.events
        a.finish()
        b.finish()
        assert a.is_terminated and b.is_terminated


def test_push_json_violation_is_pushs():
    a, b = lce.RunValidator(), lce.RunValidator()
    a.push(LINES[0])
    b.push_json(LINES[0].encode())
    with pytest.raises(lce.Violation) as ia:
        a.push(LINES[0])
    with pytest.raises(lce.Violation) as ib:
        b.push_json(LINES[0].encode())
    assert (str(ia.value), ia.value.rule, ia.value.sequence) == (str(ib.value), ib.value.rule, ib.value.sequence)


def test_push_json_bad_bytes_name_the_call():
    v = lce.RunValidator()
    v.push_json(LINES[0].encode())
    with pytest.raises(lce.ParseError) as info:
        v.push_json(b'{"version":1,')
    assert info.value.kind == "syntax"
    assert info.value.line == 2
    assert str(info.value).startswith("line 2:")
    with pytest.raises(lce.ParseError) as info:
        v.push_json(b"\xff")
    assert (info.value.kind, info.value.line) == ("invalid_utf8", 3)
    # The message names the place, never the bytes.
    secret = b'{"version":1,"type":"text.delta","data":"sk-live-SECRET"'
    with pytest.raises(lce.ParseError) as info:
        v.push_json(secret)
    assert "SECRET" not in str(info.value)


@pytest.mark.parametrize("bad", ["{}", {"a": 1}, None, 3, memoryview(b"{}")])
def test_push_json_takes_bytes_only(bad):
    with pytest.raises(TypeError, match="push_json"):
        lce.RunValidator().push_json(bad)


@pytest.mark.parametrize("items", [
    ["a\nb", "", "c\n"],
    ["\n", "\n\n", "x"],
    [b"a\r\nb\r\n", b"", bytearray(b"c")],
    ["", ""],
    ["\n"],
])
def test_items_are_cut_into_the_same_numbered_lines(items):
    as_text = "".join(
        (i.decode() if isinstance(i, (bytes, bytearray)) else i) + ("" if (i[-1:] in ("\n", b"\n")) else "\n")
        for i in items
    )
    problems = [(p.line, p.kind) for p in lce.check(items)]
    assert problems == [(p.line, p.kind) for p in lce.check(as_text)]
    assert problems == [(p.line, p.kind) for p in lce.check(as_text.splitlines(keepends=True))]


@pytest.mark.parametrize("text", ["", "\n", "\n\n", "x", "x\n", b"", b"\n"])
def test_whole_text_lines(text):
    lines = (text.decode() if isinstance(text, bytes) else text).split("\n")
    if lines[-1] == "":
        lines.pop()
    assert len(lce.check(text)) >= len(lines)
    assert [p.line for p in lce.check(text) if p.kind != "violation"] == list(range(1, len(lines) + 1))


def test_many_batches_of_dicts_encode_as_lines():
    # More items than a batch holds, as dicts and as lines.
    run = fixture("scenarios", "nested-subagents-two-levels").read_text().splitlines()
    dicts = [json.loads(l) for l in run]
    for fmt in FORMATS:
        assert lce.encode(iter(dicts * 1), to=fmt) == lce.encode(run, to=fmt)
    long = [dumps(d) for d in dicts] * 700
    assert [str(p) for p in lce.check(long)] == [str(p) for p in lce.check([json.loads(l) for l in long])]
