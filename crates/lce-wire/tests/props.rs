//! Property tests: escaping round-trips, opaque is idempotent, truncation
//! yields what it promises.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::BytesMut;
use lce_wire::{JsonWriter, Style, WireError, truncate_display, write_json_string, write_opaque};
use proptest::prelude::*;

const STYLES: [Style; 3] = [
    Style::Python { ensure_ascii: true },
    Style::Python {
        ensure_ascii: false,
    },
    Style::Compact,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn strings_round_trip(s in any::<String>()) {
        for style in STYLES {
            let mut out = BytesMut::new();
            write_json_string(&mut out, &s, style);
            let text = std::str::from_utf8(&out).unwrap();
            prop_assert!(!text.contains('\n') && !text.contains('\r'));
            if style.ensure_ascii() {
                prop_assert!(text.bytes().all(|b| (0x20..0x7f).contains(&b)));
            }
            let back: String = serde_json::from_str(text).unwrap();
            prop_assert_eq!(&back, &s);
            // Transcoding our own output is the identity.
            let mut again = BytesMut::new();
            write_opaque(&mut again, text, style).unwrap();
            prop_assert_eq!(&again[..], &out[..]);
        }
    }

    /// The one-stage member writers (`field_str`, `field_str_array`) and
    /// `key` / `string` place separators and quotes as the transcoder does,
    /// first member or not, at any depth.
    #[test]
    fn member_writers_match_opaque(
        k in "([a-z]{0,10}|[\"\\\\\u{0}-\u{1f}\u{7f}é€😀])*",
        v in "([a-zA-Z ]{0,20}|[\"\\\\\u{0}-\u{1f}\u{7f}é€😀\u{2028}])*",
        items in prop::collection::vec("([a-z ]{0,12}|[\"\u{1}é😀])*", 0..4),
    ) {
        let q = |s: &str| serde_json::to_string(s).unwrap();
        let arr = items.iter().map(|i| q(i)).collect::<Vec<_>>().join(",");
        let json = format!(
            "{{{k}:{v},\"n\":[{arr}],\"o\":{{{k}:[{arr}],\"z\":{v}}},\
             \"p\":{{\"e\":[{arr}]}},\"arr\":[{v},{{{k}:{v}}},[{arr}]]}}",
            k = q(&k),
            v = q(&v),
        );
        for style in STYLES {
            let mut expected = BytesMut::new();
            write_opaque(&mut expected, &json, style).unwrap();
            let mut out = BytesMut::new();
            let mut w = JsonWriter::new(&mut out, style);
            w.begin_object();
            w.field_str(&k, &v);
            w.field_str_array("n", &items);
            w.key("o");
            w.begin_object();
            w.field_str_array(&k, &items);
            w.field_str("z", &v);
            w.end_object();
            w.key("p");
            w.begin_object();
            w.field_str_array("e", &items);
            w.end_object();
            w.key("arr");
            w.begin_array();
            w.string(&v);
            w.begin_object();
            w.key(&k);
            w.string(&v);
            w.end_object();
            w.begin_array();
            for i in &items {
                w.string(i);
            }
            w.end_array();
            w.end_array();
            w.end_object();
            prop_assert_eq!(&out[..], &expected[..]);
        }
    }

    #[test]
    fn opaque_strings_match_direct_writes(
        s in "([a-zA-Z0-9 ]{0,20}|[\"\\\\/\u{0}-\u{1f}\u{7f}é€😀])*",
    ) {
        // serde_json's compact text of `s`, inside an array: the transcoder
        // must write each string exactly as the writer does.
        let json = serde_json::to_string(&vec![s.clone(), s.clone()]).unwrap();
        for style in STYLES {
            let mut direct = BytesMut::new();
            let sep: &[u8] = if style == Style::Compact { b"," } else { b", " };
            direct.extend_from_slice(b"[");
            write_json_string(&mut direct, &s, style);
            direct.extend_from_slice(sep);
            write_json_string(&mut direct, &s, style);
            direct.extend_from_slice(b"]");
            let mut out = BytesMut::new();
            write_opaque(&mut out, &json, style).unwrap();
            prop_assert_eq!(&out[..], &direct[..]);
        }
    }

    #[test]
    fn floats_round_trip(bits in any::<u64>()) {
        let v = f64::from_bits(bits);
        prop_assume!(v.is_finite());
        for style in STYLES {
            let mut out = BytesMut::new();
            JsonWriter::new(&mut out, style).f64(v).unwrap();
            let text = std::str::from_utf8(&out).unwrap();
            let back: f64 = text.parse().unwrap();
            prop_assert_eq!(back.to_bits(), v.to_bits());
            if style == Style::Compact {
                prop_assert_eq!(text, serde_json::to_string(&v).unwrap());
            }
        }
    }

    #[test]
    fn opaque_never_panics(s in "[\\[\\]{}\",:0-9eE.+\\-a-z\\\\ \\n]{0,40}") {
        for style in STYLES {
            let mut out = BytesMut::from("x");
            if write_opaque(&mut out, &s, style).is_err() {
                prop_assert_eq!(&out[..], b"x");
            }
        }
    }

    // Over arbitrary text, and over the hostile text of `lce-sanitize`'s
    // tests (controls, bidi marks, U+FFFD, the characters of its policies),
    // which re-exports `truncate_display`.
    #[test]
    fn truncation_promise(
        s in prop_oneof![
            any::<String>(),
            "[a-z]{0,50}[é😀a]{0,10}",
            "[a-e\\x00\\x1b\t\n\r\\x7f\u{85}\u{9f}\u{202e}\u{2066}\u{200e}\u{fffd}é😀 =:\"\\[\\]]{0,80}",
        ],
        max in 0usize..60,
    ) {
        let t = truncate_display(&s, max);
        let n = s.chars().count();
        if n <= max {
            prop_assert_eq!(t.as_ref(), s.as_str());
        } else {
            let kept: String = s.chars().take(max).collect();
            let expected = format!("{kept}...[{} chars]", n - max);
            prop_assert_eq!(t.as_ref(), expected.as_str());
        }
    }
}

/// Keys as `Key::new` sees them: plain ASCII, and every kind that must fall
/// back to the escaping path.
fn leak_key(s: String) -> lce_wire::Key {
    lce_wire::Key::new(Box::leak(s.into_boxed_str()))
}

fn any_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z_]{0,33}",
        "[ -~]{0,40}",
        any::<String>(),
        "[a-z\"\\\\\n\u{7f}é😀]{0,6}",
    ]
}

/// A float member value: whole milliseconds (the staged fast path) or any
/// finite float (the general writers).
fn any_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        (1000u64..1_000_000_000_000_000, any::<bool>()).prop_map(|(ms, neg)| {
            let v = ms as f64 / 1000.0;
            if neg { -v } else { v }
        }),
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `Key` writers, `members` and `write_event_json` give the bytes of the
    /// general `&str` writers and `write_event_frame`.
    #[test]
    fn key_writers_and_members_match_general_path(
        keys in prop::collection::vec(any_key(), 4),
        values in prop::collection::vec(any::<String>(), 2),
        float in any_float(),
        name in prop_oneof!["[A-Z_]{1,30}".boxed(), any::<String>().boxed()],
        nested: bool,
    ) {
        let k: Vec<lce_wire::Key> = keys.iter().cloned().map(leak_key).collect();
        let name_key = leak_key(name.clone());
        for style in STYLES {
            let general = |out: &mut BytesMut| -> Result<(), lce_wire::WireError> {
                let mut w = JsonWriter::new(out, style);
                w.begin_object();
                if nested {
                    w.field_str("x", "y");
                }
                w.field_str(&keys[0], &name);
                w.field_str(&keys[1], &values[0]);
                w.key(&keys[2]);
                w.string(&values[1]);
                w.field_f64(&keys[3], float)?;
                w.end_object();
                Ok(())
            };
            let mut want = BytesMut::new();
            let rw = lce_wire::write_event_frame(&mut want, &name, general);

            let mut got = BytesMut::new();
            let rg = lce_wire::write_event_json(&mut got, &name_key, style, |w| {
                w.begin_object();
                if nested {
                    w.field_str("x", "y");
                }
                w.members(&[
                    lce_wire::Member::Const(&k[0], &name_key),
                    lce_wire::Member::Str(&k[1], &values[0]),
                ])?;
                w.key_k(&k[2]);
                w.string(&values[1]);
                w.members(&[lce_wire::Member::F64(&k[3], float)])?;
                w.end_object();
                Ok(())
            });
            prop_assert_eq!(rg.is_ok(), rw.is_ok());
            prop_assert_eq!(&got[..], &want[..]);

            // The single-member `_k` writers.
            let mut a = BytesMut::new();
            let mut w = JsonWriter::new(&mut a, style);
            w.begin_object();
            w.field_str_k(&k[1], &values[0]);
            w.field_f64_k(&k[3], float).unwrap();
            w.end_object();
            let mut b = BytesMut::new();
            let mut w = JsonWriter::new(&mut b, style);
            w.begin_object();
            w.field_str(&keys[1], &values[0]);
            w.field_f64(&keys[3], float).unwrap();
            w.end_object();
            prop_assert_eq!(&a[..], &b[..]);
        }
    }
}

/// `write_event_json` still refuses raw newlines copied in unescaped, and
/// writes nothing for a non-finite member.
#[test]
fn event_json_refuses_raw_newlines_and_non_finite() {
    const NAME: lce_wire::Key = lce_wire::Key::new("X");
    const K: lce_wire::Key = lce_wire::Key::new("k");
    let mut out = BytesMut::from(&b"keep"[..]);
    let r = lce_wire::write_event_json(&mut out, &NAME, Style::PY_UTF8, |w| {
        w.begin_object();
        w.field_raw("r", "[1,\n2]");
        w.end_object();
        Ok(())
    });
    assert_eq!(r, Err(WireError::InjectedNewline));
    let r = lce_wire::write_event_json(&mut out, &NAME, Style::PY_UTF8, |w| {
        w.begin_object();
        w.members(&[
            lce_wire::Member::Str(&K, "v"),
            lce_wire::Member::F64(&K, f64::NAN),
        ])
    });
    assert_eq!(r, Err(WireError::NonFinite));
    // A raw newline before `data`'s own error: that error is the answer.
    let r = lce_wire::write_event_json(&mut out, &NAME, Style::PY_UTF8, |w| {
        w.begin_object();
        w.field_raw("r", "[1,\n2]");
        Err(WireError::TooDeep)
    });
    assert_eq!(r, Err(WireError::TooDeep));
    assert_eq!(&out[..], b"keep");
    let r = lce_wire::write_event_json(&mut out, &NAME, Style::PY_UTF8, |w| {
        w.begin_object();
        w.members(&[
            lce_wire::Member::Str(&K, "a\nb"),
            lce_wire::Member::F64(&K, 1.5),
        ])?;
        w.end_object();
        Ok(())
    });
    assert!(r.is_ok());
    assert_eq!(
        &out[..],
        b"keepevent: X\ndata: {\"k\": \"a\\nb\", \"k\": 1.5}\n\n"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `object` with every member kind (integers, optional strings, string
    /// lists) and `write_data_json` give the bytes of the general writers
    /// and `write_data_frame`, at the top level, nested and after other
    /// items.
    #[test]
    fn object_and_data_json_match_general_path(
        keys in prop::collection::vec(any_key(), 6),
        values in prop::collection::vec(any::<String>(), 2),
        opt in prop::option::of(any::<String>()),
        list in prop::collection::vec(any::<String>(), 0..4),
        int in prop_oneof![any::<i64>(), -1000i64..1000, Just(i64::MIN), Just(i64::MAX)],
        float in any_float(),
        place in 0u8..3,
    ) {
        let k: Vec<lce_wire::Key> = keys.iter().cloned().map(leak_key).collect();
        for style in STYLES {
            let general = |out: &mut BytesMut| -> Result<(), lce_wire::WireError> {
                let mut w = JsonWriter::new(out, style);
                if place > 0 {
                    w.begin_array();
                }
                if place > 1 {
                    w.string("before");
                }
                w.begin_object();
                w.field_str(&keys[0], &values[0]);
                w.field_i64(&keys[1], int);
                if let Some(v) = &opt {
                    w.field_str(&keys[2], v);
                }
                w.field_str_array(&keys[3], &list);
                w.field_f64(&keys[4], float)?;
                if let Some(v) = &opt {
                    w.field_str(&keys[5], v);
                }
                w.end_object();
                w.string(&values[1]);
                if place > 0 {
                    w.end_array();
                }
                Ok(())
            };
            let mut want = BytesMut::new();
            let rw = lce_wire::write_data_frame(&mut want, general);

            let mut got = BytesMut::new();
            let rg = lce_wire::write_data_json(&mut got, style, |w| {
                if place > 0 {
                    w.begin_array();
                }
                if place > 1 {
                    w.string("before");
                }
                w.object(&[
                    lce_wire::Member::Str(&k[0], &values[0]),
                    lce_wire::Member::I64(&k[1], int),
                    lce_wire::Member::OptStr(&k[2], opt.as_deref()),
                    lce_wire::Member::StrList(&k[3], &list),
                    lce_wire::Member::F64(&k[4], float),
                    lce_wire::Member::OptStr(&k[5], opt.as_deref()),
                ])?;
                w.string(&values[1]);
                if place > 0 {
                    w.end_array();
                }
                Ok(())
            });
            prop_assert_eq!(rg.is_ok(), rw.is_ok());
            prop_assert_eq!(&got[..], &want[..]);

            // A leading `None` writes no separator; an empty object is `{}`.
            let mut a = BytesMut::new();
            let mut w = JsonWriter::new(&mut a, style);
            w.object(&[
                lce_wire::Member::OptStr(&k[2], None),
                lce_wire::Member::I64(&k[1], int),
            ])?;
            w.object(&[])?;
            let mut b = BytesMut::new();
            let mut w = JsonWriter::new(&mut b, style);
            w.begin_object();
            w.field_i64(&keys[1], int);
            w.end_object();
            w.begin_object();
            w.end_object();
            prop_assert_eq!(&a[..], &b[..]);
        }
    }
}

/// `write_data_json` refuses raw newlines copied in unescaped and writes
/// nothing for a non-finite member.
#[test]
fn data_json_refuses_raw_newlines_and_non_finite() {
    const K: lce_wire::Key = lce_wire::Key::new("k");
    let mut out = BytesMut::from(&b"keep"[..]);
    let r = lce_wire::write_data_json(&mut out, Style::Compact, |w| {
        w.begin_object();
        w.field_raw("r", "[1,\r2]");
        w.end_object();
        Ok(())
    });
    assert_eq!(r, Err(WireError::InjectedNewline));
    let r = lce_wire::write_data_json(&mut out, Style::Compact, |w| {
        w.object(&[
            lce_wire::Member::Str(&K, "v"),
            lce_wire::Member::F64(&K, f64::INFINITY),
        ])
    });
    assert_eq!(r, Err(WireError::NonFinite));
    let r = lce_wire::write_data_json(&mut out, Style::Compact, |w| {
        w.begin_object();
        w.field_raw("r", "[1,\r2]");
        Err(WireError::TooDeep)
    });
    assert_eq!(r, Err(WireError::TooDeep));
    assert_eq!(&out[..], b"keep");
    let r = lce_wire::write_data_json(&mut out, Style::Compact, |w| {
        w.object(&[
            lce_wire::Member::Str(&K, "a\nb"),
            lce_wire::Member::I64(&K, -7),
        ])
    });
    assert!(r.is_ok());
    assert_eq!(&out[..], b"keepdata: {\"k\":\"a\\nb\",\"k\":-7}\n\n");
}

/// `Member::I64` writes an integer's decimal text exactly, at every digit
/// count boundary and for zero (which has no sign: `0`, never `-0`).
#[test]
fn object_integers_are_their_decimal_text() {
    const K: lce_wire::Key = lce_wire::Key::new("n");
    for v in [0, 1, 9, 10, 99, 100, -1, -10, -100, i64::MIN, i64::MAX] {
        let mut out = BytesMut::new();
        let mut w = JsonWriter::new(&mut out, Style::Compact);
        w.object(&[lce_wire::Member::I64(&K, v)]).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            format!("{{\"n\":{v}}}"),
            "{v}"
        );
    }
}

/// `Member::F64` writes whole milliseconds of every length exactly, up to
/// the longest (17 bytes: a sign, 12 integer digits, 3 decimals), in both
/// styles.
#[test]
fn object_millis_of_every_length_are_exact() {
    const K: lce_wire::Key = lce_wire::Key::new("n");
    for (v, text) in [
        (1.0, "1.0"),
        (-1.5, "-1.5"),
        (12.25, "12.25"),
        (1234.125, "1234.125"),
        (123456789012.345, "123456789012.345"),
        (-123456789012.345, "-123456789012.345"),
        (-999999999999.999, "-999999999999.999"),
    ] {
        for (style, sep) in [(Style::Compact, ":"), (Style::PY_ASCII, ": ")] {
            let mut out = BytesMut::new();
            let mut w = JsonWriter::new(&mut out, style);
            w.object(&[lce_wire::Member::F64(&K, v)]).unwrap();
            assert_eq!(
                std::str::from_utf8(&out).unwrap(),
                format!("{{\"n\"{sep}{text}}}"),
                "{v}"
            );
        }
    }
}
