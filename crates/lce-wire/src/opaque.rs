//! Transcoding already-valid JSON text into a [`Style`] without a tree.
//!
//! A single forward pass over the bytes with an explicit container stack
//! (bounded by [`MAX_OPAQUE_DEPTH`]), so no recursion and no allocation.

use bytes::BytesMut;

use crate::escape::{plain_words_len, write_escaped_body, write_escaped_char};
use crate::float::write_py_float;
use crate::writer::{JsonWriter, Style};
use crate::{MAX_OPAQUE_DEPTH, WireError};

/// Container stack: bit `d` set = the container at depth `d + 1` is an object.
struct Stack {
    bits: u128,
    depth: usize,
}

impl Stack {
    fn push(&mut self, is_object: bool) -> Result<(), WireError> {
        if self.depth >= MAX_OPAQUE_DEPTH {
            return Err(WireError::TooDeep);
        }
        if is_object {
            self.bits |= 1u128 << self.depth;
        } else {
            self.bits &= !(1u128 << self.depth);
        }
        self.depth += 1;
        Ok(())
    }

    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn top_is_object(&self) -> bool {
        self.depth
            .checked_sub(1)
            .is_some_and(|top| self.bits & (1u128 << top) != 0)
    }
}

struct Cursor<'s> {
    text: &'s str,
    bytes: &'s [u8],
    pos: usize,
}

impl<'s> Cursor<'s> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    #[inline]
    fn invalid(&self) -> WireError {
        WireError::InvalidJson { offset: self.pos }
    }

    fn expect(&mut self, b: u8) -> Result<(), WireError> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.invalid())
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<&'static [u8], WireError> {
        let end = self.pos.saturating_add(word.len());
        if self.bytes.get(self.pos..end) == Some(word) {
            self.pos = end;
            Ok(word)
        } else {
            Err(self.invalid())
        }
    }

    fn hex4(&mut self) -> Result<u16, WireError> {
        let mut v: u16 = 0;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(self.invalid()),
            };
            v = (v << 4) | u16::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    /// Transcodes a string whose opening quote is at `pos`, quotes included.
    fn string(&mut self, out: &mut BytesMut, ensure_ascii: bool) -> Result<(), WireError> {
        self.expect(b'"')?;
        out.extend_from_slice(b"\"");
        let mut start = self.pos;
        loop {
            // Whole words of plain bytes first (a quote, a backslash and a
            // control byte end a run in raw mode too).
            self.pos += plain_words_len(self.bytes.get(self.pos..).unwrap_or(&[]), false);
            let Some(b) = self.peek() else {
                return Err(self.invalid());
            };
            if b != b'"' && b != b'\\' && b >= 0x20 {
                self.pos += 1;
                continue;
            }
            // `start..pos` ends on an ASCII byte: a char boundary.
            if let Some(run) = self.text.get(start..self.pos) {
                write_escaped_body(out, run, ensure_ascii);
            }
            match b {
                b'"' => {
                    self.pos += 1;
                    out.extend_from_slice(b"\"");
                    return Ok(());
                }
                b'\\' => {
                    let esc_at = self.pos;
                    self.pos += 1;
                    let c = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let hi = self.hex4()?;
                            let cp = match hi {
                                0xD800..=0xDBFF => {
                                    if self.bytes.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                        return Err(WireError::LoneSurrogate { offset: esc_at });
                                    }
                                    self.pos += 2;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return Err(WireError::LoneSurrogate { offset: esc_at });
                                    }
                                    0x10000
                                        + ((u32::from(hi) - 0xD800) << 10)
                                        + (u32::from(lo) - 0xDC00)
                                }
                                0xDC00..=0xDFFF => {
                                    return Err(WireError::LoneSurrogate { offset: esc_at });
                                }
                                _ => u32::from(hi),
                            };
                            let c = char::from_u32(cp)
                                .ok_or(WireError::LoneSurrogate { offset: esc_at })?;
                            write_escaped_char(out, c, ensure_ascii);
                            start = self.pos;
                            continue;
                        }
                        _ => return Err(self.invalid()),
                    };
                    self.pos += 1;
                    write_escaped_char(out, c, ensure_ascii);
                    start = self.pos;
                }
                _ => {
                    // A raw control character: not allowed inside JSON strings.
                    return Err(self.invalid());
                }
            }
        }
    }

    fn digits(&mut self) -> usize {
        let s = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - s
    }

    /// Scans a number lexeme; returns it and whether it is a float lexeme.
    fn number(&mut self) -> Result<(&'s str, bool), WireError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.invalid()),
        }
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            is_float = true;
            if self.digits() == 0 {
                return Err(self.invalid());
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            is_float = true;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.invalid());
            }
        }
        let lexeme = self
            .text
            .get(start..self.pos)
            .ok_or(WireError::InvalidJson { offset: start })?;
        Ok((lexeme, is_float))
    }
}

/// Writes one scalar or opens a container; returns `Some(is_object)` when a
/// container was opened.
fn value(
    w: &mut JsonWriter<'_>,
    cur: &mut Cursor<'_>,
    stack: &mut Stack,
) -> Result<Option<bool>, WireError> {
    let style = w.style();
    match cur.peek() {
        Some(b'{') => {
            stack.push(true)?;
            cur.pos += 1;
            w.begin_object();
            Ok(Some(true))
        }
        Some(b'[') => {
            stack.push(false)?;
            cur.pos += 1;
            w.begin_array();
            Ok(Some(false))
        }
        Some(b'"') => {
            w.pre_value();
            cur.string(w.out_mut(), style.ensure_ascii())?;
            Ok(None)
        }
        Some(b'-' | b'0'..=b'9') => {
            let at = cur.pos;
            let (lex, is_float) = cur.number()?;
            w.pre_value();
            let out = w.out_mut();
            match style {
                Style::Compact => out.extend_from_slice(lex.as_bytes()),
                Style::Python { .. } if is_float => {
                    let v: f64 = lex
                        .parse()
                        .map_err(|_| WireError::InvalidJson { offset: at })?;
                    write_py_float(out, v)?;
                }
                Style::Python { .. } => {
                    if lex == "-0" {
                        out.extend_from_slice(b"0");
                    } else {
                        out.extend_from_slice(lex.as_bytes());
                    }
                }
            }
            Ok(None)
        }
        Some(b't') => {
            let word = cur.literal(b"true")?;
            w.pre_value();
            w.out_mut().extend_from_slice(word);
            Ok(None)
        }
        Some(b'f') => {
            let word = cur.literal(b"false")?;
            w.pre_value();
            w.out_mut().extend_from_slice(word);
            Ok(None)
        }
        Some(b'n') => {
            let word = cur.literal(b"null")?;
            w.pre_value();
            w.out_mut().extend_from_slice(word);
            Ok(None)
        }
        _ => Err(cur.invalid()),
    }
}

/// Writes an object key (cursor on its opening quote) and the key separator.
fn key(w: &mut JsonWriter<'_>, cur: &mut Cursor<'_>) -> Result<(), WireError> {
    let style = w.style();
    if cur.peek() != Some(b'"') {
        return Err(cur.invalid());
    }
    w.pre_value();
    cur.string(w.out_mut(), style.ensure_ascii())?;
    cur.skip_ws();
    cur.expect(b':')?;
    w.out_mut().extend_from_slice(style.key_sep());
    w.set_after_key();
    cur.skip_ws();
    Ok(())
}

/// Transcodes `text` (one JSON value) into `w`. May leave partial output on
/// error; the caller rolls back.
pub(crate) fn transcode(w: &mut JsonWriter<'_>, text: &str) -> Result<(), WireError> {
    let mut cur = Cursor {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    let mut stack = Stack { bits: 0, depth: 0 };
    cur.skip_ws();
    // Each turn of 'value: a value is expected at the cursor. After a scalar
    // or an empty container, the inner loop closes containers and takes
    // separators until the next value is due (or the top value is done).
    'value: loop {
        if let Some(is_object) = value(w, &mut cur, &mut stack)? {
            cur.skip_ws();
            let close = if is_object { b'}' } else { b']' };
            if cur.peek() != Some(close) {
                if is_object {
                    key(w, &mut cur)?;
                }
                continue 'value;
            }
            cur.pos += 1;
            if is_object {
                w.end_object();
            } else {
                w.end_array();
            }
            stack.pop();
        }
        // After a complete value.
        loop {
            if stack.depth == 0 {
                break 'value;
            }
            cur.skip_ws();
            let is_object = stack.top_is_object();
            match cur.peek() {
                Some(b',') => {
                    cur.pos += 1;
                    cur.skip_ws();
                    if is_object {
                        key(w, &mut cur)?;
                    }
                    continue 'value;
                }
                Some(b'}') if is_object => {
                    cur.pos += 1;
                    w.end_object();
                    stack.pop();
                }
                Some(b']') if !is_object => {
                    cur.pos += 1;
                    w.end_array();
                    stack.pop();
                }
                _ => return Err(cur.invalid()),
            }
        }
    }
    cur.skip_ws();
    if cur.pos != cur.bytes.len() {
        return Err(cur.invalid());
    }
    Ok(())
}
