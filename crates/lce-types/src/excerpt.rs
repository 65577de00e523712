//! Where in a line an error is, for people: the 1-based column (in
//! characters) of a byte offset, and a short excerpt of the line with a caret
//! under that column.
//!
//! An excerpt shows the input: only a tool that shows a user their own input
//! (`lce check` does) should print one. The library's errors, and every
//! server log, stay payload-free.
//!
//! The excerpt is at most [`EXCERPT_CHARS`] characters, centred on the
//! column, with `...` where the line was cut; it is cut between characters,
//! never inside one. Control characters and the invisible characters that
//! can reorder or hide text (bidirectional controls, zero-width characters,
//! line and paragraph separators, the byte order mark) are shown escaped as
//! in Rust (`\t`, `\u{1b}`), so the excerpt is one line and shows what is
//! there; bytes that are not UTF-8 show as U+FFFD.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::RangeInclusive;

/// The longest excerpt, in characters, markers included.
pub const EXCERPT_CHARS: usize = 80;

const CUT: &str = "...";

/// A located error's excerpt: where it is and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// 1-based column, in characters of the line.
    pub column: usize,
    /// At most [`EXCERPT_CHARS`] characters of the line, escaped.
    pub text: String,
    /// Spaces, then `^` under the column's character in `text`.
    pub caret: String,
}

/// The excerpt of `line` (without its line ending) around byte `offset`.
///
/// An offset inside a character points at that character; an offset at or
/// past the end points just after the last character.
pub fn excerpt(line: &[u8], offset: usize) -> Excerpt {
    let offset = offset.min(line.len());
    let (text, before): (Cow<'_, str>, usize) = match std::str::from_utf8(line) {
        Ok(s) => {
            let mut o = offset;
            while !s.is_char_boundary(o) {
                o -= 1;
            }
            (Cow::Borrowed(s), s[..o].chars().count())
        }
        Err(_) => (
            String::from_utf8_lossy(line),
            String::from_utf8_lossy(&line[..offset]).chars().count(),
        ),
    };
    let units: Vec<Unit> = text.chars().map(Unit::of).collect();
    let n = units.len();
    let k = before.min(n);
    // The caret past the end needs a column of its own.
    let past_end = usize::from(k == n);
    let cost = |lo: usize, hi: usize, chars: usize| {
        chars + past_end + if lo > 0 { CUT.len() } else { 0 } + if hi < n { CUT.len() } else { 0 }
    };
    // Grow a window around the error's character, one character on each
    // side in turn, while it fits.
    let (mut lo, mut hi) = (k, (k + 1).min(n));
    let mut chars: usize = units[lo..hi].iter().map(|u| u.chars).sum();
    let (mut left, mut right) = (true, true);
    while left || right {
        if left {
            if lo > 0 && cost(lo - 1, hi, chars + units[lo - 1].chars) <= EXCERPT_CHARS {
                lo -= 1;
                chars += units[lo].chars;
            } else {
                left = false;
            }
        }
        if right {
            if hi < n && cost(lo, hi + 1, chars + units[hi].chars) <= EXCERPT_CHARS {
                chars += units[hi].chars;
                hi += 1;
            } else {
                right = false;
            }
        }
    }
    let mut out = String::new();
    let mut pad = 0;
    if lo > 0 {
        out.push_str(CUT);
        pad += CUT.len();
    }
    for (i, u) in units[lo..hi].iter().enumerate() {
        u.push_to(&mut out);
        if lo + i < k {
            pad += u.width;
        }
    }
    if hi < n {
        out.push_str(CUT);
    }
    Excerpt {
        column: before + 1,
        text: out,
        caret: format!("{}^", " ".repeat(pad)),
    }
}

/// One character of the line as shown: itself, or its escape.
struct Unit {
    c: char,
    escaped: bool,
    /// Characters it takes in the excerpt.
    chars: usize,
    /// Terminal columns it takes (a wide character takes two).
    width: usize,
}

impl Unit {
    fn of(c: char) -> Unit {
        if needs_escape(c) {
            let chars = escape(c).len();
            Unit {
                c,
                escaped: true,
                chars,
                width: chars,
            }
        } else {
            Unit {
                c,
                escaped: false,
                chars: 1,
                width: if is_wide(c) { 2 } else { 1 },
            }
        }
    }

    fn push_to(&self, out: &mut String) {
        if self.escaped {
            out.push_str(&escape(self.c));
        } else {
            out.push(self.c);
        }
    }
}

/// Control characters, and invisible ones that reorder or hide text.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'                  // Arabic letter mark
            | '\u{200b}'..='\u{200f}'   // zero-width space, joiners, LRM, RLM
            | '\u{2028}'..='\u{202e}'   // line/paragraph separators, bidi embeddings
            | '\u{2060}'..='\u{2069}'   // word joiner, invisible operators, bidi isolates
            | '\u{feff}' // byte order mark
        )
}

fn escape(c: char) -> String {
    match c {
        '\t' => "\\t".to_owned(),
        '\r' => "\\r".to_owned(),
        '\n' => "\\n".to_owned(),
        '\0' => "\\0".to_owned(),
        c => {
            let mut s = String::new();
            let _ = write!(s, "\\u{{{:x}}}", u32::from(c));
            s
        }
    }
}

/// East Asian wide and fullwidth characters and emoji: two terminal columns
/// (an approximation of Unicode's East Asian Width, good enough to put the
/// caret under the right character on common text).
fn is_wide(c: char) -> bool {
    let c = u32::from(c);
    WIDE.iter().any(|range| range.contains(&c))
}

/// The ranges [`is_wide`] counts two columns wide, by Unicode block.
#[rustfmt::skip]
const WIDE: [RangeInclusive<u32>; 14] = [
    0x1100..=0x115f,                    // Hangul Jamo (leading consonants)
    0x2e80..=0x303e,                    // CJK radicals, symbols and punctuation
    0x3041..=0x33ff,                    // kana, Bopomofo, Hangul compatibility jamo, CJK compatibility
    0x3400..=0x4dbf, 0x4e00..=0x9fff,   // CJK unified ideographs (extension A, then the main block)
    0xa000..=0xa4cf,                    // Yi
    0xac00..=0xd7a3,                    // Hangul syllables
    0xf900..=0xfaff, 0xfe30..=0xfe4f,   // CJK compatibility ideographs and forms
    0xff00..=0xff60, 0xffe0..=0xffe6,   // fullwidth forms and signs
    0x1f300..=0x1f64f,                  // pictographs and emoticons
    0x1f900..=0x1f9ff,                  // supplemental symbols and pictographs
    0x20000..=0x3fffd,                  // planes 2 and 3: CJK extensions
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn ex(line: &str, offset: usize) -> (usize, String, String) {
        let e = excerpt(line.as_bytes(), offset);
        (e.column, e.text, e.caret)
    }

    #[test]
    fn a_short_line_is_shown_whole() {
        let (col, text, caret) = ex(r#"{"a" 1}"#, 5);
        assert_eq!(col, 6);
        assert_eq!(text, r#"{"a" 1}"#);
        assert_eq!(caret, "     ^");
    }

    #[test]
    fn the_end_of_the_line() {
        let (col, text, caret) = ex(r#"{"a":"#, 5);
        assert_eq!(
            (col, text.as_str(), caret.as_str()),
            (6, r#"{"a":"#, "     ^")
        );
        assert_eq!(ex("", 0), (1, String::new(), "^".to_owned()));
        // Past the end: just after the last character.
        assert_eq!(ex("ab", 9).0, 3);
    }

    #[test]
    fn columns_count_characters_and_escapes_keep_the_caret_aligned() {
        // "é" is two bytes, "\t" shows as two characters.
        let line = "{\"é\":\t1,}";
        let off = line.find(",}").unwrap() + 1;
        let (col, text, caret) = ex(line, off);
        assert_eq!(col, 9);
        assert_eq!(text, "{\"é\":\\t1,}");
        assert_eq!(caret, "         ^");
        // `c` is at byte 10, character 8, and column 20 of the excerpt.
        let (col, text, caret) = ex("a\u{1b}[31mb\u{202e}c", 10);
        assert_eq!(col, 9);
        assert_eq!(text, "a\\u{1b}[31mb\\u{202e}c");
        assert_eq!(caret, format!("{}^", " ".repeat(20)));
        // Inside U+202E (bytes 7 to 9): at it.
        let (col, _, caret) = ex("a\u{1b}[31mb\u{202e}c", 9);
        assert_eq!(col, 8);
        assert_eq!(caret, format!("{}^", " ".repeat(12)));
    }

    #[test]
    fn an_offset_inside_a_character_points_at_it() {
        assert_eq!(ex("aé", 2).0, 2);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        let (col, _, caret) = ex("日本x", "日本".len());
        assert_eq!(col, 3);
        assert_eq!(caret, "    ^");
    }

    #[test]
    fn a_long_line_is_cut_around_the_column() {
        let line: String = (0..1000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let (col, text, caret) = ex(&line, 500);
        assert_eq!(col, 501);
        assert_eq!(text.chars().count(), EXCERPT_CHARS);
        assert!(text.starts_with("...") && text.ends_with("..."));
        let at = caret.len() - 1;
        assert_eq!(text[at..].chars().next(), line[500..].chars().next());
        // Centred: as much on each side, give or take one.
        let right = text.len() - at - 1;
        assert!(at.abs_diff(right) <= 1, "{at} {right}");
        // Near the start or the end: cut on one side only.
        let (_, text, caret) = ex(&line, 2);
        assert!(!text.starts_with("...") && text.ends_with("..."));
        assert_eq!(text.len(), EXCERPT_CHARS);
        assert_eq!(caret, "  ^");
        let (_, text, caret) = ex(&line, 1000);
        assert!(text.starts_with("...") && !text.ends_with("..."));
        assert_eq!(caret.len(), EXCERPT_CHARS);
        assert_eq!(text.len(), EXCERPT_CHARS - 1);
    }

    #[test]
    fn cuts_fall_between_characters_and_escapes() {
        let line = "é\u{7}".repeat(300);
        for off in [0, 1, 2, 3, 301, 450, 899, 900] {
            let e = excerpt(line.as_bytes(), off);
            assert!(e.text.chars().count() <= EXCERPT_CHARS, "{off}");
            let body = e.text.trim_start_matches("...").trim_end_matches("...");
            let body = body.replace("\\u{7}", "");
            assert!(body.chars().all(|c| c == 'é'), "{off}: {}", e.text);
        }
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        let (col, text, caret) = {
            let e = excerpt(b"ab\xffcd", 2);
            (e.column, e.text, e.caret)
        };
        assert_eq!(
            (col, text.as_str(), caret.as_str()),
            (3, "ab\u{fffd}cd", "  ^")
        );
    }
}
