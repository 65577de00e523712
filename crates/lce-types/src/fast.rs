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
//! (only strings) are scanned here; the other payloads are read by their serde
//! `Deserialize` straight from the line, in the same pass (the serde path
//! reads `data` twice: once as a raw value, then typed).

use std::borrow::Cow;

use crate::event::{Event, EventType, MAX_SEQUENCE, Payload, VERSION, check_payload};
use crate::payload::{Role, SpanDelta, SpanFinished, SpanStarted, ToolArgumentsDelta};
use crate::timestamp::Timestamp;

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
pub(crate) struct Cursor<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
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
        find_string_special(self.b, from)
    }

    /// `true`, past it, when the cursor is on the key `"name"` (`name`
    /// holds no byte that needs escaping, so this is the whole key). A
    /// fixed-size compare, so no call to `memcmp`.
    #[inline]
    fn eat_key<const N: usize>(&mut self, name: &[u8; N]) -> bool {
        let at = self.i;
        let Some(got) = self.b.get(at + 1..at + N + 1) else {
            return false;
        };
        if self.b[at] == b'"' && got == name && self.b.get(at + N + 1) == Some(&b'"') {
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
        let got: &[u8; N] = self.b.get(self.i..self.i + N)?.try_into().ok()?;
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
        if self.b[end] == b'"' {
            self.i = end + 1;
            // `start` and `end` are next to ASCII quotes: char boundaries.
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        self.string_escaped(start, end).map(Cow::Owned)
    }

    /// The rest of a string whose content starts at `start` and which has a
    /// special byte at `at` that is not its closing quote.
    #[cold]
    fn string_escaped(&mut self, start: usize, mut at: usize) -> Option<String> {
        let mut out = String::with_capacity(at - start + 16);
        let mut run = start;
        loop {
            out.push_str(self.text.get(run..at)?);
            match self.b[at] {
                b'"' => {
                    self.i = at + 1;
                    return Some(out);
                }
                b'\\' => {
                    let e = *self.b.get(at + 1)?;
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
                            let hi = hex4(self.b, at)?;
                            at += 4;
                            let cp = match hi {
                                0xD800..=0xDBFF => {
                                    if self.b.get(at) != Some(&b'\\')
                                        || self.b.get(at + 1) != Some(&b'u')
                                    {
                                        return None;
                                    }
                                    let lo = hex4(self.b, at + 2)?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return None;
                                    }
                                    at += 6;
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                }
                                0xDC00..=0xDFFF => return None,
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
        if n == 0 || (n > 1 && self.b[start] == b'0') {
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

    /// A payload read by its serde `Deserialize`, from the cursor on; the
    /// cursor is on its `{`.
    pub(crate) fn serde_value<T: serde::Deserialize<'a>>(&mut self) -> Option<T> {
        let rest = self.text.get(self.i..)?;
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
fn find_string_special(b: &[u8], from: usize) -> Option<usize> {
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

/// Parses `text` as the serde path would, or gives up with `None`.
pub(crate) fn parse(text: &str) -> Option<Event> {
    let mut c = Cursor {
        text,
        b: text.as_bytes(),
        i: 0,
    };
    if let Some(event) = parse_canonical(&mut c) {
        return Some(event);
    }
    c.i = 0;
    parse_any_order(c)
}

/// The envelope as lce and most producers write it: compact, members in
/// the contract's order. Every step is one the general loop
/// ([`parse_any_order`]) takes for the same bytes, so what this accepts, that
/// accepts with the same value; on anything else the caller starts over
/// there.
#[inline]
fn parse_canonical(c: &mut Cursor<'_>) -> Option<Event> {
    c.lit(b"{\"version\":1,\"type\":")?;
    let ty = EventType::from_name(&c.string()?)?;
    c.lit(b",\"run_id\":")?;
    let run_id = identifier(c)?;
    c.lit(b",\"conversation_id\":")?;
    let conversation_id = identifier(c)?;
    c.lit(b",\"sequence\":")?;
    let sequence = c.uint()?;
    c.lit(b",\"timestamp\":")?;
    let timestamp = Timestamp::parse(&c.string()?).ok()?;
    c.lit(b",\"namespace\":")?;
    let namespace = string_array(c)?;
    c.lit(b",\"data\":")?;
    let payload = parse_payload(c, ty)?;
    c.eat(b'}')?;
    c.ws();
    if c.i != c.b.len() {
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
fn parse_any_order(mut c: Cursor<'_>) -> Option<Event> {
    c.ws();
    c.eat(b'{')?;
    c.ws();
    let mut seen = 0u8;
    let mut ty: Option<EventType> = None;
    let mut run_id = String::new();
    let mut conversation_id = String::new();
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
            RUN_ID_BIT => run_id = identifier(&mut c)?,
            CONVERSATION_ID_BIT => conversation_id = identifier(&mut c)?,
            SEQUENCE_BIT => sequence = c.uint()?,
            TIMESTAMP_BIT => timestamp = Some(Timestamp::parse(&c.string()?).ok()?),
            NAMESPACE_BIT => namespace = string_array(&mut c)?,
            _ => {
                // `data` before `type`: left to the serde path.
                payload = Some(parse_payload(&mut c, ty?)?);
            }
        }
        if !c.next_member()? {
            break;
        }
    }
    c.ws();
    if c.i != c.b.len() || seen != u8::MAX {
        return None;
    }
    let payload = payload?;
    check_payload(&payload).ok()?;
    Some(Event {
        run_id,
        conversation_id,
        sequence,
        timestamp: timestamp?,
        namespace,
        payload,
    })
}

/// The envelope member whose key is at the cursor, as its bit.
#[inline]
fn envelope_key(c: &mut Cursor<'_>) -> Option<u8> {
    let (found, bit) = match c.b.get(c.i + 1)? {
        b'v' => (c.eat_key(b"version"), VERSION_BIT),
        b't' if c.b.get(c.i + 2) == Some(&b'y') => (c.eat_key(b"type"), TYPE_BIT),
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

fn identifier(c: &mut Cursor<'_>) -> Option<String> {
    let s = c.string()?;
    if s.is_empty() {
        return None;
    }
    Some(s.into_owned())
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

fn parse_payload(c: &mut Cursor<'_>, ty: EventType) -> Option<Payload> {
    if c.peek() != Some(b'{') {
        return None;
    }
    Some(match ty {
        EventType::TextDelta | EventType::ReasoningDelta => {
            let (message_id, delta) = c.two_strings_either(
                (b"{\"message_id\":", b",\"delta\":"),
                b"message_id",
                b"delta",
            )?;
            let d = SpanDelta {
                message_id: message_id.into_owned(),
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
                message_id: message_id.into_owned(),
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
                message_id: message_id.into_owned(),
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
        _ => Payload::read_fast(ty, c)?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use proptest::prelude::*;

    use super::*;

    /// The fast path either gives up or agrees with the serde path.
    fn agrees(line: &str) -> Result<bool, TestCaseError> {
        let slow = Event::from_json_serde(line);
        // The canonical-order path only takes what the general loop takes,
        // with the same value.
        let mut c = Cursor {
            text: line,
            b: line.as_bytes(),
            i: 0,
        };
        let canonical = parse_canonical(&mut c);
        let general = parse_any_order(Cursor {
            text: line,
            b: line.as_bytes(),
            i: 0,
        });
        if canonical.is_some() {
            prop_assert_eq!(&canonical, &general, "{}", line);
        }
        if let Some(g) = &general {
            prop_assert_eq!(Ok(g), slow.as_ref(), "{}", line);
        }
        match parse(line) {
            None => Ok(false),
            Some(fast) => {
                prop_assert_eq!(Ok(&fast), slow.as_ref(), "{}", line);
                Ok(true)
            }
        }
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

    /// One representative `(type, data)` per event type, and a few more for
    /// the types the fast path scans itself.
    const PAYLOADS: &[(&str, &str)] = &[
        ("run.started", r#"{"harness_id":"h","adapter_version":"1"}"#),
        (
            "run.finished",
            r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":3,"head_ref":"h"}}"#,
        ),
        (
            "run.interrupted",
            r#"{"interrupt_id":"i","reason":"human_input"}"#,
        ),
        (
            "run.cancelled",
            r#"{"reason":"deadline","side_effect_status":"none"}"#,
        ),
        (
            "run.error",
            r#"{"code":"c","message":"m","retryable":true,"retry_after_seconds":5,"side_effect_status":"possible"}"#,
        ),
        ("text.started", r#"{"message_id":"m","role":"assistant"}"#),
        (
            "text.started",
            r#"{ "role" : "assist\u0061nt" , "message_id" : "" }"#,
        ),
        ("text.delta", r#"{"message_id":"m","delta":"d"}"#),
        (
            "text.delta",
            r#"{"delta":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00 x","message_id":"m\u0000"}"#,
        ),
        (
            "text.delta",
            "{\"message_id\":\"m\",\"delta\":\"caf\u{e9} \u{1f44d}\u{1f3fd} \u{6771}\"}",
        ),
        ("text.finished", r#"{"message_id":"m"}"#),
        (
            "reasoning.started",
            r#"{"message_id":"m","role":"assistant"}"#,
        ),
        ("reasoning.delta", r#"{"message_id":"m","delta":"d"}"#),
        ("reasoning.finished", r#"{"message_id":"m"}"#),
        (
            "tool.started",
            r#"{"tool_call_id":"t","tool_name":"n","arguments":{"b":1e16,"a":[1.0,-0]},"parent_message_id":"m"}"#,
        ),
        (
            "tool.arguments.delta",
            r#"{"tool_call_id":"t","delta":"{\"a"}"#,
        ),
        (
            "tool.finished",
            r#"{"tool_call_id":"t","result":"","result_ref":"ref"}"#,
        ),
        (
            "tool.error",
            r#"{"tool_call_id":"t","code":"tool_rejected","message":"no","retryable":false}"#,
        ),
        (
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[{"field_name":"f","field_type":"select","field_values":["x",2],"required":true,"default_value":"x"}]}"#,
        ),
        (
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"a","tool_approvals":[{"tool_call_id":"t","tool_name":"n","tool_args":{}}]}"#,
        ),
        (
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"a","tool_approvals":[]}"#,
        ),
        (
            "namespace.entered",
            r#"{"agent_id":"a","agent_name":"A","parent_tool_call_id":"t"}"#,
        ),
        (
            "namespace.exited",
            r#"{"agent_id":"a","parent_tool_call_id":"t","outcome":"interrupted"}"#,
        ),
        (
            "warning",
            r#"{"code":"w","message":"m","details":{"z":{"y":[true,null]}}}"#,
        ),
        (
            "usage.updated",
            r#"{"input_tokens":1,"cost":0.25,"currency":"USD","final":true}"#,
        ),
        ("usage.updated", r#"{"cost":1e400}"#),
        (
            "provider.metadata",
            r#"{"provider":"p","model":"m","metadata":{"region":"eu"}}"#,
        ),
    ];

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

    #[test]
    fn the_usual_shapes_take_the_fast_path() {
        for (ty, data) in PAYLOADS {
            let l = canonical(ty, data);
            let slow_ok = Event::from_json_serde(&l).is_ok();
            // Every valid line in the usual member order is accepted here.
            assert_eq!(agrees(&l).unwrap(), slow_ok, "{l}");
            let mut c = Cursor {
                text: &l,
                b: l.as_bytes(),
                i: 0,
            };
            // ... and by the canonical-order path.
            assert_eq!(parse_canonical(&mut c).is_some(), slow_ok, "{l}");
            let spaced = line(&[0, 1, 2, 3, 4, 5, 6, 7], " \t\r\n", ty, data);
            assert_eq!(agrees(&spaced).unwrap(), slow_ok, "{spaced}");
        }
    }

    #[test]
    fn data_before_type_is_left_to_serde() {
        let l = line(
            &[7, 0, 1, 2, 3, 4, 5, 6],
            "",
            "text.delta",
            r#"{"message_id":"m","delta":"d"}"#,
        );
        assert!(parse(&l).is_none());
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

    fn arb_json_string() -> impl Strategy<Value = String> {
        // Strings spelled in every way JSON allows, and some it does not.
        let piece = prop_oneof![
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
            payload in 0..PAYLOADS.len(),
        ) {
            let (ty, data) = PAYLOADS[payload];
            let l = line(&order, ws, ty, data);
            let fast = agrees(&l)?;
            // Usual order (type before data), valid line: the fast path takes it.
            let type_first = order.iter().position(|&k| k == 1) < order.iter().position(|&k| k == 7);
            if type_first && Event::from_json_serde(&l).is_ok() {
                prop_assert!(fast, "{}", l);
            }
        }

        #[test]
        fn strings_agree(s in arb_json_string(), field in 0..6usize) {
            let d = format!(r#"{{"message_id":"m","delta":{s}}}"#);
            let l = match field {
                0 => canonical("text.delta", &d),
                1 => canonical("text.delta", &format!(r#"{{"message_id":{s},"delta":"d"}}"#)),
                2 => canonical("text.delta", r#"{"message_id":"m","delta":"d"}"#).replace(r#""r""#, &s),
                3 => canonical("text.delta", r#"{"message_id":"m","delta":"d"}"#).replace(r#"["a","b"]"#, &format!("[{s}]")),
                4 => canonical("tool.arguments.delta", &format!(r#"{{"tool_call_id":"t","delta":{s}}}"#)),
                _ => canonical("text.started", &format!(r#"{{"message_id":"m","role":{s}}}"#)),
            };
            let fast = agrees(&l)?;
            if Event::from_json_serde(&l).is_ok() && field != 5 {
                prop_assert!(fast, "{}", l);
            }
        }

        #[test]
        fn mutated_lines_agree(
            payload in 0..PAYLOADS.len(),
            edits in proptest::collection::vec((any::<usize>(), 0..3u8, prop::sample::select(vec![
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b' ', b'\n', b'0', b'1', b'9', b'-', b'.',
                b'e', b'u', b'a', b'd', b'n', b't', 0u8, 0x1f, 0x7f,
            ])), 1..4),
        ) {
            let (ty, data) = PAYLOADS[payload];
            let mut bytes = canonical(ty, data).into_bytes();
            for (pos, op, byte) in edits {
                let at = pos % (bytes.len() + 1);
                match op {
                    0 if at < bytes.len() => bytes[at] = byte,
                    1 if at < bytes.len() => { bytes.remove(at); }
                    _ => bytes.insert(at, byte),
                }
            }
            if let Ok(l) = String::from_utf8(bytes) {
                agrees(&l)?;
            }
        }

        #[test]
        fn spliced_members_agree(
            payload in 0..PAYLOADS.len(),
            at in any::<usize>(),
            extra in prop::sample::select(vec![
                r#""version":1"#, r#""type":"text.delta""#, r#""data":{"message_id":"m","delta":"d"}"#,
                r#""namespace":[]"#, r#""unknown":1"#, r#""message_id":"m""#, r#""delta":"x""#,
                r#""role":"assistant""#, r#""tool_call_id":"t""#, r#""prompt":"p""#,
            ]),
        ) {
            // A member added at any comma: duplicates, unknown members, members
            // moved between the envelope and the payload.
            let (ty, data) = PAYLOADS[payload];
            let l = canonical(ty, data);
            let commas: Vec<usize> = l.match_indices(',').map(|(i, _)| i).collect();
            let i = commas[at % commas.len()];
            let l = format!("{},{extra}{}", &l[..i], &l[i..]);
            agrees(&l)?;
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
