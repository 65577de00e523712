//! Byte-exact checks of wire-formats §1, §2 and §6 and of the writer API.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::BytesMut;
use lce_wire::{
    DA_RESULT_DISPLAY_CHARS, JsonWriter, MAX_OPAQUE_DEPTH, Style, WireError, truncate_display,
    write_comment, write_compact_float, write_data_frame, write_event_frame, write_json_string,
    write_opaque, write_py_float,
};

const ASCII: Style = Style::Python { ensure_ascii: true };
const UTF8: Style = Style::Python {
    ensure_ascii: false,
};

fn text(b: &BytesMut) -> &str {
    std::str::from_utf8(b).unwrap()
}

fn obj_str(style: Style, k: &str, v: &str) -> String {
    let mut out = BytesMut::new();
    let mut w = JsonWriter::new(&mut out, style);
    w.begin_object();
    w.field_str(k, v);
    w.end_object();
    text(&out).to_owned()
}

fn py_float(v: f64) -> String {
    let mut out = BytesMut::new();
    write_py_float(&mut out, v).unwrap();
    text(&out).to_owned()
}

fn opaque(style: Style, raw: &str) -> Result<String, WireError> {
    let mut out = BytesMut::new();
    write_opaque(&mut out, raw, style)?;
    Ok(text(&out).to_owned())
}

// ---- §1 examples, expected strings copied from the spec ----

#[test]
fn spec_example_ensure_ascii() {
    // '{"text": "Caf\\u00e9 \\u2713 \\ud83d\\ude00 \\u007f \\u0001 \\t/"}'
    let expected = r#"{"text": "Caf\u00e9 \u2713 \ud83d\ude00 \u007f \u0001 \t/"}"#;
    assert_eq!(obj_str(ASCII, "text", "Café ✓ 😀 \x7f \x01 \t/"), expected);
    // The same via opaque transcoding from compact and from escaped input.
    assert_eq!(
        opaque(ASCII, "{\"text\":\"Café ✓ 😀 \u{7f} \\u0001 \\t\\/\"}").unwrap(),
        expected
    );
    assert_eq!(opaque(ASCII, expected).unwrap(), expected);
}

#[test]
fn spec_example_no_ensure_ascii() {
    assert_eq!(obj_str(UTF8, "text", "Café ✓"), r#"{"text": "Café ✓"}"#);
    assert_eq!(
        opaque(UTF8, r#"{"text":"Caf\u00e9 \u2713"}"#).unwrap(),
        r#"{"text": "Café ✓"}"#
    );
}

#[test]
fn spec_example_numbers() {
    let expected =
        r#"{"a": 1.0, "b": 1e+16, "c": 1e-07, "d": 123456789.5, "e": 100000000000000000000}"#;
    assert_eq!(
        opaque(
            ASCII,
            r#"{"a":1.0,"b":1e16,"c":1e-7,"d":123456789.5,"e":100000000000000000000}"#
        )
        .unwrap(),
        expected
    );
    let mut out = BytesMut::new();
    let mut w = JsonWriter::new(&mut out, ASCII);
    w.begin_object();
    w.field_f64("a", 1.0).unwrap();
    w.field_f64("b", 1e16).unwrap();
    w.field_f64("c", 1e-7).unwrap();
    w.field_f64("d", 123456789.5).unwrap();
    w.field_raw("e", "100000000000000000000");
    w.end_object();
    assert_eq!(text(&out), expected);
    // 1E2 is a float in Python.
    assert_eq!(opaque(ASCII, "1E2").unwrap(), "100.0");
}

// ---- floats ----

#[test]
// The tie cases are written with their exact binary values on purpose.
#[allow(clippy::excessive_precision)]
fn python_float_repr_examples() {
    let cases: &[(f64, &str)] = &[
        (1786924800.0, "1786924800.0"),
        (1786924800.123456, "1786924800.123456"),
        (123456789.5, "123456789.5"),
        (0.0001, "0.0001"),
        (1e-05, "1e-05"),
        (1e16, "1e+16"),
        (9999999999999998.0, "9999999999999998.0"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (1.0, "1.0"),
        (100000.0, "100000.0"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (1e-7, "1e-07"),
        (1.5e300, "1.5e+300"),
        (1.2345e-05, "1.2345e-05"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (1e15, "1000000000000000.0"),
        (1e22, "1e+22"),
        (0.30000000000000004, "0.30000000000000004"),
        // Two shortest candidates at the same distance: Python takes the even
        // one (Rust's `{:e}` alone would print ...103e15).
        (-1101730524277610.25, "-1101730524277610.2"),
        (1101730524277610.75, "1101730524277610.8"),
        (1125899906842624.5, "1125899906842624.5"),
    ];
    for &(v, s) in cases {
        assert_eq!(py_float(v), s, "{v:?}");
    }
}

#[test]
fn non_finite_floats_rejected_and_write_nothing() {
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut out = BytesMut::from("x");
        assert_eq!(write_py_float(&mut out, v), Err(WireError::NonFinite));
        assert_eq!(write_compact_float(&mut out, v), Err(WireError::NonFinite));
        let mut w = JsonWriter::new(&mut out, ASCII);
        w.begin_array();
        w.u64(1);
        assert_eq!(w.f64(v), Err(WireError::NonFinite));
        w.u64(2);
        w.end_array();
        assert_eq!(text(&out), "x[1, 2]");
    }
}

#[test]
fn compact_float_matches_serde_json() {
    let mut vals = vec![
        0.0,
        -0.0,
        1.0,
        1e15,
        1e16,
        1e-5,
        1e-6,
        1e-7,
        0.1,
        1.5e300,
        5e-324,
        123456789.5,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = f64::from_bits(x);
        if f.is_finite() {
            vals.push(f);
        }
    }
    for e in -324..=308 {
        vals.push(format!("1e{e}").parse().unwrap());
    }
    for v in vals {
        let mut out = BytesMut::new();
        write_compact_float(&mut out, v).unwrap();
        assert_eq!(text(&out), serde_json::to_string(&v).unwrap(), "{v:?}");
        let back: f64 = text(&out).parse().unwrap();
        assert_eq!(back.to_bits(), v.to_bits());
    }
}

// ---- strings ----

#[test]
fn string_escaping_classes() {
    let all_ctl: String = (0u8..0x20).map(char::from).collect();
    let expected_ctl = "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\"";
    for style in [ASCII, UTF8, Style::Compact] {
        let mut out = BytesMut::new();
        write_json_string(&mut out, &all_ctl, style);
        assert_eq!(text(&out), expected_ctl);
        let mut out = BytesMut::new();
        write_json_string(&mut out, "\"\\/", style);
        assert_eq!(text(&out), r#""\"\\/""#);
    }
    let s = "\u{7f}\u{80}\u{2028}\u{2029}\u{ffff}\u{10000}\u{10ffff}😀";
    let mut out = BytesMut::new();
    write_json_string(&mut out, s, ASCII);
    assert_eq!(
        text(&out),
        r#""\u007f\u0080\u2028\u2029\uffff\ud800\udc00\udbff\udfff\ud83d\ude00""#
    );
    for style in [UTF8, Style::Compact] {
        let mut out = BytesMut::new();
        write_json_string(&mut out, s, style);
        assert_eq!(text(&out), format!("\"{s}\""));
    }
}

// ---- writer ----

#[test]
fn writer_separators_and_nesting() {
    let build = |style| {
        let mut out = BytesMut::new();
        let mut w = JsonWriter::new(&mut out, style);
        w.begin_object();
        w.field_str("type", "x");
        w.key("list");
        w.begin_array();
        w.u64(u64::MAX);
        w.i64(i64::MIN);
        w.begin_object();
        w.end_object();
        w.begin_array();
        w.end_array();
        w.bool(true);
        w.null();
        w.f64(0.5).unwrap();
        w.end_array();
        w.key("o");
        w.begin_object();
        w.field_bool("b", false);
        w.field_null("n");
        w.field_i64("i", -3);
        w.field_u64("u", 0);
        w.end_object();
        w.field_opaque("raw", " [ 1 , {\"k\" : \"v\"} ] ").unwrap();
        w.end_object();
        assert_eq!(w.depth(), 0);
        text(&out).to_owned()
    };
    assert_eq!(
        build(ASCII),
        r#"{"type": "x", "list": [18446744073709551615, -9223372036854775808, {}, [], true, null, 0.5], "o": {"b": false, "n": null, "i": -3, "u": 0}, "raw": [1, {"k": "v"}]}"#
    );
    assert_eq!(
        build(Style::Compact),
        r#"{"type":"x","list":[18446744073709551615,-9223372036854775808,{},[],true,null,0.5],"o":{"b":false,"n":null,"i":-3,"u":0},"raw":[1,{"k":"v"}]}"#
    );
}

#[test]
fn writer_deep_nesting_beyond_inline_levels() {
    let mut out = BytesMut::new();
    let mut w = JsonWriter::new(&mut out, ASCII);
    for _ in 0..300 {
        w.begin_array();
        w.u64(1);
    }
    for _ in 0..300 {
        w.end_array();
    }
    let expected = format!("[1{}{}", ", [1".repeat(299), "]".repeat(300));
    assert_eq!(text(&out), expected);
}

// ---- opaque ----

#[test]
fn opaque_transcoding() {
    let raw = "{ \"b\" :\t[1,\n 2.50 ,-0, -0.0, 1E2, 1e16, 1e-7, 100000000000000000000, true,false ,null],\r\n \"a\": {\"z\":{}, \"y\":[]}, \"s\": \"\\u00E9\\/\\\"\\\\\\b\\f\\n\\r\\t\\uD83D\\uDE00 \\u2028\" }";
    assert_eq!(
        opaque(ASCII, raw).unwrap(),
        r#"{"b": [1, 2.5, 0, -0.0, 100.0, 1e+16, 1e-07, 100000000000000000000, true, false, null], "a": {"z": {}, "y": []}, "s": "\u00e9/\"\\\b\f\n\r\t\ud83d\ude00 \u2028"}"#
    );
    assert_eq!(
        opaque(UTF8, raw).unwrap(),
        "{\"b\": [1, 2.5, 0, -0.0, 100.0, 1e+16, 1e-07, 100000000000000000000, true, false, null], \"a\": {\"z\": {}, \"y\": []}, \"s\": \"é/\\\"\\\\\\b\\f\\n\\r\\t😀 \u{2028}\"}"
    );
    // Compact: number lexemes verbatim, strings re-escaped.
    assert_eq!(
        opaque(Style::Compact, raw).unwrap(),
        "{\"b\":[1,2.50,-0,-0.0,1E2,1e16,1e-7,100000000000000000000,true,false,null],\"a\":{\"z\":{},\"y\":[]},\"s\":\"é/\\\"\\\\\\b\\f\\n\\r\\t😀 \u{2028}\"}"
    );
    // Scalars at top level, surrounding whitespace.
    assert_eq!(opaque(ASCII, " \"x\" ").unwrap(), "\"x\"");
    assert_eq!(opaque(ASCII, "-0").unwrap(), "0");
    assert_eq!(opaque(ASCII, "1e-400").unwrap(), "0.0");
    assert_eq!(
        opaque(ASCII, "-12345678901234567890123").unwrap(),
        "-12345678901234567890123"
    );
}

#[test]
fn opaque_invalid_json() {
    let bad: &[(&str, usize)] = &[
        ("", 0),
        ("   ", 3),
        ("{", 1),
        ("[1,]", 3),
        ("[1 2]", 3),
        ("{\"a\" 1}", 5),
        ("{\"a\":1,}", 7),
        ("{1:2}", 1),
        ("\"abc", 4),
        ("\"a\u{1}b\"", 2),
        ("\"\\x\"", 2),
        ("\"\\u12g4\"", 5),
        ("01", 1),
        ("1.", 2),
        (".5", 0),
        ("1e", 2),
        ("-", 1),
        ("+1", 0),
        ("nul", 0),
        ("truex", 4),
        ("NaN", 0),
        ("Infinity", 0),
        ("[1]]", 3),
        ("{\"a\":1]", 6),
        ("[1}", 2),
        ("\u{feff}1", 0),
    ];
    for &(raw, offset) in bad {
        assert_eq!(
            opaque(ASCII, raw),
            Err(WireError::InvalidJson { offset }),
            "{raw:?}"
        );
        assert!(opaque(Style::Compact, raw).is_err());
    }
}

#[test]
fn opaque_lone_surrogates_and_overflow() {
    assert_eq!(
        opaque(ASCII, r#"["\ud83d"]"#),
        Err(WireError::LoneSurrogate { offset: 2 })
    );
    assert_eq!(
        opaque(ASCII, r#""ab\ude00""#),
        Err(WireError::LoneSurrogate { offset: 3 })
    );
    assert_eq!(
        opaque(UTF8, r#""\ud83d\u0041""#),
        Err(WireError::LoneSurrogate { offset: 1 })
    );
    assert_eq!(
        opaque(UTF8, r#""\ud83dx""#),
        Err(WireError::LoneSurrogate { offset: 1 })
    );
    assert_eq!(opaque(ASCII, "[1e400]"), Err(WireError::NonFinite));
    assert_eq!(opaque(ASCII, "-1.0e309"), Err(WireError::NonFinite));
    // Compact copies the lexeme: no float parse.
    assert_eq!(opaque(Style::Compact, "1e400").unwrap(), "1e400");
}

#[test]
fn opaque_depth_bound() {
    let ok = format!(
        "{}{}",
        "[".repeat(MAX_OPAQUE_DEPTH),
        "]".repeat(MAX_OPAQUE_DEPTH)
    );
    assert_eq!(opaque(ASCII, &ok).unwrap(), ok);
    let deep = format!(
        "{}{}",
        "[".repeat(MAX_OPAQUE_DEPTH + 1),
        "]".repeat(MAX_OPAQUE_DEPTH + 1)
    );
    assert_eq!(opaque(ASCII, &deep), Err(WireError::TooDeep));
    let huge = "[{\"a\":".repeat(100_000);
    assert_eq!(opaque(ASCII, &huge), Err(WireError::TooDeep));
}

#[test]
fn opaque_error_rolls_back_writer() {
    let mut out = BytesMut::new();
    let mut w = JsonWriter::new(&mut out, ASCII);
    w.begin_object();
    w.field_u64("a", 1);
    assert!(w.field_opaque("b", "{\"x\": [1, 2, {\"y\": ").is_err());
    w.key("c");
    assert!(w.opaque("[1, 2").is_err());
    w.begin_array();
    assert!(w.opaque("[\"\\udc00\"]").is_err());
    w.end_array();
    w.end_object();
    assert_eq!(w.depth(), 0);
    assert_eq!(text(&out), r#"{"a": 1, "c": []}"#);
}

// ---- §2 SSE ----

#[test]
fn sse_frames() {
    let mut out = BytesMut::new();
    write_event_frame(&mut out, "content", |b| {
        let mut w = JsonWriter::new(b, ASCII);
        w.begin_object();
        w.field_str("text", "hi\nthere");
        w.end_object();
        Ok(())
    })
    .unwrap();
    assert_eq!(
        text(&out),
        "event: content\ndata: {\"text\": \"hi\\nthere\"}\n\n"
    );
    write_data_frame(&mut out, |b| {
        write_opaque(b, "{ \"type\" : \"RUN_STARTED\" }", Style::Compact)
    })
    .unwrap();
    write_comment(&mut out, "keep-alive").unwrap();
    assert_eq!(
        text(&out),
        "event: content\ndata: {\"text\": \"hi\\nthere\"}\n\ndata: {\"type\":\"RUN_STARTED\"}\n\n: keep-alive\n\n"
    );
}

#[test]
fn sse_injection_and_rollback() {
    let mut out = BytesMut::from("prefix");
    for name in ["a\nb", "a\rb", "\n", "x\r\n"] {
        assert_eq!(
            write_event_frame(&mut out, name, |b| {
                b.extend_from_slice(b"{}");
                Ok(())
            }),
            Err(WireError::InjectedNewline)
        );
        assert_eq!(
            write_comment(&mut out, name),
            Err(WireError::InjectedNewline)
        );
    }
    // Data holding a raw newline is refused and rolled back.
    assert_eq!(
        write_event_frame(&mut out, "ok", |b| {
            b.extend_from_slice(b"{\n}");
            Ok(())
        }),
        Err(WireError::InjectedNewline)
    );
    assert_eq!(
        write_data_frame(&mut out, |b| {
            b.extend_from_slice(b"{\r}");
            Ok(())
        }),
        Err(WireError::InjectedNewline)
    );
    // A failing closure leaves nothing either.
    assert_eq!(
        write_event_frame(&mut out, "ok", |b| {
            let mut w = JsonWriter::new(b, ASCII);
            w.begin_object();
            w.field_f64("x", f64::NAN)
        }),
        Err(WireError::NonFinite)
    );
    assert_eq!(
        write_data_frame(&mut out, |b| write_opaque(b, "[1,", Style::Compact)),
        Err(WireError::InvalidJson { offset: 3 })
    );
    assert_eq!(text(&out), "prefix");
}

// ---- §6 truncation ----

#[test]
fn truncation_boundaries() {
    let max = DA_RESULT_DISPLAY_CHARS;
    let exact = "a".repeat(max);
    assert!(matches!(
        truncate_display(&exact, max),
        std::borrow::Cow::Borrowed(_)
    ));
    assert_eq!(truncate_display(&exact, max), exact);
    let over = "a".repeat(max + 1);
    assert_eq!(truncate_display(&over, max), format!("{exact}...[1 chars]"));
    // Multi-byte: 2000 emoji is 8000 bytes but not over the limit.
    let emoji = "😀".repeat(max);
    assert_eq!(truncate_display(&emoji, max), emoji);
    // Emoji straddling the cut: kept whole or dropped whole, N in code points.
    let s = format!("{}😀é✓", "a".repeat(max - 1));
    assert_eq!(
        truncate_display(&s, max),
        format!("{}😀...[2 chars]", "a".repeat(max - 1))
    );
    let s = format!("{}😀😀😀", "a".repeat(max));
    assert_eq!(truncate_display(&s, max), format!("{exact}...[3 chars]"));
    assert_eq!(truncate_display("héllo", 2), "hé...[3 chars]");
    assert_eq!(truncate_display("héllo", 0), "...[5 chars]");
    assert_eq!(truncate_display("", 0), "");
    assert_eq!(truncate_display("héllo", 5), "héllo");
}
