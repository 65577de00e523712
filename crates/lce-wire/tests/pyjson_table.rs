//! Reference cases produced once by CPython's `json` module
//! (`tests/data/gen_pyjson_cases.py`); Python is not needed to run them.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::BytesMut;
use lce_wire::{Style, write_json_string, write_opaque, write_py_float};
use serde_json::Value;

const TABLE: &str = include_str!("data/pyjson_cases.jsonl");

fn field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap()
}

/// Both Python styles, each with the table's member holding its output.
const STYLES: [(Style, &str); 2] = [
    (Style::Python { ensure_ascii: true }, "ascii"),
    (
        Style::Python {
            ensure_ascii: false,
        },
        "utf8",
    ),
];

#[test]
fn python_reference_table() {
    let (mut strs, mut floats, mut opaques) = (0, 0, 0);
    for (line_no, line) in TABLE.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap();
        let ctx = format!("line {}: {line}", line_no + 1);
        match field(&case, "k") {
            "str" => {
                let s = field(&case, "in");
                for (style, key) in STYLES {
                    let mut out = BytesMut::new();
                    write_json_string(&mut out, s, style);
                    assert_eq!(
                        std::str::from_utf8(&out).unwrap(),
                        field(&case, key),
                        "{ctx}"
                    );
                }
                strs += 1;
            }
            "float" => {
                let bits = u64::from_str_radix(field(&case, "bits"), 16).unwrap();
                let mut out = BytesMut::new();
                write_py_float(&mut out, f64::from_bits(bits)).unwrap();
                assert_eq!(
                    std::str::from_utf8(&out).unwrap(),
                    field(&case, "repr"),
                    "{ctx}"
                );
                floats += 1;
            }
            "opaque" => {
                let raw = field(&case, "in");
                for (style, key) in STYLES {
                    let mut out = BytesMut::new();
                    write_opaque(&mut out, raw, style).unwrap();
                    assert_eq!(
                        std::str::from_utf8(&out).unwrap(),
                        field(&case, key),
                        "{ctx}"
                    );
                }
                // Compact output must be valid JSON meaning the same.
                let mut out = BytesMut::new();
                write_opaque(&mut out, raw, Style::Compact).unwrap();
                let a: Value = serde_json::from_slice(&out).unwrap();
                let b: Value = serde_json::from_str(raw).unwrap();
                assert_eq!(a, b, "{ctx}");
                opaques += 1;
            }
            other => panic!("unknown case kind {other}"),
        }
    }
    // Every case of the table was checked (it is generated with a fixed
    // seed).
    assert_eq!((strs, floats, opaques), (637, 2968, 610));
}
