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

/// Replaces every character of [`is_replaced_in_display`] with U+FFFD and
/// returns the text (borrowed when nothing changed) and how many were
/// replaced. Idempotent: U+FFFD is never replaced.
pub fn replace_display_controls(s: &str) -> (Cow<'_, str>, u32) {
    let Some(first) = s.find(is_replaced_in_display) else {
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

    #[test]
    fn truncation_keeps_boundaries() {
        assert_eq!(truncate_to_bytes("héllo", 2), "h");
        assert_eq!(truncate_to_bytes("héllo", 3), "hé");
        assert_eq!(truncate_to_bytes("😀", 3), "");
        assert_eq!(truncate_to_bytes("abc", 0), "");
        assert_eq!(truncate_to_bytes("abc", 9), "abc");
    }
}
