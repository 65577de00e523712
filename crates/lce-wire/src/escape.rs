//! JSON string escaping in the three styles.
//!
//! Strings are scanned eight bytes at a time (SWAR on a `u64`) for the next
//! byte that needs an escape. Output is staged in a small stack buffer
//! ([`Stage`]) with whole-word stores: the plain bytes before an escape are
//! stored as the word they were scanned in, escapes as one word each, and the
//! stage goes to the [`BytesMut`] with one `extend_from_slice`. Long runs
//! of plain bytes are copied straight from the source instead.

use bytes::BytesMut;

/// `0x01` in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Two lowercase hex digits for every byte value, the high digit first
/// (as a little-endian `u16`).
static HEX_PAIRS: [u16; 256] = build_hex_pairs();

const fn build_hex_pairs() -> [u16; 256] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = HEX[i >> 4] as u16 | ((HEX[i & 0xf] as u16) << 8);
        i += 1;
    }
    t
}

/// `\uXXXX` (lowercase hex) for the UTF-16 code unit `cu`, in the low six
/// bytes of a little-endian word.
#[inline]
fn u_escape(cu: u32) -> u64 {
    let hi = u64::from(HEX_PAIRS[((cu >> 8) & 0xff) as usize]);
    let lo = u64::from(HEX_PAIRS[(cu & 0xff) as usize]);
    0x755c | (hi << 16) | (lo << 32)
}

/// An escape word: the escape's bytes from the low end, its length in the
/// top byte.
const fn esc_word(bytes: u64, len: u64) -> u64 {
    bytes | (len << 56)
}

/// `\u00xx` for a byte below 0x80, as [`u_escape`] but usable in a `const`.
const fn u_escape_const(b: usize) -> u64 {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    0x3030_755c | ((HEX[b >> 4] as u64) << 32) | ((HEX[b & 0xf] as u64) << 40)
}

/// The escape word of every ASCII byte: 0 for bytes copied as they are,
/// else the escape's bytes and length (see [`esc_word`]). DEL is escaped
/// here; only [`escape_mask`] with `ensure_ascii` ever stops on it.
static ASCII_ESC: [u64; 128] = build_ascii_esc();

const fn build_ascii_esc() -> [u64; 128] {
    let mut t = [0u64; 128];
    let mut i = 0;
    while i < 0x20 {
        t[i] = esc_word(u_escape_const(i), 6);
        i += 1;
    }
    t[0x7f] = esc_word(u_escape_const(0x7f), 6);
    let short: [(usize, u8); 7] = [
        (0x08, b'b'),
        (0x09, b't'),
        (0x0a, b'n'),
        (0x0c, b'f'),
        (0x0d, b'r'),
        (b'"' as usize, b'"'),
        (b'\\' as usize, b'\\'),
    ];
    let mut k = 0;
    while k < short.len() {
        let (b, c) = short[k];
        t[b] = esc_word(b'\\' as u64 | ((c as u64) << 8), 2);
        k += 1;
    }
    t
}

/// The bytes of `word` (little-endian: byte 0 is the first) that need an
/// escape, as their high bits: a C0 control, `"` or `\\`, and with
/// `ASCII` (`ensure_ascii`) also DEL and every byte above 0x7f.
///
/// Only the lowest set bit is exact: bits above it may be set for bytes that
/// need no escape (borrows and carries run upward), never the other way.
#[inline]
fn escape_mask<const ASCII: bool>(word: u64) -> u64 {
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let mut hit = control | quote | backslash;
    if ASCII {
        // 0x7f + 1 sets the high bit; bytes above 0x7f have it already.
        hit |= (word | word.wrapping_add(ONES)) & HIGH;
    }
    hit
}

/// The eight bytes of `chunk` (exactly eight long) as a little-endian word.
#[inline]
fn load8(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    if let Some(src) = chunk.get(..8) {
        w.copy_from_slice(src);
    }
    u64::from_le_bytes(w)
}

/// The bytes `i..` of `bytes` (one to seven of them) in the low bytes of a
/// word, zero above: zero bytes count as controls in [`escape_mask`], so
/// the caller must ignore hits at or above the tail's length.
#[inline]
fn load_tail(bytes: &[u8], i: usize) -> u64 {
    let n = bytes.len();
    let rem = n.saturating_sub(i);
    if n >= 8 {
        // The string's last eight bytes, shifted down past those already
        // scanned.
        let last = load8(bytes.get(n - 8..).unwrap_or(&[]));
        return last >> (8 * (8 - rem.clamp(1, 7)));
    }
    let t = bytes.get(i..).unwrap_or(&[]);
    // Two overlapping loads cover the tail; the overlap ORs equal bytes.
    let load4 = |k: usize| {
        t.get(k..k + 4)
            .and_then(|s| <[u8; 4]>::try_from(s).ok())
            .map_or(0, |w| u64::from(u32::from_le_bytes(w)))
    };
    let load2 = |k: usize| {
        t.get(k..k + 2)
            .and_then(|s| <[u8; 2]>::try_from(s).ok())
            .map_or(0, |w| u64::from(u16::from_le_bytes(w)))
    };
    if rem >= 4 {
        let h = rem - 4;
        load4(0) | (load4(h) << (8 * h))
    } else if rem >= 2 {
        let h = rem - 2;
        load2(0) | (load2(h) << (8 * h))
    } else {
        t.first().map_or(0, |&b| u64::from(b))
    }
}

/// The code point of the UTF-8 char whose lead byte (at least 0xc0) is at
/// `i` in `bytes` (valid UTF-8: a `str`'s bytes), and its length.
#[inline]
fn decode_at(bytes: &[u8], i: usize) -> (u32, usize) {
    let at = |k: usize| u32::from(bytes.get(i + k).copied().unwrap_or(0) & 0x3f);
    let lead = u32::from(bytes.get(i).copied().unwrap_or(0));
    if lead < 0xe0 {
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

/// Bytes the stage holds before it is flushed.
const STAGE: usize = 128;
/// Bytes one step may write past [`STAGE`]: a word store (8), up to seven
/// plain bytes kept of it, then a surrogate pair written as two word stores
/// six bytes apart (14).
const SLACK: usize = 32;
/// A run of plain bytes at least this long is copied straight from the
/// source rather than staged word by word.
const LONG_RUN: usize = 32;

/// Where JSON text is put together before one `extend_from_slice` to the
/// output: escaped text otherwise pays a capacity check and a `memcpy` call
/// for every plain run and every escape.
///
/// Every write is a whole eight-byte word store at the end of what is
/// staged, of which only the first `len` bytes are kept; the bytes past
/// them are overwritten by the next write. Callers make room with
/// [`room`](Self::room) before each step.
pub(crate) struct Stage {
    buf: StageBuf,
    len: usize,
}

impl Stage {
    /// An empty stage.
    #[inline]
    pub(crate) fn new() -> Self {
        Stage {
            buf: [0; STAGE + SLACK],
            len: 0,
        }
    }

    /// Moves the staged bytes to `out`.
    #[inline]
    pub(crate) fn flush(&mut self, out: &mut BytesMut) {
        flush_buf(&self.buf, &mut self.len, out);
    }

    /// Appends the first `len` (at most eight) bytes of the little-endian
    /// `word`.
    #[inline]
    pub(crate) fn put(&mut self, out: &mut BytesMut, word: u64, len: usize) {
        make_room(&self.buf, &mut self.len, out);
        put8(&mut self.buf, self.len, word);
        self.len += len.min(8);
    }

    /// Appends the escaped body of `s` (no quotes): see
    /// [`write_escaped_body`].
    #[inline]
    pub(crate) fn escaped(&mut self, out: &mut BytesMut, s: &str, ensure_ascii: bool) {
        if ensure_ascii {
            self.escaped_in::<true>(out, s.as_bytes());
        } else {
            self.escaped_in::<false>(out, s.as_bytes());
        }
    }

    fn escaped_in<const ASCII: bool>(&mut self, out: &mut BytesMut, bytes: &[u8]) {
        // The length lives in a local while the stage fills: stores into
        // `buf` would otherwise make the compiler reload it after each one.
        let buf = &mut self.buf;
        let mut len = self.len;
        let n = bytes.len();
        let mut i = 0;
        while i < n {
            make_room(buf, &mut len, out);
            let (word, avail) = match bytes.get(i..i + 8) {
                Some(chunk) => (load8(chunk), 8),
                None => (load_tail(bytes, i), n - i),
            };
            let hits = escape_mask::<ASCII>(word);
            if hits == 0 {
                // Eight plain bytes (a tail always has a hit: its zero
                // padding), maybe the start of a long run.
                let run = 8 + plain_len::<ASCII>(bytes.get(i + 8..).unwrap_or(&[]));
                if run >= LONG_RUN {
                    flush_buf(buf, &mut len, out);
                    if let Some(plain) = bytes.get(i..i + run) {
                        out.extend_from_slice(plain);
                    }
                } else {
                    put8(buf, len, word);
                    len += 8;
                    for chunk in bytes.get(i + 8..i + run).unwrap_or(&[]).chunks_exact(8) {
                        make_room(buf, &mut len, out);
                        put8(buf, len, load8(chunk));
                        len += 8;
                    }
                }
                i += run;
                continue;
            }
            // The plain bytes before the first hit, stored with the word.
            let k = (hits.trailing_zeros() / 8) as usize;
            put8(buf, len, word);
            if k >= avail {
                len += avail;
                break;
            }
            len += k;
            i += k;
            // The escape at `i`, and those right after it. `i` is always on
            // a char boundary: steps end only after ASCII bytes or whole
            // chars.
            while let Some(&b) = bytes.get(i) {
                if b < 0x80 {
                    let e = ASCII_ESC[usize::from(b)];
                    if e == 0 || (!ASCII && b == 0x7f) {
                        break;
                    }
                    put8(buf, len, e);
                    len += (e >> 56) as usize;
                    i += 1;
                } else if ASCII {
                    let (cp, clen) = decode_at(bytes, i);
                    if cp < 0x1_0000 {
                        put8(buf, len, u_escape(cp));
                        len += 6;
                    } else {
                        let v = cp - 0x1_0000;
                        put8(buf, len, u_escape(0xd800 | (v >> 10)));
                        put8(buf, len + 6, u_escape(0xdc00 | (v & 0x3ff)));
                        len += 12;
                    }
                    i += clen;
                } else {
                    break;
                }
                make_room(buf, &mut len, out);
            }
        }
        self.len = len;
    }
}

/// The stage's buffer.
type StageBuf = [u8; STAGE + SLACK];

/// Moves the `len` staged bytes of `buf` to `out`.
#[inline]
fn flush_buf(buf: &StageBuf, len: &mut usize, out: &mut BytesMut) {
    if let Some(staged) = buf.get(..*len) {
        out.extend_from_slice(staged);
    }
    *len = 0;
}

/// Flushes when the next step might not fit.
#[inline]
fn make_room(buf: &StageBuf, len: &mut usize, out: &mut BytesMut) {
    if *len > STAGE {
        flush_buf(buf, len, out);
    }
}

/// Stores `word` at `at`; the caller then keeps some of its bytes.
#[inline]
fn put8(buf: &mut StageBuf, at: usize, word: u64) {
    if let Some(slot) = buf.get_mut(at..at + 8) {
        slot.copy_from_slice(&word.to_le_bytes());
    }
}

/// The length of the longest prefix of `bytes` made of whole eight-byte
/// words in which no byte needs an escape (see [`escape_mask`]): a lower
/// bound on where the first byte to escape can be.
#[inline]
fn plain_len<const ASCII: bool>(bytes: &[u8]) -> usize {
    let mut n = 0;
    for chunk in bytes.chunks_exact(8) {
        if escape_mask::<ASCII>(load8(chunk)) != 0 {
            break;
        }
        n += 8;
    }
    n
}

/// [`plain_len`] with the style chosen at run time.
#[inline]
pub(crate) fn plain_words_len(bytes: &[u8], ensure_ascii: bool) -> usize {
    if ensure_ascii {
        plain_len::<true>(bytes)
    } else {
        plain_len::<false>(bytes)
    }
}

/// Writes the body of a JSON string (no quotes) for `s`.
///
/// `ensure_ascii`: escape every code point above U+007E (DEL included) as
/// `\uXXXX`; otherwise non-ASCII, DEL, U+2028 and U+2029 are copied raw.
pub(crate) fn write_escaped_body(out: &mut BytesMut, s: &str, ensure_ascii: bool) {
    let mut stage = Stage::new();
    stage.escaped(out, s, ensure_ascii);
    stage.flush(out);
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
    let mut stage = Stage::new();
    stage.put(out, u64::from(b'"'), 1);
    stage.escaped(out, s, ensure_ascii);
    stage.put(out, u64::from(b'"'), 1);
    stage.flush(out);
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

    /// The plain prefix counts whole words up to the first that needs an
    /// escape, in both styles: a DEL or a byte above 0x7f ends it only with
    /// `ensure_ascii`.
    #[test]
    fn plain_words_stop_at_the_first_word_to_escape() {
        let text = b"abcdefghijklmnop\x7fqrstuvwxyz0123456\"";
        assert_eq!(plain_words_len(text, false), 32);
        assert_eq!(plain_words_len(text, true), 16);
        assert_eq!(plain_words_len("0123456789abcdé".as_bytes(), false), 16);
        assert_eq!(plain_words_len("0123456789abcdé".as_bytes(), true), 8);
        assert_eq!(plain_words_len(b"0123456", false), 0);
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

    /// Whether the byte `b` needs an escape, byte by byte.
    fn byte_needs_escape(b: u8, ensure_ascii: bool) -> bool {
        b < 0x20 || b == b'"' || b == b'\\' || (ensure_ascii && b >= 0x7f)
    }

    /// Interesting bytes for word scans: every escape class and its
    /// neighbours.
    fn edge_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            Just(0x00u8),
            Just(0x1f),
            Just(0x20),
            Just(0x21),
            Just(b'"'),
            Just(0x23),
            Just(0x5b),
            Just(b'\\'),
            Just(0x5d),
            Just(0x7e),
            Just(0x7f),
            Just(0x80),
            Just(0xbf),
            Just(0xc3),
            Just(0xf0),
            Just(0xff),
            any::<u8>(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The lowest hit of the word scan is the first byte that needs an
        /// escape, and a word without one has no hit.
        #[test]
        fn escape_mask_lowest_hit_is_exact(
            bytes in prop::array::uniform8(edge_byte()),
            ensure_ascii: bool,
        ) {
            let word = u64::from_le_bytes(bytes);
            let mask = if ensure_ascii {
                escape_mask::<true>(word)
            } else {
                escape_mask::<false>(word)
            };
            let first = bytes.iter().position(|&b| byte_needs_escape(b, ensure_ascii));
            match first {
                None => prop_assert_eq!(mask, 0),
                Some(k) => prop_assert_eq!(mask.trailing_zeros() as usize / 8, k),
            }
        }
    }

    /// Every escape class (and a plain byte) at every position of strings of
    /// every length 0..40: string ends, tails shorter than a word, short
    /// strings, surrogate pairs and DEL.
    #[test]
    fn every_class_at_every_position_of_every_length() {
        let classes = [
            "a",
            "\"",
            "\\",
            "\n",
            "\r",
            "\t",
            "\u{8}",
            "\u{c}",
            "\u{0}",
            "\u{1f}",
            "\u{7f}",
            "\u{80}",
            "é",
            "\u{7ff}",
            "\u{800}",
            "€",
            "\u{2028}",
            "\u{ffff}",
            "\u{10000}",
            "😀",
            "\u{10ffff}",
        ];
        for ensure_ascii in [false, true] {
            for len in 0..40usize {
                for class in classes {
                    for at in 0..len.max(1) {
                        let mut s = "x".repeat(at.min(len));
                        if len > 0 {
                            s.push_str(class);
                            s.push_str(&"y".repeat(len - at - 1));
                        }
                        let mut out = BytesMut::new();
                        write_escaped_body(&mut out, &s, ensure_ascii);
                        assert_eq!(out.to_vec(), reference(&s, ensure_ascii), "{s:?}");
                        // And two of them in a row, then plain text.
                        let twice = format!("{s}{class}{class}z");
                        let mut out = BytesMut::new();
                        write_escaped_body(&mut out, &twice, ensure_ascii);
                        assert_eq!(out.to_vec(), reference(&twice, ensure_ascii), "{twice:?}");
                    }
                }
            }
        }
    }

    /// Strings long enough to flush the stage several times, made of one
    /// class: dense escapes, long plain runs.
    #[test]
    fn long_strings_of_one_class() {
        for ensure_ascii in [false, true] {
            for class in ["a", "\u{1}", "\"", "é", "€", "😀", "\u{7f}", "ab\n"] {
                for n in [1usize, 7, 8, 9, 31, 32, 33, 100, 300] {
                    let s = class.repeat(n);
                    let mut out = BytesMut::new();
                    write_escaped_body(&mut out, &s, ensure_ascii);
                    assert_eq!(out.to_vec(), reference(&s, ensure_ascii), "{class:?} x {n}");
                }
            }
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
