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
        // One validating pass accepts; anything it does not take is decided
        // (and its error made) by the serde path.
        if let Some(v) = OpaqueJson::from_valid_text(text) {
            return Ok(v);
        }
        crate::error::from_serde_str::<OpaqueJson>(text)
    }

    /// `text` (whitespace around the value aside) when [`scan_valid`]
    /// accepts it, as the serde path would keep it; `None` to leave the
    /// decision to serde.
    fn from_valid_text(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        let start = skip_ws(b, 0);
        let end = scan_valid(b, start)?;
        if skip_ws(b, end) != b.len() {
            return None;
        }
        OpaqueJson::from_valid(text.get(start..end)?)
    }

    /// Wraps a value [`scan_valid`] accepted, exactly as given (no
    /// whitespace around it).
    pub(crate) fn from_valid(text: &str) -> Option<Self> {
        raw_from_valid(text).map(OpaqueJson)
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
        let b = raw.get().as_bytes();
        // The quick scan accepts; only what it does not take is looked at
        // again, by the scan that names the problem.
        if scan_valid(b, 0) != Some(b.len()) {
            if let Err((marker, what)) = strict_scan(b) {
                return Err(D::Error::custom(marker.message(what)));
            }
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
        if let Some(v) = OpaqueJson::from_valid_text(text).filter(OpaqueJson::is_object) {
            return Ok(JsonObject(v));
        }
        crate::error::from_serde_str::<JsonObject>(text)
    }

    /// Wraps an object [`scan_valid`] accepted, exactly as given.
    pub(crate) fn from_valid(text: &str) -> Option<Self> {
        if !text.starts_with('{') {
            return None;
        }
        OpaqueJson::from_valid(text).map(JsonObject)
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

/// The name serde_json gives the one-member map through which a
/// `RawValue` is deserialized (its private `raw::TOKEN`).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A `Box<RawValue>` holding `text`, a value [`scan_valid`] accepted.
///
/// `RawValue::from_string` would parse the text once more; instead the value
/// is handed to `RawValue`'s own `Deserialize` the way serde_json's
/// deserializer hands it over (one copy, no parse). Should that ever stop
/// working, `from_string` is the fallback, so the result is always `text`.
pub(crate) fn raw_from_valid(text: &str) -> Option<Box<RawValue>> {
    use serde::de::value::{Error, MapDeserializer};
    let de = MapDeserializer::<_, Error>::new(std::iter::once((RAW_VALUE_TOKEN, text)));
    match Box::<RawValue>::deserialize(de) {
        Ok(raw) if raw.get() == text => Some(raw),
        _ => RawValue::from_string(text.to_owned())
            .ok()
            .filter(|raw| raw.get() == text),
    }
}

/// Skips JSON whitespace (the four characters serde_json skips) from `i`.
#[inline]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// Validates the JSON value that starts at `b[start]` in one pass, and
/// returns the index just past it; accept-only: `None` for anything it does
/// not take, valid or not.
///
/// It takes exactly what serde_json's grammar accepts (literals, numbers,
/// strings with their escapes and no raw control character, nesting) *and*
/// [`strict_scan`] passes (no duplicate key at any depth, no lone
/// surrogate escape, at most [`MAX_OPAQUE_DEPTH`] levels, floats finite),
/// except that it gives up on object keys with escapes. No recursion; the
/// only allocation is the list of the open objects' keys.
pub(crate) fn scan_valid(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    let mut depth = 0usize;
    // Bit `d` is set when the container at depth `d` (from 0) is an object.
    let mut objects = 0u64;
    // Per open object: where its keys start in `keys`.
    let mut bases = [0usize; MAX_OPAQUE_DEPTH];
    let mut keys: Vec<&[u8]> = Vec::new();
    'value: loop {
        // A value at `i` (whitespace already skipped).
        match *b.get(i)? {
            c @ (b'{' | b'[') => {
                if depth >= MAX_OPAQUE_DEPTH {
                    return None;
                }
                i = skip_ws(b, i + 1);
                if c == b'{' {
                    if b.get(i) == Some(&b'}') {
                        i += 1;
                    } else {
                        objects |= 1 << depth;
                        bases[depth] = keys.len();
                        depth += 1;
                        i = scan_key(b, i, &mut keys, bases[depth - 1])?;
                        continue 'value;
                    }
                } else if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    objects &= !(1 << depth);
                    depth += 1;
                    continue 'value;
                }
            }
            b'"' => i = scan_str(b, i)?.0,
            b't' => i = scan_lit(b, i, b"true")?,
            b'f' => i = scan_lit(b, i, b"false")?,
            b'n' => i = scan_lit(b, i, b"null")?,
            b'-' | b'0'..=b'9' => i = scan_number(b, i)?,
            _ => return None,
        }
        // After a value: close containers until a `,` or the end.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(b, i);
            let in_object = objects & (1 << (depth - 1)) != 0;
            match *b.get(i)? {
                b',' => {
                    i = skip_ws(b, i + 1);
                    if in_object {
                        i = scan_key(b, i, &mut keys, bases[depth - 1])?;
                    }
                    continue 'value;
                }
                b'}' if in_object => keys.truncate(bases[depth - 1]),
                b']' if !in_object => {}
                _ => return None,
            }
            depth -= 1;
            i += 1;
        }
    }
}

/// An object key at `b[i]`, without escapes and not among `keys[base..]`,
/// then the `:` and the whitespace around it; returns where the value starts.
#[inline]
fn scan_key<'a>(b: &'a [u8], i: usize, keys: &mut Vec<&'a [u8]>, base: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let (end, escaped) = scan_str(b, i)?;
    if escaped {
        return None;
    }
    let key = b.get(i + 1..end - 1)?;
    if keys.get(base..)?.contains(&key) {
        return None;
    }
    keys.push(key);
    let i = skip_ws(b, end);
    if b.get(i) != Some(&b':') {
        return None;
    }
    Some(skip_ws(b, i + 1))
}

/// The string at `b[i] == '"'`: the index past its closing quote and whether
/// it has escapes. Gives up on a raw control character, a bad escape or a
/// lone surrogate.
#[inline]
fn scan_str(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        let k = crate::fast::find_string_special(b, j)?;
        match b[k] {
            b'"' => return Some((k + 1, escaped)),
            b'\\' => {
                escaped = true;
                j = match *b.get(k + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => k + 2,
                    b'u' => match hex4(b, k + 2)? {
                        0xD800..=0xDBFF => {
                            if b.get(k + 6) != Some(&b'\\') || b.get(k + 7) != Some(&b'u') {
                                return None;
                            }
                            if !(0xDC00..=0xDFFF).contains(&hex4(b, k + 8)?) {
                                return None;
                            }
                            k + 12
                        }
                        0xDC00..=0xDFFF => return None,
                        _ => k + 6,
                    },
                    _ => return None,
                };
            }
            _ => return None,
        }
    }
}

#[inline]
fn scan_lit<const N: usize>(b: &[u8], i: usize, lit: &[u8; N]) -> Option<usize> {
    (b.get(i..i + N)? == lit).then_some(i + N)
}

/// The number at `b[i]`, as serde_json's grammar has it (no leading zero, a
/// digit after `.`, `e` and its sign); a fraction or exponent must make a
/// finite float, as [`strict_scan`] checks.
#[inline]
fn scan_number(b: &[u8], start: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while let Some(b'0'..=b'9') = b.get(i) {
            i += 1;
        }
        i
    };
    let mut i = start + usize::from(b[start] == b'-');
    let int_start = i;
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(i + 1),
        _ => return None,
    }
    if matches!(b.get(i), Some(b'0'..=b'9')) {
        return None;
    }
    let int_digits = i - int_start;
    let mut float = false;
    let mut exponent = false;
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
        float = true;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
        float = true;
        exponent = true;
    }
    // Without an exponent, up to 300 integer digits are always finite.
    if float && (exponent || int_digits > 300) {
        let v: f64 = std::str::from_utf8(b.get(start..i)?).ok()?.parse().ok()?;
        if !v.is_finite() {
            return None;
        }
    }
    Some(i)
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
            // `:` (it follows a key, after which `expect_key` is already
            // false), white space and the letters of literals.
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
    fn null_is_null_and_nothing_else_is() {
        assert!(OpaqueJson::from_json("null").unwrap().is_null());
        assert!(OpaqueJson::from_json(" null\n").unwrap().is_null());
        for other in ["{}", "0", "\"null\"", "[null]", "false"] {
            assert!(!OpaqueJson::from_json(other).unwrap().is_null(), "{other}");
        }
    }

    /// An opaque value shows its size, never its text.
    #[test]
    fn debug_shows_the_size_only() {
        let v = OpaqueJson::from_json(r#"{"secret":1}"#).unwrap();
        assert_eq!(format!("{v:?}"), "OpaqueJson(12 bytes)");
    }

    /// Surrogate pairs are decoded to their code point: two astral keys
    /// that differ in the high surrogate only are two keys, and an escaped
    /// key is the same key as its raw spelling.
    #[test]
    fn surrogate_pairs_in_keys_are_their_code_points() {
        assert_eq!(scan(r#"{"\ud83d\ude00":1,"\ud83c\ude00":2}"#), Ok(()));
        assert_eq!(
            scan(r#"{"\ud83d\ude00":1,"😀":2}"#),
            Err(ErrorMarker::DuplicateKey)
        );
    }

    /// A parsed value is never empty; its length is its text's.
    #[test]
    fn parsed_values_are_never_empty() {
        for text in ["0", "{}", " null\n", "\"\""] {
            let v = OpaqueJson::from_json(text).unwrap();
            assert!(!v.is_empty(), "{text:?}");
            assert_eq!(v.get(), text.trim(), "{text:?}");
            assert_eq!(v.len(), text.trim().len(), "{text:?}");
        }
    }

    /// The one-pass validation reads `\u` escapes where they are, in keys
    /// and values, surrogate pairs included, and ends right after the value.
    #[test]
    fn scan_valid_reads_unicode_escapes_in_place() {
        for text in [
            r#"{"a":"\u00e9"}"#,
            r#"{"abc":"x\u00e9y","b":"\ud83d\ude00!"}"#,
            r#"["\u0041","\u00e9\u00e9\u00e9\u00e9"]"#,
        ] {
            assert_eq!(scan_valid(text.as_bytes(), 0), Some(text.len()), "{text}");
            let tail = format!("{text} ,");
            assert_eq!(scan_valid(tail.as_bytes(), 0), Some(text.len()), "{tail}");
        }
        // Bad escapes, lone surrogates; and (by design) keys with escapes.
        for bad in [
            r#"["\u00g9"]"#,
            r#"["\ud83d"]"#,
            r#"["\ud83d\u0041"]"#,
            r#"["\ude00"]"#,
            r#"{"\u0061":1}"#,
        ] {
            assert_eq!(scan_valid(bad.as_bytes(), 0), None, "{bad}");
        }
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
