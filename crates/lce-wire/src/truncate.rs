//! Display truncation of tool results (wire-formats §6).

use std::borrow::Cow;

/// How many code points of a tool result DA keeps (`custom` and `agui`).
pub const DA_RESULT_DISPLAY_CHARS: usize = 2000;

/// Cuts `s` to its first `max_chars` Unicode code points followed by
/// `...[N chars]`, N being the number of code points cut off, when `s` has
/// more than `max_chars` code points; otherwise returns `s` borrowed.
///
/// Counts code points as Python does (`len(str)`), never splits a UTF-8
/// sequence, and does no counting at all when `s.len() <= max_chars` bytes.
pub fn truncate_display(s: &str, max_chars: usize) -> Cow<'_, str> {
    if s.len() <= max_chars {
        return Cow::Borrowed(s);
    }
    // Mostly ASCII: then the cut is at byte `max_chars` (checked a word at
    // a time), else decode chars up to it.
    let cut = if s.as_bytes().get(..max_chars).is_some_and(<[u8]>::is_ascii) {
        max_chars
    } else {
        let Some((cut, _)) = s.char_indices().nth(max_chars) else {
            return Cow::Borrowed(s);
        };
        cut
    };
    let (kept, rest) = s.split_at(cut);
    let n = rest.chars().count();
    let n_text = n.to_string();
    let mut t = String::with_capacity(kept.len() + n_text.len() + 11);
    t.push_str(kept);
    t.push_str("...[");
    t.push_str(&n_text);
    t.push_str(" chars]");
    Cow::Owned(t)
}
