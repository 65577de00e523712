//! The fast path of [`Event::from_json`]: a hand-written, single-pass scanner
//! for the shape nearly every line has, used only to *accept*.
//!
//! It returns `Some(event)` only for input the strict serde path
//! ([`crate::event`]'s `RawEnvelope` + `Payload::parse`) accepts, with the
//! same value; on anything it does not handle or does not like it returns
//! `None` and the caller runs the serde path, which then decides (and makes
//! the located error). So errors are those of the serde path by construction,
//! and the rule for this module is: when in doubt, return `None`.
//!
//! What it handles: the envelope's members in any order as long as `type`
//! comes before `data`; keys without escapes; strings with any escapes
//! (surrogate pairs decoded, a lone surrogate gives up); integers written as
//! plain digits. The payloads of the span events and `tool.arguments.delta`
//! (only strings), of `tool.started`, `tool.finished`, `tool.error`,
//! `warning` and `provider.metadata` (strings, booleans, `null` options, and
//! opaque values captured as the exact slice they occupy, validated in one
//! pass by [`crate::opaque::scan_valid`]) are scanned here; the other
//! payloads, and these when the scan gives up, are read by their serde
//! `Deserialize` straight from the line, in the same pass (the serde path
//! reads `data` twice: once as a raw value, then typed).

use std::borrow::Cow;

use std::sync::Arc;

use crate::event::{
    Event, EventType, LastId, MAX_SEQUENCE, Payload, SharedIds, VERSION, check_payload,
};
use crate::opaque::JsonObject;
use crate::payload::{
    ProviderMetadata, Role, SpanDelta, SpanFinished, SpanStarted, ToolArgumentsDelta, ToolError,
    ToolFinished, ToolStarted, Warning,
};
use crate::timestamp::{LastMinute, Timestamp};

/// `true` for the bytes that end a run of plain string content: `"`, `\`
/// and the control characters JSON forbids in strings.
static STRING_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A position in the line being parsed.
///
/// The line is text (checked whole before, see [`parse`]); the parser works
/// on its bytes and takes a string's content as a slice of the text between
/// two ASCII bytes (quotes, backslashes), which are always character
/// boundaries.
pub(crate) struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `line`.
    pub(crate) fn new(line: &'a str) -> Self {
        Cursor { s: line, i: 0 }
    }

    /// The line's bytes.
    #[inline]
    fn b(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    /// `b[start..end]` as text: `None` only if out of range (or, which the
    /// parser never asks for, not on character boundaries).
    #[inline]
    fn utf8(&self, start: usize, end: usize) -> Option<&'a str> {
        self.s.get(start..end)
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b().get(self.i).copied()
    }

    /// Skips JSON whitespace (the four characters serde_json skips).
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Index of the next special string byte at or after `from`.
    #[inline]
    fn special_from(&self, from: usize) -> Option<usize> {
        find_string_special(self.b(), from)
    }

    /// `true`, past it, when the cursor is on the key `"name"` (`name`
    /// holds no byte that needs escaping, so this is the whole key). A
    /// fixed-size compare, so no call to `memcmp`.
    #[inline]
    fn eat_key<const N: usize>(&mut self, name: &[u8; N]) -> bool {
        let at = self.i;
        let Some(got) = self.b().get(at + 1..at + N + 1) else {
            return false;
        };
        if self.b()[at] == b'"' && got == name && self.b().get(at + N + 1) == Some(&b'"') {
            self.i = at + N + 2;
            true
        } else {
            false
        }
    }

    /// Past `s`, when the input at the cursor is exactly `s` (a fixed-size
    /// compare).
    #[inline]
    fn lit<const N: usize>(&mut self, s: &[u8; N]) -> Option<()> {
        let got: &[u8; N] = self.b().get(self.i..self.i + N)?.try_into().ok()?;
        if got == s {
            self.i += N;
            Some(())
        } else {
            None
        }
    }

    /// `:` and the whitespace around it, after a key.
    #[inline]
    fn colon(&mut self) -> Option<()> {
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }

    /// A string value, decoded; borrowed when it has no escapes.
    #[inline]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.i;
        let end = self.special_from(start)?;
        if self.b()[end] == b'"' {
            self.i = end + 1;
            return self.utf8(start, end).map(Cow::Borrowed);
        }
        self.string_escaped(start, end).map(Cow::Owned)
    }

    /// The rest of a string whose content starts at `start` and which has a
    /// special byte at `at` that is not its closing quote.
    #[cold]
    fn string_escaped(&mut self, start: usize, mut at: usize) -> Option<String> {
        // The decoded text is never longer than the rest of the line: one
        // allocation instead of a doubling one (up to a few KiB), trimmed
        // below when the line goes on well past the string.
        let mut out = String::with_capacity((self.b().len() - start).min(at - start + 4096));
        let mut run = start;
        loop {
            out.push_str(self.utf8(run, at)?);
            match self.b()[at] {
                b'"' => {
                    self.i = at + 1;
                    if out.capacity() - out.len() > 256 {
                        out.shrink_to_fit();
                    }
                    return Some(out);
                }
                b'\\' => {
                    let e = *self.b().get(at + 1)?;
                    at += 2;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = hex4(self.b(), at)?;
                            at += 4;
                            let cp = match hi {
                                0xD800..=0xDBFF => {
                                    if self.b().get(at) != Some(&b'\\')
                                        || self.b().get(at + 1) != Some(&b'u')
                                    {
                                        return None;
                                    }
                                    let lo = hex4(self.b(), at + 2)?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return None;
                                    }
                                    at += 6;
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                }
                                // A lone low surrogate too: `from_u32`
                                // refuses every surrogate.
                                _ => hi,
                            };
                            out.push(char::from_u32(cp)?);
                        }
                        _ => return None,
                    }
                    run = at;
                    at = self.special_from(at)?;
                }
                // A raw control character.
                _ => return None,
            }
        }
    }

    /// A non-negative integer written as plain digits (no sign, fraction,
    /// exponent or leading zero), at most `MAX_SEQUENCE`.
    #[inline]
    fn uint(&mut self) -> Option<u64> {
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            if self.i - start >= 16 {
                return None;
            }
            v = v * 10 + u64::from(c - b'0');
            self.i += 1;
        }
        let n = self.i - start;
        if n == 0 || (n > 1 && self.b()[start] == b'0') {
            return None;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) || v > MAX_SEQUENCE {
            return None;
        }
        Some(v)
    }

    /// After a member value: `,` (then `true`) or `}` (then `false`).
    #[inline]
    fn next_member(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b',' => {
                self.i += 1;
                self.ws();
                Some(true)
            }
            b'}' => {
                self.i += 1;
                Some(false)
            }
            _ => None,
        }
    }

    /// An object of exactly two string members `a` and `b`, in either
    /// order; the cursor is on its `{`.
    #[inline]
    fn two_strings<const A: usize, const B: usize>(
        &mut self,
        a: &[u8; A],
        b: &[u8; B],
    ) -> Option<(Cow<'a, str>, Cow<'a, str>)> {
        self.eat(b'{')?;
        self.ws();
        let first_is_a = if self.eat_key(a) {
            true
        } else if self.eat_key(b) {
            false
        } else {
            return None;
        };
        self.colon()?;
        let first = self.string()?;
        if !self.next_member()? {
            return None;
        }
        if !(if first_is_a {
            self.eat_key(b)
        } else {
            self.eat_key(a)
        }) {
            return None;
        }
        self.colon()?;
        let second = self.string()?;
        if self.next_member()? {
            return None;
        }
        Some(if first_is_a {
            (first, second)
        } else {
            (second, first)
        })
    }

    /// The object `{"a":"..","b":".."}` spelt compactly in this order, with
    /// `a_open` = `{"a":` and `b_sep` = `,"b":`; the cursor is on its `{`.
    /// On `None` the cursor is anywhere: the caller resets it.
    #[inline]
    fn two_strings_compact<const A: usize, const B: usize>(
        &mut self,
        a_open: &[u8; A],
        b_sep: &[u8; B],
    ) -> Option<(Cow<'a, str>, Cow<'a, str>)> {
        self.lit(a_open)?;
        let first = self.string()?;
        self.lit(b_sep)?;
        let second = self.string()?;
        self.eat(b'}')?;
        Some((first, second))
    }

    /// [`Cursor::two_strings_compact`], else [`Cursor::two_strings`] from the
    /// same place.
    #[inline]
    fn two_strings_either<const A: usize, const B: usize, const A2: usize, const B2: usize>(
        &mut self,
        (a_open, b_sep): (&[u8; A2], &[u8; B2]),
        a: &[u8; A],
        b: &[u8; B],
    ) -> Option<(Cow<'a, str>, Cow<'a, str>)> {
        let start = self.i;
        if let Some(v) = self.two_strings_compact(a_open, b_sep) {
            return Some(v);
        }
        self.i = start;
        self.two_strings(a, b)
    }

    /// An object of exactly one string member `a`; the cursor is on its `{`.
    #[inline]
    fn one_string<const A: usize>(&mut self, a: &[u8; A]) -> Option<Cow<'a, str>> {
        self.eat(b'{')?;
        self.ws();
        if !self.eat_key(a) {
            return None;
        }
        self.colon()?;
        let value = self.string()?;
        if self.next_member()? {
            return None;
        }
        Some(value)
    }

    /// An object key without escapes, and the `:` after it: the key's text.
    #[inline]
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let end = self.special_from(start)?;
        if self.b()[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        self.colon()?;
        Some(&self.b()[start..end])
    }

    /// The members of an object, each handed to `member` with its key and
    /// the cursor on its value; the cursor is on the `{`.
    #[inline]
    fn members(
        &mut self,
        mut member: impl FnMut(&mut Cursor<'a>, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let key = self.plain_key()?;
            member(self, key)?;
            if !self.next_member()? {
                return Some(());
            }
        }
    }

    /// An owned string value.
    #[inline]
    fn owned_string(&mut self) -> Option<String> {
        self.string().map(Cow::into_owned)
    }

    /// An optional string member: a string, or `null` for `None`.
    #[inline]
    fn opt_string(&mut self) -> Option<Option<String>> {
        if self.lit(b"null").is_some() {
            return Some(None);
        }
        self.owned_string().map(Some)
    }

    /// `true` or `false`.
    #[inline]
    fn boolean(&mut self) -> Option<bool> {
        if self.lit(b"true").is_some() {
            Some(true)
        } else {
            self.lit(b"false").map(|()| false)
        }
    }

    /// An opaque JSON object, validated in one pass and kept byte-exact.
    #[inline]
    fn json_object(&mut self) -> Option<JsonObject> {
        let start = self.i;
        let end = crate::opaque::scan_valid(self.b(), start)?;
        let object = JsonObject::from_valid(self.utf8(start, end)?)?;
        self.i = end;
        Some(object)
    }

    /// An optional opaque JSON object: an object, or `null` for `None`.
    #[inline]
    fn opt_json_object(&mut self) -> Option<Option<JsonObject>> {
        if self.lit(b"null").is_some() {
            return Some(None);
        }
        self.json_object().map(Some)
    }

    /// A payload read by its serde `Deserialize`, from the cursor on; the
    /// cursor is on its `{`.
    pub(crate) fn serde_value<T: serde::Deserialize<'a>>(&mut self) -> Option<T> {
        // From the text: serde_json does not check its UTF-8 again.
        let rest = self.s.get(self.i..)?;
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = stream.next()?.ok()?;
        self.i += stream.byte_offset();
        Some(value)
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `b[at..at + 8]` as a little-endian word, if there.
#[inline]
fn word(b: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The high bit of each byte of `x` that is zero is set; bits above the
/// lowest such byte may be set spuriously (a borrow), never below it.
#[inline]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(LO) & !x & HI
}

/// The high bit of each `"`, `\\` or control byte of `x`; bits above the
/// lowest such byte may be set spuriously, never below it.
#[inline(always)]
fn special_mask(x: u64) -> u64 {
    // Each mask's lowest flagged byte is a real match, so the lowest
    // flagged byte of their union is the first match.
    zero_bytes(x ^ (LO * u64::from(b'"')))
        | zero_bytes(x ^ (LO * u64::from(b'\\')))
        | (x.wrapping_sub(LO * 0x20) & !x & HI)
}

/// Index of the first byte of `b` at or after `from` whose byte in
/// `mask` (see [`special_mask`]) is flagged, eight bytes at a time.
#[inline(always)]
fn find_flagged(b: &[u8], from: usize, mask: impl Fn(u64) -> u64) -> Option<usize> {
    let rest = b.get(from..)?;
    let mut chunks = rest.chunks_exact(8);
    let mut at = from;
    for chunk in &mut chunks {
        let m = mask(u64::from_le_bytes(chunk.try_into().ok()?));
        if m != 0 {
            return Some(at + (m.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    if tail.is_empty() {
        return None;
    }
    // The tail as the top bytes of the line's last word, shifted down: the
    // bytes shifted out cannot flag anything, the zeros shifted in may be
    // flagged but only above the tail.
    let last = word(b, b.len().checked_sub(8)?)?;
    let skip = 8 - tail.len();
    let m = mask(last >> (8 * skip));
    let k = (m.trailing_zeros() / 8) as usize;
    (k < tail.len()).then_some(at + k)
}

/// Index of the first `"`, `\\` or control byte in `b` at or after `from`,
/// eight bytes at a time.
#[inline]
pub(crate) fn find_string_special(b: &[u8], from: usize) -> Option<usize> {
    if let Some(i) = find_flagged(b, from, special_mask) {
        return Some(i);
    }
    if b.len() >= 8 {
        return None;
    }
    // Shorter than a word: byte by byte.
    b.get(from..)?
        .iter()
        .position(|&c| STRING_SPECIAL[usize::from(c)])
        .map(|k| from + k)
}

/// Index of the first `byte` in `b`, eight bytes at a time.
#[inline]
pub(crate) fn find_byte(b: &[u8], byte: u8) -> Option<usize> {
    let pattern = LO * u64::from(byte);
    if let Some(i) = find_flagged(b, 0, |x| zero_bytes(x ^ pattern)) {
        return Some(i);
    }
    if b.len() >= 8 {
        return None;
    }
    b.iter().position(|&c| c == byte)
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    let mut v = 0u32;
    for &d in digits {
        v = v * 16 + char::from(d).to_digit(16)?;
    }
    Some(v)
}

const VERSION_BIT: u8 = 1;
const TYPE_BIT: u8 = 1 << 1;
const RUN_ID_BIT: u8 = 1 << 2;
const CONVERSATION_ID_BIT: u8 = 1 << 3;
const SEQUENCE_BIT: u8 = 1 << 4;
const TIMESTAMP_BIT: u8 = 1 << 5;
const NAMESPACE_BIT: u8 = 1 << 6;
const DATA_BIT: u8 = 1 << 7;

/// Parses `line` as the serde path would, or gives up with `None`.
pub(crate) fn parse(line: &str, ids: &mut SharedIds) -> Option<Event> {
    let mut c = Cursor::new(line);
    if let Some(event) = parse_canonical(&mut c, ids) {
        return Some(event);
    }
    c.i = 0;
    parse_any_order(c, ids)
}

/// The envelope as lce and most producers write it: compact, members in
/// the contract's order. Every step is one the general loop
/// ([`parse_any_order`]) takes for the same bytes, so what this accepts, that
/// accepts with the same value; on anything else the caller starts over
/// there.
#[inline]
fn parse_canonical(c: &mut Cursor<'_>, ids: &mut SharedIds) -> Option<Event> {
    c.lit(b"{\"version\":1,\"type\":")?;
    // Most lines are text deltas: their type is one fixed-size compare.
    let ty = if c.lit(b"\"text.delta\"").is_some() {
        EventType::TextDelta
    } else {
        EventType::from_name(&c.string()?)?
    };
    c.lit(b",\"run_id\":")?;
    let run_id = shared_id(c, &mut ids.run_id, true)?;
    c.lit(b",\"conversation_id\":")?;
    let conversation_id = shared_id(c, &mut ids.conversation_id, true)?;
    c.lit(b",\"sequence\":")?;
    let sequence = c.uint()?;
    c.lit(b",\"timestamp\":")?;
    let timestamp = match timestamp_ms_utc(c, &mut ids.minute) {
        Some(t) => t,
        None => Timestamp::parse(&c.string()?).ok()?,
    };
    c.lit(b",\"namespace\":")?;
    let namespace = string_array(c)?;
    c.lit(b",\"data\":")?;
    let payload = parse_payload(c, ty, ids)?;
    c.eat(b'}')?;
    c.ws();
    if c.i != c.b().len() {
        return None;
    }
    check_payload(&payload).ok()?;
    Some(Event {
        run_id,
        conversation_id,
        sequence,
        timestamp,
        namespace,
        payload,
    })
}

/// The envelope with its members in any order (`type` before `data`) and
/// any whitespace.
fn parse_any_order(mut c: Cursor<'_>, ids: &mut SharedIds) -> Option<Event> {
    c.ws();
    c.eat(b'{')?;
    c.ws();
    let mut seen = 0u8;
    let mut ty: Option<EventType> = None;
    let mut run_id: Option<std::sync::Arc<str>> = None;
    let mut conversation_id: Option<std::sync::Arc<str>> = None;
    let mut sequence = 0u64;
    let mut timestamp: Option<Timestamp> = None;
    let mut namespace: Vec<String> = Vec::new();
    let mut payload: Option<Payload> = None;
    loop {
        let bit = envelope_key(&mut c)?;
        c.colon()?;
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match bit {
            VERSION_BIT => {
                if c.uint()? != VERSION {
                    return None;
                }
            }
            TYPE_BIT => ty = Some(EventType::from_name(&c.string()?)?),
            RUN_ID_BIT => run_id = Some(shared_id(&mut c, &mut ids.run_id, true)?),
            CONVERSATION_ID_BIT => {
                conversation_id = Some(shared_id(&mut c, &mut ids.conversation_id, true)?);
            }
            SEQUENCE_BIT => sequence = c.uint()?,
            TIMESTAMP_BIT => timestamp = Some(Timestamp::parse(&c.string()?).ok()?),
            NAMESPACE_BIT => namespace = string_array(&mut c)?,
            _ => {
                // `data` before `type`: left to the serde path.
                payload = Some(parse_payload(&mut c, ty?, ids)?);
            }
        }
        if !c.next_member()? {
            break;
        }
    }
    c.ws();
    if c.i != c.b().len() || seen != u8::MAX {
        return None;
    }
    let payload = payload?;
    check_payload(&payload).ok()?;
    Some(Event {
        run_id: run_id?,
        conversation_id: conversation_id?,
        sequence,
        timestamp: timestamp?,
        namespace,
        payload,
    })
}

/// The envelope member whose key is at the cursor, as its bit.
#[inline]
fn envelope_key(c: &mut Cursor<'_>) -> Option<u8> {
    let (found, bit) = match c.b().get(c.i + 1)? {
        b'v' => (c.eat_key(b"version"), VERSION_BIT),
        b't' if c.b().get(c.i + 2) == Some(&b'y') => (c.eat_key(b"type"), TYPE_BIT),
        b't' => (c.eat_key(b"timestamp"), TIMESTAMP_BIT),
        b'r' => (c.eat_key(b"run_id"), RUN_ID_BIT),
        b'c' => (c.eat_key(b"conversation_id"), CONVERSATION_ID_BIT),
        b's' => (c.eat_key(b"sequence"), SEQUENCE_BIT),
        b'n' => (c.eat_key(b"namespace"), NAMESPACE_BIT),
        b'd' => (c.eat_key(b"data"), DATA_BIT),
        _ => return None,
    };
    found.then_some(bit)
}

/// The id string at the cursor, shared with `last` (see [`SharedIds`]):
/// when the line repeats the remembered id's literal byte for byte, no scan
/// at all; `nonempty` for the envelope ids.
#[inline]
fn shared_id(c: &mut Cursor<'_>, last: &mut LastId, nonempty: bool) -> Option<Arc<str>> {
    if let Some((id, n)) = last.at_start_of(c.b().get(c.i..)?) {
        if !(nonempty && id.is_empty()) {
            c.i += n;
            return Some(id);
        }
    }
    let s = if nonempty {
        identifier(c)?
    } else {
        c.string()?
    };
    Some(last.share(&s))
}

/// A timestamp written like `"2026-08-17T09:00:00.010Z"` (24 bytes: what
/// most producers write), read without scanning for its end; `None`, with
/// the cursor unmoved, for anything else. The 24 bytes are only accepted
/// when they parse as a date-time, whose characters never need escaping,
/// so they are the whole string. The date and minute come from `minute`
/// when they are the last timestamp's ([`Timestamp::parse_ms_utc`]).
#[inline]
fn timestamp_ms_utc(c: &mut Cursor<'_>, minute: &mut LastMinute) -> Option<Timestamp> {
    if c.peek() != Some(b'"') || c.b().get(c.i + 25) != Some(&b'"') {
        return None;
    }
    let b: &[u8; 24] = c.b().get(c.i + 1..c.i + 25)?.try_into().ok()?;
    let t = Timestamp::parse_ms_utc(b, minute)?;
    c.i += 26;
    Some(t)
}

/// A non-empty string (an envelope id), borrowed when it has no escapes.
fn identifier<'a>(c: &mut Cursor<'a>) -> Option<Cow<'a, str>> {
    let s = c.string()?;
    if s.is_empty() {
        return None;
    }
    Some(s)
}

fn string_array(c: &mut Cursor<'_>) -> Option<Vec<String>> {
    c.eat(b'[')?;
    c.ws();
    let mut v = Vec::new();
    if c.eat(b']').is_some() {
        return Some(v);
    }
    loop {
        v.push(c.string()?.into_owned());
        c.ws();
        match c.peek()? {
            b',' => {
                c.i += 1;
                c.ws();
            }
            b']' => {
                c.i += 1;
                return Some(v);
            }
            _ => return None,
        }
    }
}

/// `{"message_id":"..","delta":".."}` spelt compactly in this order (the
/// usual delta), the id shared with `last`. On `None` the cursor is
/// anywhere: the caller resets it.
#[inline]
fn span_delta_compact<'a>(
    c: &mut Cursor<'a>,
    last: &mut LastId,
) -> Option<(Arc<str>, Cow<'a, str>)> {
    c.lit(b"{\"message_id\":")?;
    let message_id = shared_id(c, last, false)?;
    c.lit(b",\"delta\":")?;
    let delta = c.string()?;
    c.eat(b'}')?;
    Some((message_id, delta))
}

fn parse_payload(c: &mut Cursor<'_>, ty: EventType, ids: &mut SharedIds) -> Option<Payload> {
    if c.peek() != Some(b'{') {
        return None;
    }
    Some(match ty {
        EventType::TextDelta | EventType::ReasoningDelta => {
            let start = c.i;
            let (message_id, delta) = match span_delta_compact(c, &mut ids.message_id) {
                Some(v) => v,
                None => {
                    c.i = start;
                    let (message_id, delta) = c.two_strings(b"message_id", b"delta")?;
                    (ids.message_id.share(&message_id), delta)
                }
            };
            let d = SpanDelta {
                message_id,
                delta: delta.into_owned(),
            };
            if ty == EventType::TextDelta {
                Payload::TextDelta(d)
            } else {
                Payload::ReasoningDelta(d)
            }
        }
        EventType::TextStarted | EventType::ReasoningStarted => {
            let (message_id, role) =
                c.two_strings_either((b"{\"message_id\":", b",\"role\":"), b"message_id", b"role")?;
            if role != Role::Assistant.as_str() {
                return None;
            }
            let s = SpanStarted {
                message_id: ids.message_id.share(&message_id),
                role: Role::Assistant,
            };
            if ty == EventType::TextStarted {
                Payload::TextStarted(s)
            } else {
                Payload::ReasoningStarted(s)
            }
        }
        EventType::TextFinished | EventType::ReasoningFinished => {
            let message_id = c.one_string(b"message_id")?;
            let f = SpanFinished {
                message_id: ids.message_id.share(&message_id),
            };
            if ty == EventType::TextFinished {
                Payload::TextFinished(f)
            } else {
                Payload::ReasoningFinished(f)
            }
        }
        EventType::ToolArgumentsDelta => {
            let (tool_call_id, delta) = c.two_strings_either(
                (b"{\"tool_call_id\":", b",\"delta\":"),
                b"tool_call_id",
                b"delta",
            )?;
            Payload::ToolArgumentsDelta(ToolArgumentsDelta {
                tool_call_id: tool_call_id.into_owned(),
                delta: delta.into_owned(),
            })
        }
        _ => {
            let start = c.i;
            match scan_payload(c, ty) {
                Some(p) => p,
                None => {
                    c.i = start;
                    Payload::read_fast(ty, c)?
                }
            }
        }
    })
}

/// Sets a member seen for the first time (a repeated member gives up, as
/// serde rejects it).
#[inline]
fn first<T>(slot: &mut Option<T>, value: Option<T>) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value?);
    Some(())
}

/// The payloads with opaque members, and the other tool payloads, read here
/// rather than by serde: strings, booleans, `null` for absent options, and
/// opaque values validated in one pass ([`crate::opaque::scan_valid`]).
/// `None` for the other types and for anything unusual.
fn scan_payload(c: &mut Cursor<'_>, ty: EventType) -> Option<Payload> {
    Some(match ty {
        EventType::ToolStarted => {
            let (mut id, mut name, mut args, mut parent) = (None, None, None, None);
            c.members(|c, key| match key {
                b"tool_call_id" => first(&mut id, c.owned_string()),
                b"tool_name" => first(&mut name, c.owned_string()),
                b"arguments" => first(&mut args, c.json_object()),
                b"parent_message_id" => first(&mut parent, c.opt_string()),
                _ => None,
            })?;
            Payload::ToolStarted(ToolStarted {
                tool_call_id: id?,
                tool_name: name?,
                arguments: args?,
                parent_message_id: parent.flatten(),
            })
        }
        EventType::ToolFinished => {
            let (mut id, mut result, mut result_ref) = (None, None, None);
            c.members(|c, key| match key {
                b"tool_call_id" => first(&mut id, c.owned_string()),
                b"result" => first(&mut result, c.owned_string()),
                b"result_ref" => first(&mut result_ref, c.opt_string()),
                _ => None,
            })?;
            Payload::ToolFinished(ToolFinished {
                tool_call_id: id?,
                result: result?,
                result_ref: result_ref.flatten(),
            })
        }
        EventType::ToolError => {
            let (mut id, mut code, mut message, mut retryable) = (None, None, None, None);
            c.members(|c, key| match key {
                b"tool_call_id" => first(&mut id, c.owned_string()),
                b"code" => first(&mut code, c.owned_string()),
                b"message" => first(&mut message, c.owned_string()),
                b"retryable" => first(&mut retryable, c.boolean()),
                _ => None,
            })?;
            Payload::ToolError(ToolError {
                tool_call_id: id?,
                code: code?,
                message: message?,
                retryable: retryable?,
            })
        }
        EventType::Warning => {
            let (mut code, mut message, mut details) = (None, None, None);
            c.members(|c, key| match key {
                b"code" => first(&mut code, c.owned_string()),
                b"message" => first(&mut message, c.owned_string()),
                b"details" => first(&mut details, c.opt_json_object()),
                _ => None,
            })?;
            Payload::Warning(Warning {
                code: code?,
                message: message?,
                details: details.flatten(),
            })
        }
        EventType::ProviderMetadata => {
            let (mut provider, mut model, mut metadata) = (None, None, None);
            c.members(|c, key| match key {
                b"provider" => first(&mut provider, c.owned_string()),
                b"model" => first(&mut model, c.opt_string()),
                b"metadata" => first(&mut metadata, c.json_object()),
                _ => None,
            })?;
            Payload::ProviderMetadata(ProviderMetadata {
                provider: provider?,
                model: model.flatten(),
                metadata: metadata?,
            })
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use proptest::prelude::*;

    use super::*;
    use crate::opaque::{MAX_OPAQUE_DEPTH, OpaqueJson};

    /// The fast path either gives up or agrees with the serde path.
    fn agrees(line: &str) -> Result<bool, TestCaseError> {
        let slow = Event::from_json_serde(line, &mut SharedIds::default());
        // The canonical-order path only takes what the general loop takes,
        // with the same value.
        let mut c = Cursor::new(line);
        let canonical = parse_canonical(&mut c, &mut SharedIds::default());
        let general = parse_any_order(Cursor::new(line), &mut SharedIds::default());
        if canonical.is_some() {
            prop_assert_eq!(&canonical, &general, "{}", line);
        }
        if let Some(g) = &general {
            prop_assert_eq!(Ok(g), slow.as_ref(), "{}", line);
        }
        match parse(line, &mut SharedIds::default()) {
            None => Ok(false),
            Some(fast) => {
                prop_assert_eq!(Ok(&fast), slow.as_ref(), "{}", line);
                Ok(true)
            }
        }
    }

    /// Like [`agrees`], after a line with the ids `r`, `c` and `m` (the
    /// test lines' own) was parsed, so the remembered ids' literals are
    /// compared against the line instead of scanned.
    fn agrees_warm(line: &str) -> Result<(), TestCaseError> {
        let warm_up = canonical("text.delta", r#"{"message_id":"m","delta":"d"}"#);
        let slow = Event::from_json_serde(line, &mut SharedIds::default());
        let mut ids = SharedIds::default();
        prop_assert!(parse(&warm_up, &mut ids).is_some());
        if let Some(fast) = parse(line, &mut ids) {
            prop_assert_eq!(Ok(&fast), slow.as_ref(), "{}", line);
        }
        // The public parser, errors included, as a fresh parse.
        let mut parser = crate::EventParser::new();
        prop_assert!(parser.parse_json(&warm_up).is_ok());
        prop_assert_eq!(parser.parse_json(line), Event::from_json(line), "{}", line);
        Ok(())
    }

    const MEMBERS: &[(&str, &str)] = &[
        ("version", "1"),
        ("type", r#""text.delta""#),
        ("run_id", r#""r""#),
        ("conversation_id", r#""c""#),
        ("sequence", "7"),
        ("timestamp", r#""2026-08-17T00:00:00.5+02:00""#),
        ("namespace", r#"["a","b"]"#),
        ("data", r#"{"message_id":"m","delta":"d"}"#),
    ];

    include!("../tests/common/payloads.rs");

    /// Odd spellings of the payloads (escapes, member order, white space,
    /// nulls) and a few more for the types the fast path scans itself.
    const MORE_PAYLOADS: &[(&str, &str)] = &[
        (
            "run.finished",
            r#"{"outcome":"success","thread_state":{"durability":"pending","durable_revision":3,"head_ref":"h"}}"#,
        ),
        (
            "run.finished",
            r#"{"thread_state":{"head_ref":"h","durable_revision":0,"durability":"p\u00e9nding \"x\""},"outcome":"success"}"#,
        ),
        (
            "run.error",
            r#"{"code":"c","message":"m","retryable":true,"retry_after_seconds":0.25,"side_effect_status":"possible"}"#,
        ),
        (
            "run.error",
            r#"{"retry_after_seconds":8.64E+4,"side_effect_status":"none","retryable":false,"message":"m","code":"c"}"#,
        ),
        (
            "run.error",
            r#"{"code":"c","message":"m","retryable":true,"retry_after_seconds":null,"side_effect_status":"possible"}"#,
        ),
        (
            "text.started",
            r#"{ "role" : "assist\u0061nt" , "message_id" : "" }"#,
        ),
        (
            "text.delta",
            r#"{"delta":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00 x","message_id":"m\u0000"}"#,
        ),
        (
            "text.delta",
            "{\"message_id\":\"m\",\"delta\":\"caf\u{e9} \u{1f44d}\u{1f3fd} \u{6771}\"}",
        ),
        (
            "tool.started",
            r#"{ "arguments" : { "q" : "caf\u00e9 \ud83d\ude00 \"x\" \n" , "n" : [ -0.5e-3 , 1E+2 , 0 , true , false , null , { } , [ ] ] , "o" : { "a" : { "a" : 1 } , "b" : "a" } } , "tool_name" : "n" , "tool_call_id" : "t" , "parent_message_id" : null }"#,
        ),
        (
            "tool.started",
            r#"{"tool_call_id":"t","tool_name":"n","arguments":{"k\u0065y":1,"key":2}}"#,
        ),
        (
            "tool.started",
            r#"{"tool_call_id":"t","tool_name":"n","arguments":{}}"#,
        ),
        (
            "tool.finished",
            r#"{"result":"a\nb \"c\" \u00e9\ud83d\ude00","result_ref":null,"tool_call_id":"t"}"#,
        ),
        (
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"a","tool_approvals":[{"tool_call_id":"t","tool_name":"n","tool_args":{}}]}"#,
        ),
        (
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"a","tool_approvals":[]}"#,
        ),
        ("warning", r#"{"details":null,"message":"m","code":"w"}"#),
        ("usage.updated", r#"{"cost":1e400}"#),
        (
            "provider.metadata",
            r#"{"metadata":{"region":"eu","n":-1.5},"model":null,"provider":"p"}"#,
        ),
    ];

    /// `PAYLOADS`, then `MORE_PAYLOADS`.
    static ALL_PAYLOADS: std::sync::LazyLock<Vec<(&str, &str)>> =
        std::sync::LazyLock::new(|| PAYLOADS.iter().chain(MORE_PAYLOADS).copied().collect());

    /// An envelope with the members in `order` (indexes into `MEMBERS`),
    /// `ws` between tokens, the payload `(ty, data)`.
    fn line(order: &[usize], ws: &str, ty: &str, data: &str) -> String {
        let members: Vec<String> = order
            .iter()
            .map(|&k| {
                let (name, value) = MEMBERS[k];
                let value = match name {
                    "type" => format!("\"{ty}\""),
                    "data" => data.to_owned(),
                    _ => value.to_owned(),
                };
                format!("{ws}\"{name}\"{ws}:{ws}{value}{ws}")
            })
            .collect();
        format!("{ws}{{{}}}{ws}", members.join(","))
    }

    fn canonical(ty: &str, data: &str) -> String {
        line(&[0, 1, 2, 3, 4, 5, 6, 7], "", ty, data)
    }

    /// The largest sequence is taken on the fast path; one more is left
    /// to the serde path, which refuses it.
    #[test]
    fn the_fast_path_takes_sequences_up_to_the_largest() {
        let with_sequence = |seq: u64| {
            canonical("text.finished", r#"{"message_id":"m"}"#)
                .replace(r#""sequence":7"#, &format!(r#""sequence":{seq}"#))
        };
        let zero = with_sequence(0);
        assert!(agrees(&zero).unwrap(), "{zero}");
        let top = with_sequence(MAX_SEQUENCE);
        assert!(top.contains(&MAX_SEQUENCE.to_string()), "{top}");
        assert!(agrees(&top).unwrap(), "{top}");
        assert_eq!(Event::from_json(&top).unwrap().sequence, MAX_SEQUENCE);
        let over = with_sequence(MAX_SEQUENCE + 1);
        assert!(!agrees(&over).unwrap(), "{over}");
        assert!(Event::from_json(&over).is_err());
    }

    /// The usual delta spelling takes the shortest path; any other is left
    /// to the general member loop.
    #[test]
    fn compact_deltas_take_the_shortest_path() {
        let mut ids = SharedIds::default();
        let mut c = Cursor::new(r#"{"message_id":"m","delta":"d"}"#);
        let (id, delta) = span_delta_compact(&mut c, &mut ids.message_id).unwrap();
        assert_eq!((&*id, &*delta), ("m", "d"));
        for other in [
            r#"{"delta":"d","message_id":"m"}"#,
            r#"{"message_id": "m","delta":"d"}"#,
        ] {
            let mut c = Cursor::new(other);
            assert!(
                span_delta_compact(&mut c, &mut ids.message_id).is_none(),
                "{other}"
            );
        }
    }

    /// A decoded string is trimmed to its size when the line goes on well
    /// past it (its first buffer is sized by the rest of the line).
    #[test]
    fn decoded_strings_keep_no_large_spare_capacity() {
        let text = format!(r#""\n{}"{}"#, "a".repeat(99), " ".repeat(3000));
        let mut c = Cursor::new(&text);
        let Some(Cow::Owned(s)) = c.string() else {
            panic!("an escaped string is decoded")
        };
        assert_eq!(s.len(), 100);
        assert!(s.capacity() - s.len() <= 256, "{}", s.capacity());
        assert_eq!(c.i, 103);
    }

    /// Both booleans are taken on the fast path, as written.
    #[test]
    fn the_fast_path_takes_booleans() {
        for value in [true, false] {
            let l = canonical(
                "tool.error",
                &format!(r#"{{"tool_call_id":"t","code":"c","message":"m","retryable":{value}}}"#),
            );
            assert!(agrees(&l).unwrap(), "{l}");
            let Some(Payload::ToolError(e)) =
                parse(&l, &mut SharedIds::default()).map(|e| e.payload)
            else {
                panic!("{l}")
            };
            assert_eq!(e.retryable, value);
        }
    }

    #[test]
    fn the_usual_shapes_take_the_fast_path() {
        for (ty, data) in ALL_PAYLOADS.iter() {
            let l = canonical(ty, data);
            let slow_ok = Event::from_json_serde(&l, &mut SharedIds::default()).is_ok();
            // Every valid line in the usual member order is accepted here.
            assert_eq!(agrees(&l).unwrap(), slow_ok, "{l}");
            let mut c = Cursor::new(&l);
            // ... and by the canonical-order path.
            assert_eq!(
                parse_canonical(&mut c, &mut SharedIds::default()).is_some(),
                slow_ok,
                "{l}"
            );
            let spaced = line(&[0, 1, 2, 3, 4, 5, 6, 7], " \t\r\n", ty, data);
            assert_eq!(agrees(&spaced).unwrap(), slow_ok, "{spaced}");
        }
    }

    /// The payloads [`scan_payload`] reads are read there whole, in the
    /// usual member order, with serde's value: nothing of them is left to
    /// [`Payload::read_fast`].
    #[test]
    fn scanned_payloads_are_read_by_the_scan() {
        let scanned = [
            "tool.started",
            "tool.finished",
            "tool.error",
            "warning",
            "provider.metadata",
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (ty, data) in ALL_PAYLOADS.iter().filter(|(ty, _)| scanned.contains(ty)) {
            // (Some of the payloads are there to be refused.)
            let Ok(slow) = Event::from_json_serde(&canonical(ty, data), &mut SharedIds::default())
            else {
                continue;
            };
            let slow = slow.payload;
            let mut c = Cursor::new(data);
            let fast = scan_payload(&mut c, EventType::from_name(ty).unwrap());
            assert_eq!(fast.as_ref(), Some(&slow), "{ty} {data}");
            assert_eq!(c.i, data.len(), "{ty} {data}");
            seen.insert(*ty);
        }
        assert_eq!(seen.len(), scanned.len(), "{seen:?}");
    }

    #[test]
    fn data_before_type_is_left_to_serde() {
        let l = line(
            &[7, 0, 1, 2, 3, 4, 5, 6],
            "",
            "text.delta",
            r#"{"message_id":"m","delta":"d"}"#,
        );
        assert!(parse(&l, &mut SharedIds::default()).is_none());
        assert!(Event::from_json(&l).is_ok());
    }

    #[test]
    fn edge_cases_agree() {
        let d = r#"{"message_id":"m","delta":"d"}"#;
        let base = canonical("text.delta", d);
        let cases = [
            base.replace(r#""version":1"#, r#""version":1.0"#),
            base.replace(r#""version":1"#, r#""version":01"#),
            base.replace(r#""version":1"#, r#""version":2"#),
            base.replace(r#""version":1"#, r#""version":-1"#),
            base.replace(r#""sequence":7"#, r#""sequence":9007199254740991"#),
            base.replace(r#""sequence":7"#, r#""sequence":9007199254740992"#),
            base.replace(r#""sequence":7"#, r#""sequence":0"#),
            base.replace(r#""sequence":7"#, r#""sequence":00"#),
            base.replace(r#""sequence":7"#, r#""sequence":7e0"#),
            base.replace(r#""sequence":7"#, r#""sequence":99999999999999999999"#),
            base.replace(r#""run_id":"r""#, r#""run_id":"""#),
            base.replace(r#""run_id":"r""#, r#""run_id":"\u0072""#),
            base.replace(r#""run_id":"r""#, r#""run_\u0069d":"r""#),
            base.replace(r#""run_id":"r""#, r#""run_id":"r","run_id":"r""#),
            base.replace(r#""run_id":"r""#, r#""run_id":"r","extra":1"#),
            base.replace(r#""run_id":"r""#, r#""run_id":"\ud800""#),
            base.replace(r#""run_id":"r""#, "\"run_id\":\"\u{1}\""),
            base.replace(r#""namespace":["a","b"]"#, r#""namespace":[]"#),
            base.replace(r#""namespace":["a","b"]"#, r#""namespace":["a",]"#),
            base.replace(r#""namespace":["a","b"]"#, r#""namespace":[1]"#),
            base.replace(r#""namespace":["a","b"]"#, r#""namespace":null"#),
            base.replace(
                r#""timestamp":"2026-08-17T00:00:00.5+02:00""#,
                r#""timestamp":"2026-02-30T00:00:00Z""#,
            ),
            base.replace(
                r#""timestamp":"2026-08-17T00:00:00.5+02:00""#,
                r#""timestamp":"2026-08-17T00:00:00\u005a""#,
            ),
            base.replace("\"d\"}", "\"d\",}"),
            base.replace("\"d\"}", "\"d\",\"delta\":\"e\"}"),
            base.replace("\"d\"}", "\"d\",\"role\":\"assistant\"}"),
            base.replace(r#""message_id":"m","#, ""),
            base.replace(r#"{"message_id":"m","delta":"d"}"#, r#"["m","d"]"#),
            base.replace(r#"{"message_id":"m","delta":"d"}"#, r#"null"#),
            base.replace("text.delta", "text.nope"),
            base.replace(r#""delta":"d""#, r#""delta":"\ud83d\u0041""#),
            base.replace(r#""delta":"d""#, r#""delta":"\udc00""#),
            base.replace(r#""delta":"d""#, r#""delta":"\x""#),
            base.replace(r#""delta":"d""#, r#""delta":"\u00G0""#),
            base.replace(r#""delta":"d""#, r#""delta":"\u00e""#),
            format!("{base}x"),
            format!("{base}{{}}"),
            format!("{base},"),
            base.trim_end_matches('}').to_owned(),
            format!("\u{feff}{base}"),
            String::new(),
            "{}".to_owned(),
            "[]".to_owned(),
        ];
        for c in cases {
            agrees(&c).unwrap();
        }
    }

    /// A `run.error` line whose `retry_after_seconds` is `value`.
    fn retry_line(value: &str) -> String {
        canonical(
            "run.error",
            &format!(
                r#"{{"code":"rate_limited","message":"m","retryable":true,"retry_after_seconds":{value},"side_effect_status":"none"}}"#
            ),
        )
    }

    /// `run.error.retry_after_seconds` (D19, amended): `null` or any
    /// non-negative finite number up to 86,400, fractions included, kept
    /// as its exact text, the same on both paths; anything else an error at
    /// its path.
    #[test]
    fn retry_after_numbers_agree() {
        for value in [
            "0",
            "-0",
            "-0.0",
            "0.25",
            "1e2",
            "1E+2",
            "8.64e4",
            "86400",
            "86400.0",
            "86400e0",
            "864e2",
            "0.0000001",
            "1e-400",
            "0e999999999999999999999",
            "30",
            "2.50",
        ] {
            let l = retry_line(value);
            assert!(agrees(&l).unwrap(), "{l}");
            let e = Event::from_json(&l).unwrap();
            let Payload::RunError(r) = &e.payload else {
                panic!("{l}")
            };
            assert_eq!(r.retry_after_seconds.as_ref().unwrap().as_str(), value);
            // Written back exactly.
            assert_eq!(e.to_json(), l);
        }
        let l = retry_line("null");
        assert!(agrees(&l).unwrap());
        let Payload::RunError(r) = Event::from_json(&l).unwrap().payload else {
            panic!("{l}")
        };
        assert_eq!(r.retry_after_seconds, None);
        for (value, kind) in [
            ("-1", crate::ParseErrorKind::NumberOutOfRange),
            ("-0.5", crate::ParseErrorKind::NumberOutOfRange),
            ("-1e-400", crate::ParseErrorKind::NumberOutOfRange),
            ("86400.5", crate::ParseErrorKind::NumberOutOfRange),
            (
                "86400.0000000000000000001",
                crate::ParseErrorKind::NumberOutOfRange,
            ),
            ("86401", crate::ParseErrorKind::NumberOutOfRange),
            ("8.6401e4", crate::ParseErrorKind::NumberOutOfRange),
            ("1e400", crate::ParseErrorKind::NumberOutOfRange),
            (
                "1e99999999999999999999",
                crate::ParseErrorKind::NumberOutOfRange,
            ),
            ("\"5\"", crate::ParseErrorKind::WrongType),
            ("true", crate::ParseErrorKind::WrongType),
            ("[1]", crate::ParseErrorKind::WrongType),
            ("{}", crate::ParseErrorKind::WrongType),
        ] {
            let l = retry_line(value);
            assert!(!agrees(&l).unwrap(), "{l}");
            let err = Event::from_json(&l).unwrap_err();
            assert_eq!(
                (err.kind, err.path.as_str()),
                (kind, "data.retry_after_seconds"),
                "{value}: {err}"
            );
        }
        // Not JSON at all (D17: no NaN or infinities in JSON text): the
        // line's syntax error, located at the byte where the value starts.
        for value in ["NaN", "Infinity", "-Infinity", ".5", "+1", "0x10"] {
            let l = retry_line(value);
            assert!(!agrees(&l).unwrap(), "{l}");
            let err = Event::from_json(&l).unwrap_err();
            let at = l.find(r#""retry_after_seconds":"#).unwrap() + 22;
            assert_eq!(err.kind, crate::ParseErrorKind::Syntax, "{value}: {err}");
            assert!(
                err.offset.is_some_and(|o| (at..at + 2).contains(&o)),
                "{value}: {err} (value at byte {at})"
            );
        }
    }

    /// `thread_state.durability` (D19, amended): any code of at most 128
    /// bytes without control characters parses, the same on both paths;
    /// anything else is `invalid_value` at its path.
    #[test]
    fn durability_codes_agree() {
        let line = |code: &str| {
            canonical(
                "run.finished",
                &format!(
                    r#"{{"outcome":"success","thread_state":{{"durability":{code},"durable_revision":1,"head_ref":"h"}}}}"#
                ),
            )
        };
        let ok = [
            "\"committed\"".to_owned(),
            "\"uncommitted\"".to_owned(),
            "\"pending\"".to_owned(),
            "\"\"".to_owned(),
            format!("\"{}\"", "x".repeat(128)),
            format!("\"{}\\u00e9\"", "x".repeat(126)),
            "\"caf\u{e9}\"".to_owned(),
            "\"a\\\"b\"".to_owned(),
        ];
        for code in &ok {
            let l = line(code);
            assert!(agrees(&l).unwrap(), "{l}");
            let e = Event::from_json(&l).unwrap();
            let Payload::RunFinished(f) = &e.payload else {
                panic!("{l}")
            };
            let d = &f.thread_state.as_ref().unwrap().durability;
            let want: String = serde_json::from_str(code).unwrap();
            assert_eq!(d.as_str(), want);
            assert_eq!(
                matches!(d, crate::Durability::Other(_)),
                !matches!(want.as_str(), "committed" | "uncommitted")
            );
            // Written back exactly (as serde_json escapes it).
            assert_eq!(Event::from_json(&e.to_json()).unwrap(), e);
        }
        let bad = [
            format!("\"{}\"", "x".repeat(129)),
            format!("\"{}\\u00e9\"", "x".repeat(127)),
            "\"a\\u0001\"".to_owned(),
            "\"a\\n\"".to_owned(),
            "\"a\\u007f\"".to_owned(),
            "\"a\\u0085\"".to_owned(),
            "\"a\\u202e\"".to_owned(),
            "\"a\\u2066\"".to_owned(),
            "\"a\\u2028\"".to_owned(),
        ];
        for code in &bad {
            let l = line(code);
            assert!(!agrees(&l).unwrap(), "{l}");
            let err = Event::from_json(&l).unwrap_err();
            assert_eq!(
                (err.kind, err.path.as_str()),
                (
                    crate::ParseErrorKind::InvalidValue,
                    "data.thread_state.durability"
                ),
                "{l}: {err}"
            );
        }
        for code in ["1", "null", "true", "{}"] {
            let l = line(code);
            agrees(&l).unwrap();
            let err = Event::from_json(&l).unwrap_err();
            assert_eq!(err.path, "data.thread_state.durability", "{l}: {err}");
        }
    }

    fn arb_json_string() -> impl Strategy<Value = String> {
        // Strings spelled in every way JSON allows, and some it does not.
        let piece = prop_oneof![
            // Long runs: around a bound of 128 bytes (codes, D19).
            (30usize..70).prop_map(|n| "ab".repeat(n)),
            "[a-z ]{0,8}".prop_map(|s| s),
            any::<char>().prop_map(|c| serde_json::to_string(&c.to_string())
                .unwrap()
                .trim_matches('"')
                .to_owned()),
            any::<char>().prop_map(|c| {
                let mut buf = [0u16; 2];
                c.encode_utf16(&mut buf)
                    .iter()
                    .map(|u| format!("\\u{u:04x}"))
                    .collect::<String>()
            }),
            (0xD800u32..0xE000).prop_map(|u| format!("\\u{u:04X}")),
            prop::sample::select(vec![
                "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\", "\"", "\u{1}",
                "\u{7f}", "\\u", "\\u12"
            ])
            .prop_map(str::to_owned),
        ];
        proptest::collection::vec(piece, 0..6).prop_map(|v| format!("\"{}\"", v.concat()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn member_order_and_spacing_agree(
            order in Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
            ws in prop::sample::select(vec!["", " ", "\n\t ", "\r"]),
            payload in 0..ALL_PAYLOADS.len(),
        ) {
            let (ty, data) = ALL_PAYLOADS[payload];
            let l = line(&order, ws, ty, data);
            let fast = agrees(&l)?;
            // Usual order (type before data), valid line: the fast path takes it.
            let type_first = order.iter().position(|&k| k == 1) < order.iter().position(|&k| k == 7);
            if type_first && Event::from_json_serde(&l, &mut SharedIds::default()).is_ok() {
                prop_assert!(fast, "{}", l);
            }
        }

        #[test]
        fn strings_agree(s in arb_json_string(), field in 0..7usize) {
            let d = format!(r#"{{"message_id":"m","delta":{s}}}"#);
            let l = match field {
                0 => canonical("text.delta", &d),
                1 => canonical("text.delta", &format!(r#"{{"message_id":{s},"delta":"d"}}"#)),
                2 => canonical("text.delta", r#"{"message_id":"m","delta":"d"}"#).replace(r#""r""#, &s),
                3 => canonical("text.delta", r#"{"message_id":"m","delta":"d"}"#).replace(r#"["a","b"]"#, &format!("[{s}]")),
                4 => canonical("tool.arguments.delta", &format!(r#"{{"tool_call_id":"t","delta":{s}}}"#)),
                5 => canonical("text.started", &format!(r#"{{"message_id":"m","role":{s}}}"#)),
                // Any bounded code (D19), parsed by serde on both paths.
                _ => canonical("run.finished", &format!(r#"{{"outcome":"success","thread_state":{{"durability":{s},"durable_revision":1,"head_ref":"h"}}}}"#)),
            };
            let fast = agrees(&l)?;
            if Event::from_json_serde(&l, &mut SharedIds::default()).is_ok() && field != 5 {
                prop_assert!(fast, "{}", l);
            }
        }

        #[test]
        fn retry_after_values_agree(
            value in prop_oneof![
                prop::sample::select(NUMBERS.to_vec()).prop_map(str::to_owned),
                any::<u32>().prop_map(|n| n.to_string()),
                any::<f64>().prop_map(|f| format!("{f:e}")),
                (0.0f64..90_000.0).prop_map(|f| f.to_string()),
                "-?[0-9]{1,6}(\\.[0-9]{1,4})?([eE][+-]?[0-9]{1,3})?",
                arb_json_string(),
            ],
        ) {
            // Both paths agree (fast path taken for every valid value), and
            // a value that parses is kept byte for byte.
            let l = retry_line(&value);
            let fast = agrees(&l)?;
            let slow = Event::from_json_serde(&l, &mut SharedIds::default());
            prop_assert_eq!(fast, slow.is_ok(), "{}", l);
            if let Ok(e) = slow {
                let Payload::RunError(r) = &e.payload else {
                    return Err(TestCaseError::fail("not a run.error"));
                };
                let r = r.retry_after_seconds.as_ref().map(|r| r.as_str().to_owned());
                prop_assert_eq!(r.as_deref(), Some(value.as_str()).filter(|v| *v != "null"));
                let again = Event::from_json(&e.to_json());
                prop_assert_eq!(again.as_ref(), Ok(&e));
            }
        }

        #[test]
        fn mutated_lines_agree(
            payload in 0..ALL_PAYLOADS.len(),
            edits in proptest::collection::vec((any::<usize>(), 0..3u8, prop::sample::select(vec![
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'\n', b'0', b'1', b'9', b'-', b'.',
                b'e', b'u', b'a', b'd', b'n', b't', 0u8, 0x1f, 0x7f,
            ])), 1..4),
        ) {
            let (ty, data) = ALL_PAYLOADS[payload];
            let mut bytes = canonical(ty, data).into_bytes();
            crate::test_util::apply_edits(&mut bytes, edits);
            if let Ok(l) = String::from_utf8(bytes) {
                agrees(&l)?;
            }
        }

        #[test]
        fn mutated_lines_agree_after_a_warm_up(
            payload in 0..ALL_PAYLOADS.len(),
            ms_utc in any::<bool>(),
            edits in proptest::collection::vec((any::<usize>(), 0..3u8, prop::sample::select(vec![
                b'"', b'\\', b'{', b'}', b',', b':', b' ', b'0', b'9', b'-', b'.', b'Z', b'T',
                b'r', b'c', b'm', b'd', b'u', 0u8, 0x1f, 0x7f,
            ])), 1..4),
        ) {
            let (ty, data) = ALL_PAYLOADS[payload];
            let mut base = canonical(ty, data);
            if ms_utc {
                // The 24-byte timestamp read without a scan.
                base = base.replace("2026-08-17T00:00:00.5+02:00", "2026-08-17T00:00:00.500Z");
            }
            let mut bytes = base.into_bytes();
            crate::test_util::apply_edits(&mut bytes, edits);
            if let Ok(l) = String::from_utf8(bytes) {
                agrees_warm(&l)?;
            }
        }

        #[test]
        fn spliced_members_agree(
            payload in 0..ALL_PAYLOADS.len(),
            at in any::<usize>(),
            extra in prop::sample::select(vec![
                r#""version":1"#, r#""type":"text.delta""#, r#""data":{"message_id":"m","delta":"d"}"#,
                r#""namespace":[]"#, r#""unknown":1"#, r#""message_id":"m""#, r#""delta":"x""#,
                r#""role":"assistant""#, r#""tool_call_id":"t""#, r#""prompt":"p""#,
            ]),
        ) {
            // A member added at any comma: duplicates, unknown members, members
            // moved between the envelope and the payload.
            let (ty, data) = ALL_PAYLOADS[payload];
            let l = canonical(ty, data);
            let commas: Vec<usize> = l.match_indices(',').map(|(i, _)| i).collect();
            let i = commas[at % commas.len()];
            let l = format!("{},{extra}{}", &l[..i], &l[i..]);
            agrees(&l)?;
        }
    }

    /// Number spellings, valid or not, in range or not.
    const NUMBERS: &[&str] = &[
        "0",
        "-0",
        "1",
        "-1",
        "01",
        "-01",
        "00",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "1e+",
        "1E+2",
        "1e-2",
        "2.5E-3",
        "-0.0",
        "1.0e0",
        "1e400",
        "-1e400",
        "1e-400",
        "1.7976931348623157e308",
        "1.8e308",
        "0.1e309",
        "123456789012345678901234567890",
        "9007199254740993",
        "1.5.3",
        "1e5e5",
        "0x10",
        "NaN",
        "Infinity",
        "-inf",
        "1_000",
    ];

    /// Keys: plain, escaped spellings of the same key, escapes, bad ones.
    const KEYS: &[&str] = &[
        r#""a""#,
        r#""b""#,
        r#""\u0061""#,
        r#""a\n""#,
        r#""""#,
        r#""\ud800""#,
        r#""a"#,
        "a",
        r#""\"""#,
        r#""é""#,
        "1",
    ];

    /// A JSON text that is often valid, and often almost: duplicate and
    /// escaped keys, escapes and surrogates, numbers of every spelling, bad
    /// literals, stray or missing commas, whitespace anywhere.
    fn arb_json_text() -> impl Strategy<Value = String> {
        let ws = prop::sample::select(vec!["", "", "", " ", "\n\t ", "\r", "\u{b}"]);
        let leaf = prop_oneof![
            prop::sample::select(vec![
                "null", "true", "false", "nul", "tru", "falsey", "True", "nulll"
            ])
            .prop_map(str::to_owned),
            prop::sample::select(NUMBERS.to_vec()).prop_map(str::to_owned),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|f| format!("{f:e}")),
            "-?[0-9]{1,4}(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
            arb_json_string(),
        ];
        let sep = prop::sample::select(vec![",", ",", ",", ",", ", ", " ,\n", ",,", ""]);
        leaf.prop_recursive(6, 48, 5, move |inner| {
            prop_oneof![
                (
                    proptest::collection::vec((inner.clone(), sep.clone()), 0..5),
                    ws.clone(),
                    any::<bool>()
                )
                    .prop_map(|(items, ws, trailing)| {
                        let mut s = format!("[{ws}");
                        for (k, (v, sep)) in items.iter().enumerate() {
                            if k > 0 {
                                s.push_str(sep);
                            }
                            s.push_str(v);
                            s.push_str(ws);
                        }
                        if trailing && !items.is_empty() {
                            s.push(',');
                        }
                        s + "]"
                    }),
                (
                    proptest::collection::vec(
                        (
                            prop::sample::select(KEYS.to_vec()),
                            prop::sample::select(vec![":", ":", ":", " : ", "", "::"]),
                            inner,
                            sep.clone()
                        ),
                        0..5
                    ),
                    ws.clone(),
                    any::<bool>()
                )
                    .prop_map(|(members, ws, trailing)| {
                        let mut s = format!("{{{ws}");
                        for (k, (key, colon, v, sep)) in members.iter().enumerate() {
                            if k > 0 {
                                s.push_str(sep);
                            }
                            s.push_str(&format!("{key}{colon}{v}{ws}"));
                        }
                        if trailing && !members.is_empty() {
                            s.push(',');
                        }
                        s + "}"
                    }),
            ]
        })
    }

    /// A line of type `ty` whose opaque member is `value`.
    fn opaque_line(ty: usize, value: &str) -> String {
        match ty {
            0 => canonical(
                "tool.started",
                &format!(
                    r#"{{"tool_call_id":"t","tool_name":"n","arguments":{value},"parent_message_id":"m"}}"#
                ),
            ),
            1 => canonical(
                "tool.started",
                &format!(r#"{{ "arguments" : {value} , "tool_name":"n","tool_call_id":"t"}}"#),
            ),
            2 => canonical(
                "warning",
                &format!(r#"{{"code":"w","message":"m","details":{value}}}"#),
            ),
            3 => canonical(
                "provider.metadata",
                &format!(r#"{{"provider":"p","metadata":{value}}}"#),
            ),
            4 => canonical(
                "interrupt.requested",
                &format!(
                    r#"{{"interrupt_id":"i","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[{{"field_name":"f","field_type":"t","field_values":{value}}}]}}"#
                ),
            ),
            // An opaque value inside an object, the way arguments hold them.
            _ => canonical(
                "tool.started",
                &format!(r#"{{"tool_call_id":"t","tool_name":"n","arguments":{{"v":{value}}}}}"#),
            ),
        }
    }

    /// The one-pass scanner against what it stands for: serde_json's
    /// grammar, then `strict_scan`.
    fn scan_agrees(text: &str) -> Result<(), TestCaseError> {
        let b = text.as_bytes();
        let start = crate::opaque::skip_ws(b, 0);
        let scanned = crate::opaque::scan_valid(b, start);
        let valid = serde_json::from_str::<&serde_json::value::RawValue>(text)
            .is_ok_and(|raw| crate::opaque::strict_scan(raw.get().as_bytes()).is_ok());
        // Without escapes (so without escaped keys), the scan takes all
        // that is valid, whole.
        if valid && !text.contains('\\') {
            prop_assert_eq!(
                scanned.map(|end| crate::opaque::skip_ws(b, end)),
                Some(b.len()),
                "{}",
                text
            );
        }
        if let Some(end) = scanned {
            let value = &text[start..end];
            let raw = serde_json::from_str::<&serde_json::value::RawValue>(value);
            prop_assert!(raw.is_ok(), "{}", value);
            prop_assert_eq!(raw.unwrap().get(), value);
            prop_assert_eq!(
                crate::opaque::strict_scan(value.as_bytes()),
                Ok(()),
                "{}",
                value
            );
        }
        // The public constructors: the same value, or the same error.
        let slow = crate::error::from_serde_str::<OpaqueJson>(text);
        prop_assert_eq!(OpaqueJson::from_json(text), slow, "{}", text);
        let slow = crate::error::from_serde_str::<JsonObject>(text);
        prop_assert_eq!(JsonObject::from_json(text), slow, "{}", text);
        Ok(())
    }

    #[test]
    fn opaque_edge_cases_agree() {
        let mut values: Vec<String> = NUMBERS
            .iter()
            .flat_map(|n| [n.to_string(), format!("[{n}]"), format!(r#"{{"n":{n}}}"#)])
            .collect();
        values.extend(
            [
                "{}",
                "[]",
                "{ }",
                "[ ]",
                " {} ",
                "{\"a\":1,}",
                "[1,]",
                "[,1]",
                "{,}",
                "{\"a\"}",
                "{\"a\":}",
                "{\"a\" 1}",
                "{1:1}",
                "[1 2]",
                "[\"a\" \"b\"]",
                "{\"a\":1 \"b\":2}",
                "{\"a\":1,\"a\":2}",
                "{\"a\":{\"b\":1,\"b\":1}}",
                "[{\"b\":1},{\"b\":1}]",
                "{\"a\":1,\"\\u0061\":2}",
                "{\"\\u0061\":1}",
                "{\"a\":\"\\ud800\"}",
                "{\"a\":\"\\udc00\"}",
                "{\"a\":\"\\ud800\\u0041\"}",
                "{\"a\":\"\\ud800\\\"}",
                "{\"a\":\"\\ud83d\\ude00\"}",
                "{\"a\":\"\\uD83D\\uDE00\"}",
                "{\"a\":\"\\u00G0\"}",
                "{\"a\":\"\\x\"}",
                "{\"a\":\"\\u12\"}",
                "{\"a\":\"\u{1}\"}",
                "{\"a\":\"\u{7f}\"}",
                "{\"a\":\"\t\"}",
                "{\"a\":\"\\",
                "{\"a\":\"",
                "{\"a\":",
                "{\"a\"",
                "{",
                "[",
                "\"",
                "",
                " ",
                "nul",
                "null ",
                "[null,nul]",
                "[truex]",
                "[true false]",
                "{\"a\":1}}",
                "{\"a\":1}]",
                "[1]]",
                "[1}",
                "{\"a\":1]",
                "\u{feff}{}",
                "{\"a\":1}x",
                "{\"a\":1} {}",
                "[\u{b}1]",
                "[1\u{c}]",
            ]
            .map(str::to_owned),
        );
        let d = MAX_OPAQUE_DEPTH;
        for depth in [d - 2, d - 1, d, d + 1, d + 2] {
            values.push("[".repeat(depth) + &"]".repeat(depth));
            values.push("[".repeat(depth) + "1" + &"]".repeat(depth));
            values.push("{\"a\":".repeat(depth) + "{}" + &"}".repeat(depth));
            values.push("{\"a\":[".repeat(depth / 2) + "0" + &"]}".repeat(depth / 2));
            values.push("[{\"a\":".repeat(depth / 2) + "[]" + &"}]".repeat(depth / 2));
        }
        for v in &values {
            scan_agrees(v).unwrap();
            for ty in 0..6 {
                agrees(&opaque_line(ty, v)).unwrap();
            }
        }
        // Valid values the scan takes are taken by the fast path itself.
        for v in ["{\"n\":1e308}", "{\"a\":[[[]]],\"b\":{\"a\":{}}}", "{ }"] {
            let l = opaque_line(0, v);
            let mut c = Cursor::new(&l);
            assert!(
                parse_canonical(&mut c, &mut SharedIds::default()).is_some(),
                "{l}"
            );
        }
    }

    #[test]
    fn opaque_values_are_wrapped_without_a_second_parse() {
        // `raw_from_valid` hands the text to `RawValue` directly; if
        // serde_json ever changes how, it falls back to `from_string` (this
        // test then tells, since the result stays the same).
        use serde::Deserialize as _;
        use serde::de::value::{Error, MapDeserializer};
        let text = r#"{"a": [1, "x"]}"#;
        let de = MapDeserializer::<_, Error>::new(std::iter::once((
            "$serde_json::private::RawValue",
            text,
        )));
        let raw = Box::<serde_json::value::RawValue>::deserialize(de).unwrap();
        assert_eq!(raw.get(), text);
        assert_eq!(OpaqueJson::from_json(text).unwrap().get(), text);
        assert_eq!(OpaqueJson::from_json(" \n1e5\t").unwrap().get(), "1e5");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn opaque_values_agree(value in arb_json_text(), ty in 0..6usize) {
            scan_agrees(&value)?;
            let l = opaque_line(ty, &value);
            let fast = agrees(&l)?;
            // The scan takes every valid value without escaped keys.
            if ty < 4 && !value.contains("\"\\") && Event::from_json_serde(&l, &mut SharedIds::default()).is_ok() {
                prop_assert!(fast, "{}", l);
            }
        }

        #[test]
        fn nesting_around_the_bound_agrees(
            shape in proptest::collection::vec(any::<bool>(), MAX_OPAQUE_DEPTH - 3..MAX_OPAQUE_DEPTH + 3),
            leaf in prop::sample::select(vec!["1", "[]", "{}", "\"x\"", "1e400", ""]),
            ty in 0..6usize,
        ) {
            let mut value = String::new();
            for &object in &shape {
                value.push_str(if object { "{\"k\":" } else { "[" });
            }
            value.push_str(leaf);
            for &object in shape.iter().rev() {
                value.push(if object { '}' } else { ']' });
            }
            scan_agrees(&value)?;
            agrees(&opaque_line(ty, &value))?;
        }

        #[test]
        fn bytes_that_are_not_utf8_are_never_taken(
            payload in 0..ALL_PAYLOADS.len(),
            value in arb_json_text(),
            tool in any::<bool>(),
            ty in 0..6usize,
            at in any::<usize>(),
            bad in prop::sample::select(vec![
                vec![0x80u8], vec![0xff], vec![0xc3], vec![0xc0, 0xaf], vec![0xed, 0xa0, 0x80],
                vec![0xf4, 0x90, 0x80, 0x80], vec![0xe2, 0x82], vec![0xf0, 0x9f, 0x98],
            ]),
        ) {
            // Wherever the bad bytes land (in an id, a delta, an opaque
            // value, between members), the result is the whole line's check
            // and its located error, cold and with remembered ids.
            let line = if tool {
                opaque_line(ty, &value)
            } else {
                let (t, data) = ALL_PAYLOADS[payload];
                canonical(t, data)
            };
            let mut bytes = line.into_bytes();
            let at = at % (bytes.len() + 1);
            bytes.splice(at..at, bad);
            let want = match std::str::from_utf8(&bytes) {
                Ok(text) => Event::from_json_serde(text, &mut SharedIds::default()),
                Err(e) => Err(crate::ParseError::new(
                    crate::ParseErrorKind::InvalidUtf8,
                    "$",
                    "input is not valid UTF-8",
                )
                .at_offset(e.valid_up_to())),
            };
            prop_assert_eq!(crate::EventParser::new().parse_slice(&bytes), want.clone());
            // Warm: the ids remembered from the line before.
            let mut parser = crate::EventParser::new();
            let warm_up = canonical("text.delta", r#"{"message_id":"m","delta":"d"}"#);
            prop_assert!(parser.parse_slice(warm_up.as_bytes()).is_ok());
            prop_assert_eq!(parser.parse_slice(&bytes), want);
        }

        #[test]
        fn mutated_tool_lines_agree(
            value in arb_json_text(),
            ty in 0..6usize,
            edits in proptest::collection::vec((any::<usize>(), 0..3u8, prop::sample::select(vec![
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'\t', b'0', b'1', b'9', b'-',
                b'+', b'.', b'e', b'E', b'u', b'a', b'd', b'n', b'l', b't', b'f', 0u8, 0x1f, 0x7f,
            ])), 1..4),
        ) {
            let mut bytes = opaque_line(ty, &value).into_bytes();
            crate::test_util::apply_edits(&mut bytes, edits);
            if let Ok(l) = String::from_utf8(bytes) {
                agrees(&l)?;
                scan_agrees(&l)?;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn find_helpers_match_a_plain_search_everywhere(
            v in proptest::collection::vec(prop::sample::select(vec![
                b'a', b'"', b'\\', 0u8, 1, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xff, b'\n',
            ]), 0..40),
            from in 0usize..42,
            byte in prop::sample::select(vec![b'\n', b'"', 0u8, 0xff, b'a']),
        ) {
            let want = v
                .get(from..)
                .and_then(|r| r.iter().position(|&c| STRING_SPECIAL[usize::from(c)]))
                .map(|k| from + k);
            prop_assert_eq!(find_string_special(&v, from), want);
            prop_assert_eq!(find_byte(&v, byte), v.iter().position(|&c| c == byte));
        }
    }

    #[test]
    fn find_helpers_match_a_plain_search() {
        let text = b"0123456789abcdef\"\\\x01\n xyz";
        for from in 0..text.len() {
            let want = text[from..]
                .iter()
                .position(|&c| STRING_SPECIAL[usize::from(c)])
                .map(|k| from + k);
            assert_eq!(find_string_special(text, from), want);
            assert_eq!(
                find_byte(&text[from..], b'\n'),
                text[from..].iter().position(|&c| c == b'\n')
            );
        }
        for c in 0..=255u8 {
            for at in 0..12 {
                let mut v = vec![b'a'; 12];
                v[at] = c;
                let want = v.iter().position(|&x| STRING_SPECIAL[usize::from(x)]);
                assert_eq!(find_string_special(&v, 0), want, "{c} at {at}");
                assert_eq!(
                    find_byte(&v, c),
                    v.iter().position(|&x| x == c),
                    "{c} at {at}"
                );
            }
        }
    }
}
