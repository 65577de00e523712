//! Character classes of D18 and UTF-8-safe byte truncation.

use std::borrow::Cow;

/// `true` for the bidirectional override and isolate characters of D18
/// (U+202A-U+202E, U+2066-U+2069).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `true` for the characters D18 replaces in display text: C0 controls
/// except `\t`, `\n`, `\r`; DEL; C1 controls; bidi overrides and isolates.
pub fn is_replaced_in_display(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => false,
        '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => true,
        _ => is_bidi_control(c),
    }
}

/// `true` for the characters rejected in identifiers, codes and names:
/// every Unicode control (`Cc`: C0, DEL, C1, `\t\n\r` included), the bidi
/// overrides and isolates, the bidi marks (U+061C, U+200E, U+200F) and the
/// line and paragraph separators (U+2028, U+2029).
pub fn is_forbidden_in_name(c: char) -> bool {
    c.is_control()
        || is_bidi_control(c)
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}'
        )
}

/// `0x01` in every byte of a `u64`.
const LO: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte of a `u64`.
const HI: u64 = 0x8080_8080_8080_8080;

/// Non-zero when a byte of `x` is below `n` (`n <= 0x80`). SWAR: no false
/// negatives, and the lowest flagged byte is a true one.
#[inline]
fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(LO * u64::from(n)) & !x & HI
}

/// Non-zero when a byte of `x` equals `b` (same guarantees as [`below`]).
#[inline]
fn has(x: u64, b: u8) -> u64 {
    let y = x ^ (LO * u64::from(b));
    y.wrapping_sub(LO) & !y & HI
}

/// The eight bytes at `i` as a `u64`; `0` (a block every scan looks at
/// closely) if there are not eight.
#[inline]
fn word(b: &[u8], i: usize) -> u64 {
    b.get(i..i.wrapping_add(8))
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_le_bytes)
}

/// A string shorter than eight bytes as a `u64`, padded with `a` (which no
/// scan looks at).
#[inline]
fn padded(b: &[u8]) -> u64 {
    let mut a = [b'a'; 8];
    for (d, s) in a.iter_mut().zip(b) {
        *d = *s;
    }
    u64::from_le_bytes(a)
}

/// `true` when the eight bytes of `x` are all printable ASCII
/// (`0x20..=0x7E`): the common case for identifiers, ruled out first.
#[inline]
fn printable_ascii(x: u64) -> bool {
    (below(x, 0x20) | has(x, 0x7F) | (x & HI)) == 0
}

/// The index of the first byte `i` for which `hit(b, i)` holds, looking
/// only inside the 8-byte blocks that `suspect` flags. `suspect` must flag
/// every block holding a byte where `hit` can hold (it may flag more). The
/// last, partial block is read as the string's last eight bytes (only its new
/// bytes are looked at), or padded when the string is shorter.
#[inline]
fn scan(
    b: &[u8],
    suspect: impl Fn(u64) -> bool,
    hit: impl Fn(&[u8], usize) -> bool,
) -> Option<usize> {
    let n = b.len();
    let mut i = 0;
    while i + 8 <= n {
        if suspect(word(b, i)) {
            if let Some(j) = (i..i + 8).find(|&j| hit(b, j)) {
                return Some(j);
            }
        }
        i += 8;
    }
    if i < n {
        let x = match n.checked_sub(8) {
            Some(last) => word(b, last),
            None => padded(b),
        };
        if suspect(x) {
            return (i..n).find(|&j| hit(b, j));
        }
    }
    None
}

/// The byte index of the first character of [`is_replaced_in_display`] in
/// `s`, if any; the same as `s.find(is_replaced_in_display)`, by a byte scan.
/// Eight bytes at a time, a block is looked at only when it holds a C0
/// control, DEL, or one of the lead bytes `0xC2` (C1: `0xC2 0x80..=0x9F`)
/// and `0xE2` (bidi: `0xE2 0x80 0xAA..=0xAE`, `0xE2 0x81 0xA6..=0xA9`): other
/// text, ASCII or not, passes at a few instructions per block. In valid
/// UTF-8 `0xC2` and `0xE2` are only lead bytes, so the index is a character
/// boundary.
pub fn find_replaced_in_display(s: &str) -> Option<usize> {
    scan(
        s.as_bytes(),
        |x| !printable_ascii(x) && below(x, 0x20) | has(x, 0x7F) | has(x, 0xC2) | has(x, 0xE2) != 0,
        |b, i| match b.get(i) {
            Some(b'\t' | b'\n' | b'\r') | None => false,
            Some(0..=0x1F | 0x7F) => true,
            Some(0xC2) => matches!(b.get(i + 1), Some(0x80..=0x9F)),
            Some(0xE2) => matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0x80), Some(0xAA..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
            ),
            Some(_) => false,
        },
    )
}

/// `true` when `s` contains a character of [`is_forbidden_in_name`]; the
/// same as `s.chars().any(is_forbidden_in_name)`, by a byte scan like
/// [`find_replaced_in_display`]'s: only blocks holding a C0 control, DEL, or
/// the lead bytes `0xC2` (C1), `0xD8` (U+061C) and `0xE2` (U+200E, U+200F,
/// U+2028-U+202E, U+2066-U+2069) are looked at closely.
pub fn contains_forbidden_in_name(s: &str) -> bool {
    scan(
        s.as_bytes(),
        |x| {
            !printable_ascii(x)
                && below(x, 0x20) | has(x, 0x7F) | has(x, 0xC2) | has(x, 0xD8) | has(x, 0xE2) != 0
        },
        |b, i| match b.get(i) {
            Some(0..=0x1F | 0x7F) => true,
            Some(0xC2) => matches!(b.get(i + 1), Some(0x80..=0x9F)),
            Some(0xD8) => b.get(i + 1) == Some(&0x9C),
            Some(0xE2) => matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0x80), Some(0x8E | 0x8F | 0xA8..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
            ),
            _ => false,
        },
    )
    .is_some()
}

/// Replaces every character of [`is_replaced_in_display`] with U+FFFD and
/// returns the text (borrowed when nothing changed) and how many were
/// replaced. Idempotent: U+FFFD is never replaced. The common case, nothing
/// to replace, is a byte scan ([`find_replaced_in_display`]) that allocates
/// nothing.
pub fn replace_display_controls(s: &str) -> (Cow<'_, str>, u32) {
    let Some(first) = find_replaced_in_display(s) else {
        return (Cow::Borrowed(s), 0);
    };
    let (head, tail) = s.split_at(first);
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(head);
    let mut n: u32 = 0;
    for c in tail.chars() {
        if is_replaced_in_display(c) {
            out.push('\u{FFFD}');
            n = n.saturating_add(1);
        } else {
            out.push(c);
        }
    }
    (Cow::Owned(out), n)
}

/// The longest prefix of `s` that is at most `max_bytes` long and ends on a
/// character boundary: truncation never splits a UTF-8 sequence.
pub fn truncate_to_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut cut = max_bytes;
    while cut > 0 && !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.get(..cut).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn display_classes() {
        for c in [
            '\u{0}', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}', '\u{202e}', '\u{2066}',
        ] {
            assert!(is_replaced_in_display(c), "{c:?}");
        }
        for c in ['\t', '\n', '\r', 'a', '\u{200e}', '\u{a0}', '\u{fffd}'] {
            assert!(!is_replaced_in_display(c), "{c:?}");
        }
        assert!(is_forbidden_in_name('\t'));
        assert!(is_forbidden_in_name('\u{200f}'));
        assert!(!is_forbidden_in_name('é'));
    }

    #[test]
    fn replace_counts() {
        let (t, n) = replace_display_controls("a\u{1}b\u{202e}c\n");
        assert_eq!(t, "a\u{fffd}b\u{fffd}c\n");
        assert_eq!(n, 2);
        assert!(matches!(
            replace_display_controls("plain").0,
            Cow::Borrowed(_)
        ));
    }

    fn interesting() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            any::<char>(),
            prop::sample::select(vec![
                '\t', '\n', '\r', '\u{0}', '\u{1f}', ' ', '~', '\u{7f}', '\u{80}', '\u{9f}',
                '\u{a0}', '\u{c0}', '\u{61b}', '\u{61c}', '\u{61d}', '\u{200d}', '\u{200e}',
                '\u{200f}', '\u{2010}', '\u{2027}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}',
                '\u{202f}', '\u{2065}', '\u{2066}', '\u{2069}', '\u{206a}', '\u{fffd}', 'é', '😀',
                'a',
            ]),
            Just('x'),
        ];
        prop::collection::vec(c, 0..40).prop_map(|v| v.into_iter().collect())
    }

    /// The char-by-char replacement this module used before the byte scan:
    /// the reference the fast path must match exactly.
    fn replace_by_chars(s: &str) -> (String, u32) {
        let mut n = 0u32;
        let out = s
            .chars()
            .map(|c| {
                if is_replaced_in_display(c) {
                    n += 1;
                    '\u{FFFD}'
                } else {
                    c
                }
            })
            .collect();
        (out, n)
    }

    proptest! {
        #[test]
        fn byte_scans_match_char_scans(s in interesting(), t in any::<String>()) {
            for s in [&s, &t] {
                let (fast, n) = replace_display_controls(s);
                prop_assert_eq!((fast.into_owned(), n), replace_by_chars(s));
                prop_assert_eq!(find_replaced_in_display(s), s.find(is_replaced_in_display));
                prop_assert_eq!(
                    contains_forbidden_in_name(s),
                    s.chars().any(is_forbidden_in_name)
                );
            }
        }
    }

    #[test]
    fn byte_scans_every_char() {
        // Each scalar value alone, and behind 6, 7 and 8 bytes of ASCII: in
        // the tail, across a block boundary, at a block's start.
        for c in ('\u{0}'..='\u{3000}').chain(['\u{fffd}', '\u{10ffff}']) {
            for pre in ["", "abcdef", "abcdefg", "abcdefgh"] {
                let s = format!("{pre}{c}zz");
                assert_eq!(
                    find_replaced_in_display(&s),
                    s.find(is_replaced_in_display),
                    "{c:?}"
                );
                assert_eq!(
                    contains_forbidden_in_name(&s),
                    s.chars().any(is_forbidden_in_name),
                    "{c:?}"
                );
            }
        }
    }

    #[test]
    fn truncation_keeps_boundaries() {
        assert_eq!(truncate_to_bytes("héllo", 2), "h");
        assert_eq!(truncate_to_bytes("héllo", 3), "hé");
        assert_eq!(truncate_to_bytes("😀", 3), "");
        assert_eq!(truncate_to_bytes("abc", 0), "");
        assert_eq!(truncate_to_bytes("abc", 9), "abc");
    }
}
