//! Opaque JSON values: kept byte-exact as they arrived, after strict checks.
//!
//! Tool arguments, warning details, provider metadata and form values are not
//! interpreted by the contract, but they are written back to the wire, where
//! DA's byte layout (Python `json.dumps`) depends on the original key order
//! and number spelling. So they are held as the raw JSON text, never as a tree.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::error::ErrorMarker;

/// How deep opaque JSON may nest (arrays and objects), counted from the
/// opaque value itself. Deeper input is rejected as `too_deep` (D17).
pub const MAX_OPAQUE_DEPTH: usize = 64;

/// Any JSON value, kept exactly as received (after strict validation).
#[derive(Clone)]
pub struct OpaqueJson(Box<RawValue>);

impl OpaqueJson {
    /// Parses and strictly validates a JSON text (D17).
    pub fn from_json(text: &str) -> Result<Self, crate::ParseError> {
        crate::error::from_serde_str::<OpaqueJson>(text)
    }

    /// The JSON text, exactly as it arrived.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// `true` when this is an object with no members (whitespace aside).
    pub fn is_empty_object(&self) -> bool {
        let t = self.get().trim_matches(is_json_ws);
        t.strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .is_some_and(|inner| inner.trim_matches(is_json_ws).is_empty())
    }

    /// `true` when the value is a JSON object.
    pub fn is_object(&self) -> bool {
        self.get().trim_start_matches(is_json_ws).starts_with('{')
    }

    /// `true` when the value is `null`.
    pub fn is_null(&self) -> bool {
        self.get().trim_matches(is_json_ws) == "null"
    }

    /// Size of the JSON text in bytes.
    pub fn len(&self) -> usize {
        self.get().len()
    }

    /// `true` for an empty text (never the case for a parsed value).
    pub fn is_empty(&self) -> bool {
        self.get().is_empty()
    }
}

fn is_json_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

impl PartialEq for OpaqueJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}
impl Eq for OpaqueJson {}

impl fmt::Debug for OpaqueJson {
    // Opaque values are payload: never printed, only their size.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OpaqueJson({} bytes)", self.len())
    }
}

impl Serialize for OpaqueJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for OpaqueJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        if let Err((marker, what)) = strict_scan(raw.get().as_bytes()) {
            return Err(D::Error::custom(marker.message(what)));
        }
        Ok(OpaqueJson(raw))
    }
}

/// An opaque JSON value that must be an object (tool arguments, details).
#[derive(Clone, PartialEq, Eq)]
pub struct JsonObject(OpaqueJson);

impl JsonObject {
    /// The empty object `{}`.
    pub fn empty() -> Self {
        JsonObject(OpaqueJson(empty_raw()))
    }

    /// Parses and strictly validates a JSON text that must be an object.
    pub fn from_json(text: &str) -> Result<Self, crate::ParseError> {
        crate::error::from_serde_str::<JsonObject>(text)
    }

    /// The JSON text, exactly as it arrived.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// `true` when the object has no members.
    pub fn is_empty_object(&self) -> bool {
        self.0.is_empty_object()
    }

    /// Size of the JSON text in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `true` for an empty text (never the case for a parsed value).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value as an [`OpaqueJson`].
    pub fn as_opaque(&self) -> &OpaqueJson {
        &self.0
    }
}

fn empty_raw() -> Box<RawValue> {
    // "{}" is valid JSON, so this cannot fail; fall back defensively anyway.
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| {
        serde_json::value::to_raw_value(&serde_json::Map::new())
            .unwrap_or_else(|_| Box::<RawValue>::default())
    })
}

impl Default for JsonObject {
    fn default() -> Self {
        JsonObject::empty()
    }
}

impl fmt::Debug for JsonObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonObject({} bytes)", self.len())
    }
}

impl Serialize for JsonObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for JsonObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = OpaqueJson::deserialize(d)?;
        if !v.is_object() {
            return Err(D::Error::custom(
                ErrorMarker::WrongType.message("expected a JSON object"),
            ));
        }
        Ok(JsonObject(v))
    }
}

/// Strict checks over a syntactically valid JSON text (D17): duplicate keys at
/// any depth, lone surrogate escapes, nesting depth, finite numbers.
///
/// Runs in one pass with no recursion; state is one small key list per open
/// object. Returns the marker of the first problem found.
pub(crate) fn strict_scan(b: &[u8]) -> Result<(), (ErrorMarker, &'static str)> {
    // Per open container: None for arrays, Some(keys) for objects.
    let mut stack: Vec<Option<Vec<std::borrow::Cow<'_, str>>>> = Vec::new();
    let mut i = 0usize;
    // Whether the next string in the current object is a key.
    let mut expect_key = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'{' | b'[' => {
                if stack.len() >= MAX_OPAQUE_DEPTH {
                    return Err((ErrorMarker::TooDeep, "opaque value nested too deep"));
                }
                if c == b'{' {
                    stack.push(Some(Vec::new()));
                    expect_key = true;
                } else {
                    stack.push(None);
                    expect_key = false;
                }
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
                i += 1;
            }
            b',' => {
                expect_key = matches!(stack.last(), Some(Some(_)));
                i += 1;
            }
            b':' => {
                expect_key = false;
                i += 1;
            }
            b'"' => {
                let (end, text) = scan_string(b, i)?;
                if expect_key {
                    if let Some(Some(keys)) = stack.last_mut() {
                        if keys.contains(&text) {
                            return Err((
                                ErrorMarker::DuplicateKey,
                                "duplicate key in opaque value",
                            ));
                        }
                        keys.push(text);
                    }
                    expect_key = false;
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                let mut is_float = false;
                while i < b.len() && matches!(b[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    if matches!(b[i], b'.' | b'e' | b'E') {
                        is_float = true;
                    }
                    i += 1;
                }
                if is_float {
                    let lexeme = std::str::from_utf8(&b[start..i]).unwrap_or("x");
                    match lexeme.parse::<f64>() {
                        Ok(v) if v.is_finite() => {}
                        _ => {
                            return Err((
                                ErrorMarker::NumberOutOfRange,
                                "number is not a finite float",
                            ));
                        }
                    }
                }
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Scans the string starting at `b[start] == '"'`; returns the index after the
/// closing quote and the decoded text (borrowed when it has no escapes).
fn scan_string(
    b: &[u8],
    start: usize,
) -> Result<(usize, std::borrow::Cow<'_, str>), (ErrorMarker, &'static str)> {
    let bad = (ErrorMarker::Syntax, "malformed string in opaque value");
    let mut i = start + 1;
    let mut owned: Option<String> = None;
    let mut run_start = i;
    loop {
        let Some(&c) = b.get(i) else { return Err(bad) };
        match c {
            b'"' => {
                let tail = std::str::from_utf8(&b[run_start..i]).map_err(|_| bad)?;
                let text = match owned {
                    Some(mut s) => {
                        s.push_str(tail);
                        std::borrow::Cow::Owned(s)
                    }
                    None => std::borrow::Cow::Borrowed(tail),
                };
                return Ok((i + 1, text));
            }
            b'\\' => {
                let s = owned.get_or_insert_with(String::new);
                s.push_str(std::str::from_utf8(&b[run_start..i]).map_err(|_| bad)?);
                let Some(&e) = b.get(i + 1) else {
                    return Err(bad);
                };
                i += 2;
                match e {
                    b'"' => s.push('"'),
                    b'\\' => s.push('\\'),
                    b'/' => s.push('/'),
                    b'b' => s.push('\u{8}'),
                    b'f' => s.push('\u{c}'),
                    b'n' => s.push('\n'),
                    b'r' => s.push('\r'),
                    b't' => s.push('\t'),
                    b'u' => {
                        let hi = hex4(b, i).ok_or(bad)?;
                        i += 4;
                        let cp = if (0xD800..0xDC00).contains(&hi) {
                            let lo = if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                                hex4(b, i + 2)
                            } else {
                                None
                            };
                            match lo {
                                Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                    i += 6;
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                }
                                _ => {
                                    return Err((
                                        ErrorMarker::LoneSurrogate,
                                        "lone surrogate escape in opaque value",
                                    ));
                                }
                            }
                        } else if (0xDC00..0xE000).contains(&hi) {
                            return Err((
                                ErrorMarker::LoneSurrogate,
                                "lone surrogate escape in opaque value",
                            ));
                        } else {
                            hi
                        };
                        s.push(char::from_u32(cp).ok_or(bad)?);
                    }
                    _ => return Err(bad),
                }
                run_start = i;
            }
            _ => i += 1,
        }
    }
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + (d as char).to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(s: &str) -> Result<(), ErrorMarker> {
        strict_scan(s.as_bytes()).map_err(|(m, _)| m)
    }

    #[test]
    fn accepts_ordinary_values() {
        assert_eq!(
            scan(r#"{"a": [1, 2.5, {"a": "x"}], "b": "\u00e9\ud83d\ude00"}"#),
            Ok(())
        );
    }

    #[test]
    fn rejects_duplicates_at_depth_and_through_escapes() {
        assert_eq!(scan(r#"{"a": 1, "a": 2}"#), Err(ErrorMarker::DuplicateKey));
        assert_eq!(
            scan(r#"{"x": {"k": 1, "\u006b": 2}}"#),
            Err(ErrorMarker::DuplicateKey)
        );
        assert_eq!(scan(r#"[{"k": 1}, {"k": 2}]"#), Ok(()));
    }

    #[test]
    fn rejects_lone_surrogates_and_overflowing_floats() {
        assert_eq!(scan(r#"{"a": "\ud800"}"#), Err(ErrorMarker::LoneSurrogate));
        assert_eq!(
            scan(r#"{"a": "\udc00\ud800"}"#),
            Err(ErrorMarker::LoneSurrogate)
        );
        assert_eq!(scan(r#"[1e400]"#), Err(ErrorMarker::NumberOutOfRange));
        assert_eq!(scan(r#"[100000000000000000000000]"#), Ok(()));
    }

    #[test]
    fn bounds_depth() {
        let deep = "[".repeat(MAX_OPAQUE_DEPTH + 1) + &"]".repeat(MAX_OPAQUE_DEPTH + 1);
        assert_eq!(scan(&deep), Err(ErrorMarker::TooDeep));
        let ok = "[".repeat(MAX_OPAQUE_DEPTH) + &"]".repeat(MAX_OPAQUE_DEPTH);
        assert_eq!(scan(&ok), Ok(()));
    }

    #[test]
    fn empty_object_detection() {
        assert!(JsonObject::from_json(" { \n } ").unwrap().is_empty_object());
        assert!(
            !JsonObject::from_json(r#"{"a":1}"#)
                .unwrap()
                .is_empty_object()
        );
        assert!(JsonObject::from_json("[1]").is_err());
    }
}
