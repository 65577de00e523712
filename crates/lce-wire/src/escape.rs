//! JSON string escaping in the three styles.
//!
//! The hot loop scans bytes against a 256-entry class table and copies every
//! run of bytes that needs no escape with one `extend_from_slice`.

use bytes::BytesMut;

/// Class of a byte: copy as is.
const OK: u8 = 0;
/// Class of a byte: write as `\u00xx`.
const U: u8 = b'u';
/// Class of a byte: lead byte of a non-ASCII char that must be written as
/// `\uXXXX` (or a surrogate pair). Only in the ASCII table.
const N: u8 = b'N';

const HEX: &[u8; 16] = b"0123456789abcdef";

const fn build_table(ensure_ascii: bool) -> [u8; 256] {
    let mut t = [OK; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = U;
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    if ensure_ascii {
        t[0x7f] = U;
        let mut i = 0x80;
        while i < 0x100 {
            t[i] = N;
            i += 1;
        }
    }
    t
}

/// Escape classes for `ensure_ascii=True` (Python default).
static TABLE_ASCII: [u8; 256] = build_table(true);
/// Escape classes for raw UTF-8 output (Python `ensure_ascii=False`, serde_json).
static TABLE_RAW: [u8; 256] = build_table(false);

/// Where escapes and the short runs between them are staged before one
/// `extend_from_slice`: text with many escapes (non-ASCII under
/// `ensure_ascii`) otherwise pays a capacity check and a `memcpy` call for
/// every run and every escape.
struct Staging {
    buf: [u8; 64],
    len: usize,
}

/// The most bytes one step writes into the staging buffer: a surrogate
/// pair (`\uXXXX\uXXXX`).
const MAX_STEP: usize = 12;

impl Staging {
    fn new() -> Self {
        Staging {
            buf: [0; 64],
            len: 0,
        }
    }

    /// Moves the staged bytes to `out`.
    #[inline]
    fn flush(&mut self, out: &mut BytesMut) {
        if let Some(staged) = self.buf.get(..self.len) {
            out.extend_from_slice(staged);
        }
        self.len = 0;
    }

    /// Makes room for one step.
    #[inline]
    fn room(&mut self, out: &mut BytesMut) {
        if self.len > self.buf.len() - MAX_STEP {
            self.flush(out);
        }
    }

    #[inline]
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    /// `\uXXXX` for one UTF-16 code unit, lowercase hex.
    #[inline]
    fn push_u16_escape(&mut self, cu: u16) {
        let e = [
            b'\\',
            b'u',
            HEX[usize::from(cu >> 12)],
            HEX[usize::from((cu >> 8) & 0xf)],
            HEX[usize::from((cu >> 4) & 0xf)],
            HEX[usize::from(cu & 0xf)],
        ];
        if let Some(slot) = self.buf.get_mut(self.len..self.len + 6) {
            slot.copy_from_slice(&e);
            self.len += 6;
        }
    }
}

/// The code point of the UTF-8 char whose lead byte is at `i` in `bytes`
/// (valid UTF-8: a `str`'s bytes), and its length.
#[inline]
fn decode_at(bytes: &[u8], i: usize) -> (u32, usize) {
    let at = |k: usize| u32::from(bytes.get(i + k).copied().unwrap_or(0) & 0x3f);
    let lead = u32::from(bytes.get(i).copied().unwrap_or(0));
    if lead < 0x80 {
        (lead, 1)
    } else if lead < 0xe0 {
        (((lead & 0x1f) << 6) | at(1), 2)
    } else if lead < 0xf0 {
        (((lead & 0x0f) << 12) | (at(1) << 6) | at(2), 3)
    } else {
        (
            ((lead & 0x07) << 18) | (at(1) << 12) | (at(2) << 6) | at(3),
            4,
        )
    }
}

/// Writes the body of a JSON string (no quotes) for `s`.
///
/// `ensure_ascii`: escape every code point above U+007E (DEL included) as
/// `\uXXXX`; otherwise non-ASCII, DEL, U+2028 and U+2029 are copied raw.
pub(crate) fn write_escaped_body(out: &mut BytesMut, s: &str, ensure_ascii: bool) {
    let table = if ensure_ascii {
        &TABLE_ASCII
    } else {
        &TABLE_RAW
    };
    let bytes = s.as_bytes();
    // Most strings (keys, ids, ASCII text) need no escape at all: one copy.
    let plain = plain_words_len(bytes, ensure_ascii);
    let tail = bytes.get(plain..).unwrap_or(&[]);
    if tail.len() < 8 && tail.iter().all(|&b| table[usize::from(b)] == OK) {
        out.extend_from_slice(bytes);
        return;
    }
    let mut staged = Staging::new();
    let mut i = 0usize;
    while i < bytes.len() {
        // Copy eight bytes at a time while none needs an escape (most text),
        // straight to `out` after what is staged.
        let plain = plain_words_len(bytes.get(i..).unwrap_or(&[]), ensure_ascii);
        if plain > 0 {
            staged.flush(out);
            if let Some(run) = bytes.get(i..i + plain) {
                out.extend_from_slice(run);
            }
            i += plain;
        }
        // Then byte by byte, staged, through the word that holds an escape.
        let stop = i.saturating_add(8).min(bytes.len());
        while i < stop {
            let Some(&b) = bytes.get(i) else { break };
            staged.room(out);
            match table[usize::from(b)] {
                OK => {
                    staged.push(b);
                    i += 1;
                }
                U => {
                    staged.push_u16_escape(u16::from(b));
                    i += 1;
                }
                N => {
                    // `i` is always on a char boundary: steps end only after
                    // ASCII bytes or whole chars.
                    let (cp, len) = decode_at(bytes, i);
                    if let Ok(cu) = u16::try_from(cp) {
                        staged.push_u16_escape(cu);
                    } else {
                        let v = cp - 0x1_0000;
                        // Both halves fit in 16 bits: `v` < 2^20.
                        staged.push_u16_escape(0xd800 | (v >> 10) as u16);
                        staged.push_u16_escape(0xdc00 | (v & 0x3ff) as u16);
                    }
                    i += len;
                }
                short => {
                    staged.push(b'\\');
                    staged.push(short);
                    i += 1;
                }
            }
        }
    }
    staged.flush(out);
}

/// The length of the longest prefix of `bytes` made of whole eight-byte
/// words in which no byte needs an escape (see [`needs_escape`]): a lower
/// bound on where the first byte to escape can be.
#[inline]
pub(crate) fn plain_words_len(bytes: &[u8], ensure_ascii: bool) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        if needs_escape(u64::from_le_bytes(word), ensure_ascii) {
            break;
        }
        n += 8;
    }
    n
}

/// Whether any of the eight bytes in `word` needs an escape: a C0 control,
/// `"` or `\\`, and with `ensure_ascii` also DEL and every byte of a
/// non-ASCII char. May say `true` for a word that holds none only after a
/// byte that does (borrows run upward), never `false` for one that does.
#[inline]
fn needs_escape(word: u64, ensure_ascii: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let mut hit = control | quote | backslash;
    if ensure_ascii {
        hit |= (word & HIGH) | zero_byte(word ^ (ONES * 0x7f));
    }
    hit != 0
}

/// Writes one char of a decoded string body.
#[inline]
pub(crate) fn write_escaped_char(out: &mut BytesMut, c: char, ensure_ascii: bool) {
    let mut buf = [0u8; 4];
    write_escaped_body(out, c.encode_utf8(&mut buf), ensure_ascii);
}

/// Writes `s` as a quoted JSON string.
#[inline]
pub(crate) fn write_quoted(out: &mut BytesMut, s: &str, ensure_ascii: bool) {
    out.reserve(s.len() + 2);
    out.extend_from_slice(b"\"");
    write_escaped_body(out, s, ensure_ascii);
    out.extend_from_slice(b"\"");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `\uXXXX` for each UTF-16 unit of `c`, lowercase hex.
    fn push_char_escape(out: &mut BytesMut, c: char) {
        let mut units = [0u16; 2];
        for cu in c.encode_utf16(&mut units).iter() {
            out.extend_from_slice(format!("\\u{cu:04x}").as_bytes());
        }
    }

    /// The escaping rules, one char at a time, without tables or word scans.
    fn reference(s: &str, ensure_ascii: bool) -> Vec<u8> {
        let mut out = BytesMut::new();
        for c in s.chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\r' => out.extend_from_slice(b"\\r"),
                '\t' => out.extend_from_slice(b"\\t"),
                '\u{8}' => out.extend_from_slice(b"\\b"),
                '\u{c}' => out.extend_from_slice(b"\\f"),
                c if (c as u32) < 0x20 || (ensure_ascii && (c as u32) >= 0x7f) => {
                    push_char_escape(&mut out, c);
                }
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        out.to_vec()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn word_scan_matches_reference(
            s in "([a-z ]{0,12}|[\"\\\\\u{0}-\u{1f}\u{7f}\u{80}-\u{9f}é€😀\u{2028}])*",
            ensure_ascii: bool,
        ) {
            let mut out = BytesMut::new();
            write_escaped_body(&mut out, &s, ensure_ascii);
            prop_assert_eq!(out.to_vec(), reference(&s, ensure_ascii));
        }

        /// Long runs of escapes and short plain runs: the staging buffer
        /// fills and flushes at every offset.
        #[test]
        fn long_escape_runs_match_reference(
            parts in prop::collection::vec("[a-z]{0,3}|😀|é|\u{1}|\"|€|[a-z ]{8,20}", 0..300),
            ensure_ascii: bool,
        ) {
            let s = parts.concat();
            let mut out = BytesMut::new();
            write_escaped_body(&mut out, &s, ensure_ascii);
            prop_assert_eq!(out.to_vec(), reference(&s, ensure_ascii));
        }

        #[test]
        fn any_string_matches_reference(s in any::<String>(), ensure_ascii: bool) {
            let mut out = BytesMut::new();
            write_escaped_body(&mut out, &s, ensure_ascii);
            prop_assert_eq!(out.to_vec(), reference(&s, ensure_ascii));
        }
    }

    #[test]
    fn every_byte_at_every_offset_of_a_word() {
        for ensure_ascii in [false, true] {
            for c in (0u32..0x100).filter_map(char::from_u32) {
                for at in 0..17 {
                    let mut s = "a".repeat(at);
                    s.push(c);
                    s.push_str("bcdefghijklmnop");
                    let mut out = BytesMut::new();
                    write_escaped_body(&mut out, &s, ensure_ascii);
                    assert_eq!(out.to_vec(), reference(&s, ensure_ascii), "{c:?} at {at}");
                }
            }
        }
    }
}
