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

/// `true` when the eight bytes of `x` are all printable ASCII
/// (`0x20..=0x7E`): none of them can start a character of D18's classes.
/// Branch-free SWAR: a byte below `0x20`, `0x7F` or a byte with the high bit
/// set makes it `false` (exact: the classic "has byte less than" and "has
/// zero byte" tests have no false negatives, and no false positives for the
/// lowest such byte).
#[inline]
fn all_printable_ascii(x: u64) -> bool {
    let below_space = x.wrapping_sub(LO * 0x20) & !x;
    let y = x ^ (LO * 0x7F);
    let del = y.wrapping_sub(LO) & !y;
    (below_space | del | x) & HI == 0
}

/// The byte index of the first printable-ASCII run's end at or after
/// `from`, eight bytes at a time: every byte before the returned index is
/// printable ASCII; the returned index is the start of the first 8-byte
/// block (from `from`) that is not, or of the tail shorter than 8 bytes.
#[inline]
fn skip_printable_ascii(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(block) = b.get(i..i + 8) {
        match <[u8; 8]>::try_from(block) {
            Ok(a) if all_printable_ascii(u64::from_le_bytes(a)) => i += 8,
            _ => break,
        }
    }
    i
}

/// The byte index of the first character of [`is_replaced_in_display`] in
/// `s`, if any; the same as `s.find(is_replaced_in_display)`, by a byte scan
/// (printable ASCII is skipped eight bytes at a time; only C0 controls, DEL
/// and the lead bytes `0xC2` (C1: `0xC2 0x80..=0x9F`) and `0xE2` (bidi:
/// `0xE2 0x80 0xAA..=0xAE`, `0xE2 0x81 0xA6..=0xA9`) are looked at more
/// closely). In valid UTF-8 `0xC2` and `0xE2` only occur as lead bytes, so
/// the index is a character boundary.
pub fn find_replaced_in_display(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = skip_printable_ascii(b, 0);
    while let Some(&c) = b.get(i) {
        let hit = match c {
            b'\t' | b'\n' | b'\r' => false,
            0..=0x1F | 0x7F => true,
            0xC2 => matches!(b.get(i + 1), Some(0x80..=0x9F)),
            0xE2 => matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0x80), Some(0xAA..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
            ),
            _ => false,
        };
        if hit {
            return Some(i);
        }
        i += 1;
        if c < 0x80 {
            i = skip_printable_ascii(b, i);
        }
    }
    None
}

/// `true` when `s` contains a character of [`is_forbidden_in_name`]; the
/// same as `s.chars().any(is_forbidden_in_name)`, by a byte scan: printable
/// ASCII is skipped eight bytes at a time, and only C0 controls, DEL and the
/// lead bytes `0xC2` (C1), `0xD8` (U+061C) and `0xE2` (U+200E, U+200F,
/// U+2028-U+202E, U+2066-U+2069) are looked at more closely.
pub fn contains_forbidden_in_name(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = skip_printable_ascii(b, 0);
    while let Some(&c) = b.get(i) {
        let hit = match c {
            0..=0x1F | 0x7F => true,
            0xC2 => matches!(b.get(i + 1), Some(0x80..=0x9F)),
            0xD8 => b.get(i + 1) == Some(&0x9C),
            0xE2 => matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0x80), Some(0x8E | 0x8F | 0xA8..=0xAE)) | (Some(0x81), Some(0xA6..=0xA9))
            ),
            _ => false,
        };
        if hit {
            return true;
        }
        i += 1;
        if c < 0x80 {
            i = skip_printable_ascii(b, i);
        }
    }
    false
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
        // Each scalar value alone, and behind 8 bytes of ASCII (the
        // block-skipping path) and 7 (the tail path).
        for c in ('\u{0}'..='\u{3000}').chain(['\u{fffd}', '\u{10ffff}']) {
            for pre in ["", "abcdefgh", "abcdefg"] {
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
