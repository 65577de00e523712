//! JSON string text, written by hand (no serde here).

use std::fmt::Write as _;

/// `s` as a JSON string literal, quotes included: `"`, `\` and the control
/// characters escaped (`\n`, `\t`, `\r`, else `\u00XX`), everything else
/// (non-ASCII included) as is. For building the `data` of
/// [`RunBuilder::event`](crate::RunBuilder::event) by hand.
///
/// ```
/// assert_eq!(lce_testkit::json_string("a \"b\"\n"), r#""a \"b\"\n""#);
/// ```
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_into(&mut out, s);
    out.push('"');
    out
}

/// Appends `s` to `out` as the inside of a JSON string.
pub(crate) fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_requires_and_nothing_else() {
        assert_eq!(json_string(""), "\"\"");
        assert_eq!(
            json_string("q\"b\\n\nt\tr\r\u{1}\u{1f}é東🚀\u{7f}\u{2028}"),
            "\"q\\\"b\\\\n\\nt\\tr\\r\\u0001\\u001fé東🚀\u{7f}\u{2028}\""
        );
    }
}
