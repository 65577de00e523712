#!/usr/bin/env python3
"""Regenerate pyjson_cases.jsonl: reference outputs of CPython's json module.

Run from anywhere:  python3 gen_pyjson_cases.py > pyjson_cases.jsonl
(the tests read the committed table; they never run Python).

One JSON object per line, written with ensure_ascii=True so the file is ASCII:
  {"k": "str",    "in": <string>, "ascii": json.dumps(s), "utf8": json.dumps(s, ensure_ascii=False)}
  {"k": "float",  "bits": "<16 hex digits of the IEEE-754 bits>", "repr": json.dumps(f)}
  {"k": "opaque", "in": <JSON text>, "ascii": json.dumps(json.loads(t)), "utf8": ...ensure_ascii=False}
"""
import json
import math
import random
import struct
import sys

rng = random.Random(20240611)

CLASSES = [
    lambda: chr(rng.randint(0x20, 0x7E)),            # printable ASCII
    lambda: chr(rng.randint(0x00, 0x1F)),            # C0 controls
    lambda: "\x7f",                                  # DEL
    lambda: rng.choice('"\\/'),                      # quote, backslash, slash
    lambda: chr(rng.randint(0x80, 0xFF)),            # Latin-1 (incl. C1)
    lambda: chr(rng.choice([0x2028, 0x2029, 0xFEFF, 0xFFFD, 0xFFFF, 0xE000, 0x800, 0x7FF])),
    lambda: chr(rng.choice([rng.randint(0x100, 0xD7FF), rng.randint(0xE000, 0xFFFF)])),
    lambda: chr(rng.randint(0x10000, 0x10FFFF)),     # astral
    lambda: rng.choice(["😀", "✓", "é", "日本語", "\U0001F468\u200D\U0001F469"]),
]


def rand_string(maxlen=24):
    n = rng.randint(0, maxlen)
    return "".join(rng.choice(CLASSES)() for _ in range(n))


def bits_of(f):
    return struct.unpack("<Q", struct.pack("<d", f))[0]


def float_cases():
    fixed = [
        0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 100000.0, 1786924800.0,
        1786924800.123456, 123456789.5, 0.0001, 0.00001, 1e-5, 1e-7, 1e16, 1e15,
        9999999999999998.0, 1e22, 1e23, 1.7976931348623157e308, 5e-324,
        2.2250738585072014e-308, 1.5e300, 1.2345e-05, 3.141592653589793,
        0.30000000000000004, 123.456, 1e-4, 9.999999999999999e-05,
        1234567890123456.0, 12345678901234567.0, 2.0 ** 53, 2.0 ** 63,
    ]
    for e in range(-325, 309):
        try:
            fixed.append(float("1e%d" % e))
        except OverflowError:
            pass
    for k in range(-1074, 1024, 7):
        fixed.append(math.ldexp(1.0, k))
    out = list(fixed)
    while len(out) < len(fixed) + 1500:
        f = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(f):
            out.append(f)
    for _ in range(500):
        # "human" decimals with few digits at every magnitude
        digits = rng.randint(1, 17)
        m = rng.randint(1, 10 ** digits - 1)
        f = float("%de%d" % (m, rng.randint(-30, 30)))
        out.append(-f if rng.random() < 0.3 else f)
    return out


WS = ["", "", "", " ", "\n", "\t", "\r\n", "  "]


def ws():
    return rng.choice(WS)


def escape_lexeme(s):
    """A JSON string lexeme for s using a random mix of escape spellings."""
    parts = ['"']
    for ch in s:
        c = ord(ch)
        r = rng.random()
        if ch == '"':
            parts.append(rng.choice(['\\"', "\\u0022"]))
        elif ch == "\\":
            parts.append(rng.choice(["\\\\", "\\u005C", "\\u005c"]))
        elif ch == "/":
            parts.append(rng.choice(["/", "\\/", "\\u002F"]))
        elif c < 0x20:
            short = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c)
            parts.append(short if short and r < 0.5 else "\\u%04X" % c if r < 0.75 else "\\u%04x" % c)
        elif c > 0xFFFF:
            if r < 0.5:
                parts.append(ch)
            else:
                c2 = c - 0x10000
                hi, lo = 0xD800 + (c2 >> 10), 0xDC00 + (c2 & 0x3FF)
                fmt = "\\u%04X\\u%04x" if r < 0.75 else "\\u%04x\\u%04X"
                parts.append(fmt % (hi, lo))
        elif r < 0.25:
            parts.append("\\u%04x" % c if r < 0.12 else "\\u%04X" % c)
        else:
            parts.append(ch)
    parts.append('"')
    return "".join(parts)


def number_lexeme():
    kind = rng.randint(0, 9)
    if kind == 0:
        return rng.choice(["0", "-0", "1", "-1", "100000000000000000000",
                           "-123456789012345678901234567890", "18446744073709551616",
                           "9223372036854775808", "-9223372036854775809"])
    if kind == 1:
        return str(rng.randint(-(10 ** 30), 10 ** 30))
    if kind == 2:
        return rng.choice(["1E2", "1e2", "1.0", "-0.0", "0.0", "1e16", "1E+16",
                           "1e-7", "1.5e300", "1e-400", "2.5E-3", "0.1", "-1.25e-5",
                           "1.0000000000000000000001", "123456789.5", "1e15",
                           "9999999999999998", "9999999999999998.0", "1786924800.0"])
    if kind <= 5:
        return str(rng.randint(-(10 ** 6), 10 ** 6))
    # random float lexeme
    sign = "-" if rng.random() < 0.3 else ""
    ip = "0" if rng.random() < 0.3 else str(rng.randint(1, 10 ** rng.randint(1, 12)))
    frac = "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20))) if rng.random() < 0.7 else ""
    exp = ""
    if rng.random() < 0.5 or not frac:
        exp = rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 40))
    return sign + ip + frac + exp


def rand_json(depth=0):
    r = rng.random()
    if depth < 4 and r < 0.2:
        keys = []
        while len(keys) < rng.randint(0, 5):
            k = rand_string(8)
            if k not in keys:
                keys.append(k)
        if not keys:
            return "{" + ws() + "}"
        items = [ws() + escape_lexeme(k) + ws() + ":" + ws() + rand_json(depth + 1) + ws() for k in keys]
        return "{" + ",".join(items) + "}"
    if depth < 4 and r < 0.35:
        n = rng.randint(0, 5)
        if n == 0:
            return "[" + ws() + "]"
        return "[" + ",".join(ws() + rand_json(depth + 1) + ws() for _ in range(n)) + "]"
    if r < 0.6:
        return escape_lexeme(rand_string(12))
    if r < 0.9:
        return number_lexeme()
    return rng.choice(["true", "false", "null"])


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")


def main():
    strings = [
        "", "Café ✓ 😀 \x7f \x01 \t/", "Café ✓", "\u2028\u2029", "\x00\x1f\x7f\x80\x9f",
        '"\\/\b\f\n\r\t', "\U0010FFFF\U00010000\uFFFF\uE000",
    ]
    strings += [rand_string() for _ in range(600)]
    strings += [rand_string(200) for _ in range(30)]
    for s in strings:
        emit({"k": "str", "in": s, "ascii": json.dumps(s),
              "utf8": json.dumps(s, ensure_ascii=False)})
    for f in float_cases():
        emit({"k": "float", "bits": "%016x" % bits_of(f), "repr": json.dumps(f)})
    texts = [
        '{"a": 1.0, "b": 1e16, "c": 1e-7, "d": 123456789.5, "e": 100000000000000000000}',
        ' { "z" : [ 1 , 2 , { } , [ ] ] , "a" : "\\u00e9\\/\\ud83d\\ude00" } ',
        "-0", "1E2", "[]", "{}", '"x"', "null", " true ", "[[[[[[1]]]]]]",
    ]
    n = 0
    while n < 600:
        t = ws() + rand_json() + ws()
        try:
            v = json.loads(t)
            a = json.dumps(v)
        except (ValueError, RecursionError):
            continue
        if "Infinity" in a or "NaN" in a:
            continue
        texts.append(t)
        n += 1
    for t in texts:
        v = json.loads(t)
        emit({"k": "opaque", "in": t, "ascii": json.dumps(v),
              "utf8": json.dumps(v, ensure_ascii=False)})


if __name__ == "__main__":
    main()
