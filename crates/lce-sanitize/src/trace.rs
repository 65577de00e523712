//! Stack traces in free text (D20): each is found and removed whole, its
//! header line (or the exception / panic line that introduces it), its
//! frames and its final exception line included, leaving no marker.
//!
//! One mechanism for every language, line by line:
//!
//! 1. A line **opens** a trace when it holds a header (Python
//!    `Traceback (most recent call last):`, Java `Exception in thread "`,
//!    Rust `thread '...' panicked at` / `panicked at <location>`,
//!    `stack backtrace:`, ``note: run with `RUST_BACKTRACE``, Go
//!    `goroutine N [...]:`) or is a frame on its own (Python
//!    `File "...", line N`, an indented `at ...` with a location, an
//!    indented `....go:N`, `... N more`).
//! 2. The trace **starts** at the header (text before it on the same line is
//!    kept), or, for frames and goroutine headers, at the line above that
//!    introduced them: the nearest exception name (`TypeError:`,
//!    `java.lang.IllegalStateException:`, ...; not past a blank line) or Go
//!    `panic:` / `fatal error:` within [`MAX_LOOK_BACK`] lines above; when
//!    there is none above a JavaScript/Java frame, the whole line just above
//!    it (when unsure, it is trace).
//! 3. The trace **runs** over every following line up to a blank line (so
//!    the final `ValueError: boom`, a Rust panic message, `exit status 2`
//!    go with it); past blank lines it goes on when the next line is trace
//!    again (an opener, `During handling of the above exception...`,
//!    `The above exception was the direct cause...`, `Caused by:`, ...).
//! 4. What is left: the text before each trace with trailing blanks and
//!    separators (`:`, `;`, `,`, `-`, `|`, `=`, `->`, `=>`, dashes) trimmed,
//!    and the text after it (past a blank line, and not trace) with leading
//!    blanks trimmed, joined by one `\n`.
//!    When nothing is left, the safe message of the `internal` adapter
//!    error.

use crate::adapter_error::AdapterErrorKind;

/// How many lines above an opener are searched for the line that introduced
/// it (the exception or panic line).
const MAX_LOOK_BACK: usize = 8;

/// What introduces a trace, searched above its opener.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Intro {
    /// Nothing: the trace starts at its opener.
    None,
    /// An exception line (`TypeError: x`, `java.lang.X: y`) in the block of
    /// text just above; else the line just above (JavaScript, Java frames).
    Exception,
    /// A Go `panic:` / `fatal error:` line, blank lines allowed in between.
    Panic,
}

/// One line: where it starts, its content (no `\n`, no `\r` before it), and
/// where the next one starts.
struct Line<'a> {
    start: usize,
    text: &'a str,
    next: usize,
}

fn split_lines(s: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for raw in s.split_inclusive('\n') {
        let next = start + raw.len();
        let text = raw.strip_suffix('\n').unwrap_or(raw);
        let text = text.strip_suffix('\r').unwrap_or(text);
        out.push(Line { start, text, next });
        start = next;
    }
    out
}

fn is_blank(l: &str) -> bool {
    l.trim().is_empty()
}

fn starts_with_digit(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_digit)
}

/// `pat` then a digit at the start of `t`.
fn starts_with_then_digit(t: &str, pat: &str) -> bool {
    t.strip_prefix(pat).is_some_and(starts_with_digit)
}

/// A source location (`:12`) or a frame without one (`Native Method`, ...).
fn has_location(t: &str) -> bool {
    let b = t.as_bytes();
    b.windows(2).any(|w| w[0] == b':' && w[1].is_ascii_digit())
        || t.contains("Native Method")
        || t.contains("Unknown Source")
        || t.contains("(native)")
        || t.contains("<anonymous>")
}

/// Byte before `i` is not part of a word (identifier characters).
fn word_start(l: &str, i: usize) -> bool {
    i == 0
        || l.as_bytes()
            .get(i - 1)
            .is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
}

// ------------------------------------------------------------ openers

/// A line that is a frame on its own, and what may introduce it above.
fn frame(l: &str) -> Option<Intro> {
    let t = l.trim_start();
    let indented = t.len() < l.len();
    if t.starts_with("File \"") && t.split("\", line ").skip(1).any(starts_with_digit) {
        return Some(Intro::None);
    }
    if indented && t.starts_with("at ") && has_location(t) {
        return Some(Intro::Exception);
    }
    if indented && t.split(".go:").skip(1).any(starts_with_digit) {
        return Some(Intro::Panic);
    }
    if let Some(rest) = t.strip_prefix("... ") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest.get(digits..).is_some_and(|r| r.starts_with(" more")) {
            return Some(Intro::None);
        }
    }
    None
}

/// Python: `Traceback (most recent call last):` (and `Stack (...)` from
/// `logging`), with an exception group's `+ Exception Group ` before it.
fn python_header(l: &str) -> Option<usize> {
    let mut h = [
        "Traceback (most recent call last):",
        "Stack (most recent call last):",
    ]
    .iter()
    .filter_map(|m| l.find(m))
    .min()?;
    let before = l.get(..h).unwrap_or("");
    if let Some(b) = before.strip_suffix("Exception Group ") {
        h = b.len();
    }
    let before = l.get(..h).unwrap_or("");
    if before
        .chars()
        .all(|c| c.is_whitespace() || c == '+' || c == '|')
    {
        h = 0;
    }
    Some(h)
}

/// Rust: `thread '<name>' panicked at` (from `thread`), or `panicked at`
/// followed by a location or the old `'message'` form (from the word
/// before it).
fn rust_panic(l: &str) -> Option<usize> {
    const PANICKED: &str = "panicked at";
    let thread = l.find("thread '");
    let mut from = 0;
    while let Some(p) = l
        .get(from..)
        .and_then(|r| r.find(PANICKED))
        .map(|p| p + from)
    {
        if let Some(q) = thread.filter(|&q| q < p) {
            return Some(q);
        }
        let after = l.get(p + PANICKED.len()..).unwrap_or("");
        let token = after
            .trim_start()
            .split(char::is_whitespace)
            .next()
            .unwrap_or("");
        if after.starts_with(' ') && (token.starts_with('\'') || has_location(token)) {
            let before = l.get(..p).unwrap_or("").trim_end();
            let word = before
                .char_indices()
                .rev()
                .find(|(_, c)| c.is_whitespace())
                .map_or(0, |(i, c)| i + c.len_utf8());
            return Some(word);
        }
        from = p + PANICKED.len();
    }
    None
}

/// Go: `goroutine N [...]:`.
fn goroutine(l: &str) -> Option<usize> {
    const G: &str = "goroutine ";
    let close = l.rfind("]:")?;
    let mut from = 0;
    while let Some(p) = l.get(from..).and_then(|r| r.find(G)).map(|p| p + from) {
        let rest = l.get(p + G.len()..).unwrap_or("");
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let bracket = p + G.len() + digits;
        if digits > 0 && l.get(bracket..).is_some_and(|r| r.starts_with(" [")) && close > bracket {
            return Some(p);
        }
        from = p + G.len();
    }
    None
}

/// The earliest header in `l`: where the trace starts on this line, and
/// what may introduce it above.
fn header(l: &str) -> Option<(usize, Intro)> {
    let fixed = [
        "Exception in thread \"",
        "stack backtrace:",
        "note: run with `RUST_BACKTRACE",
    ];
    let mut best: Option<(usize, Intro)> = None;
    let mut consider = |at: Option<usize>, intro: Intro| {
        if let Some(at) = at {
            if best.is_none_or(|(b, _)| at < b) {
                best = Some((at, intro));
            }
        }
    };
    consider(python_header(l), Intro::None);
    for m in fixed {
        consider(l.find(m), Intro::None);
    }
    consider(rust_panic(l), Intro::None);
    consider(goroutine(l), Intro::Panic);
    best
}

/// Whether line `l` opens a trace: where it starts on the line, and what may
/// introduce it above. A frame starts at its line's start.
fn opener(l: &str) -> Option<(usize, Intro)> {
    match frame(l) {
        Some(intro) => Some((0, intro)),
        None => header(l),
    }
}

/// A line after blank lines that still belongs to the trace before them.
fn continues_after_gap(l: &str) -> bool {
    if opener(l).is_some() {
        return true;
    }
    let t = l.trim_start();
    [
        "During handling of the above exception",
        "The above exception was the direct cause",
        "Caused by:",
        "Suppressed:",
        "created by ",
        "[signal ",
        "note: Some details are omitted",
    ]
    .iter()
    .any(|p| t.starts_with(p))
        || starts_with_then_digit(t, "exit status ")
        || starts_with_then_digit(t, "Node.js v")
}

// ------------------------------------------------------------ intros

/// The earliest exception name in `l` followed by `:`, ` [` or the end of
/// the line: a (dotted) identifier whose last part ends in `Error`,
/// `Exception` or `Throwable` (`TypeError:`, `java.io.IOException: x`,
/// `Error [ERR_X]: y`); an `Uncaught ` before it goes with it.
fn exception_name(l: &str) -> Option<usize> {
    fn ident(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
    }
    let b = l.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts = b
            .get(i)
            .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
            && (i == 0 || b.get(i - 1).is_none_or(|&c| !(ident(c) || c == b'.')));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while b.get(j).is_some_and(|&c| ident(c) || c == b'.') {
            j += 1;
        }
        let path = l.get(i..j).unwrap_or("");
        let last = path.rsplit('.').next().unwrap_or("");
        let named = ["Error", "Exception", "Throwable"]
            .iter()
            .any(|s| last.ends_with(s));
        let rest = l.get(j..).unwrap_or("");
        if named && (rest.starts_with(':') || rest.starts_with(" [") || is_blank(rest)) {
            let before = l.get(..i).unwrap_or("");
            return Some(before.strip_suffix("Uncaught ").map_or(i, str::len));
        }
        i = j.max(i + 1);
    }
    None
}

/// The earliest Go `panic: ` or `fatal error: ` at a word start in `l`.
fn panic_line(l: &str) -> Option<usize> {
    ["panic: ", "fatal error: "]
        .iter()
        .filter_map(|m| {
            let mut from = 0;
            while let Some(p) = l.get(from..).and_then(|r| r.find(m)).map(|p| p + from) {
                if word_start(l, p) {
                    return Some(p);
                }
                from = p + m.len();
            }
            None
        })
        .min()
}

/// Where a trace opened at line `i` starts, given what may introduce it:
/// `(line, offset)` above `i` and not above `floor`, or `None` (at the
/// opener).
fn intro_start(lines: &[Line<'_>], i: usize, floor: usize, intro: Intro) -> Option<(usize, usize)> {
    let find: fn(&str) -> Option<usize> = match intro {
        Intro::None => return None,
        Intro::Exception => exception_name,
        Intro::Panic => panic_line,
    };
    let mut j = i;
    let mut looked = 0;
    while j > floor && looked < MAX_LOOK_BACK {
        j -= 1;
        looked += 1;
        let l = lines.get(j)?.text;
        if is_blank(l) {
            if intro == Intro::Exception {
                break;
            }
            continue;
        }
        if let Some(at) = find(l) {
            return Some((j, at));
        }
    }
    // A JavaScript or Java frame with no exception name above: the line just
    // above is its message.
    let above = i.checked_sub(1).filter(|&a| a >= floor)?;
    (intro == Intro::Exception && !is_blank(lines.get(above)?.text)).then_some((above, 0))
}

/// The last line of a trace opened at line `i`: every line up to a blank
/// one, and on past blank lines while the next line is trace again.
fn trace_end(lines: &[Line<'_>], i: usize) -> usize {
    let mut last = i;
    let mut k = i + 1;
    while let Some(line) = lines.get(k) {
        if !is_blank(line.text) {
            last = k;
            k += 1;
            continue;
        }
        let mut m = k;
        while lines.get(m).is_some_and(|l| is_blank(l.text)) {
            m += 1;
        }
        match lines.get(m) {
            Some(l) if continues_after_gap(l.text) => {
                last = m;
                k = m + 1;
            }
            _ => break,
        }
    }
    last
}

// ------------------------------------------------------------ removal

/// The text before a removed trace, without the blanks and separators that
/// led into it (`upstream: ` -> `upstream`).
fn trim_lead_in(mut s: &str) -> &str {
    loop {
        let t = s.trim_end();
        let t = t
            .strip_suffix("->")
            .or_else(|| t.strip_suffix("=>"))
            .or_else(|| t.strip_suffix([':', ';', ',', '-', '|', '=', '\u{2013}', '\u{2014}']))
            .unwrap_or(t);
        if t.len() == s.len() {
            return s;
        }
        s = t;
    }
}

/// Removes every stack trace in `s` (see the module documentation), adding
/// one to `n` per trace removed. `None` when there is none.
pub(crate) fn remove_stack_traces(s: &str, n: &mut u32) -> Option<String> {
    let lines = split_lines(s);
    // Kept text: (from, to, whether a trace comes before it).
    let mut kept: Vec<(usize, usize, bool)> = Vec::new();
    let mut kept_from = 0;
    let mut floor = 0;
    let mut removed = 0u32;
    let mut i = 0;
    while let Some(line) = lines.get(i) {
        let Some((at, intro)) = opener(line.text) else {
            i += 1;
            continue;
        };
        let start = match intro_start(&lines, i, floor, intro) {
            Some((j, off)) => lines.get(j).map_or(line.start, |l| l.start + off),
            None => line.start + at,
        };
        let last = trace_end(&lines, i);
        kept.push((kept_from, start, removed > 0));
        removed = removed.saturating_add(1);
        kept_from = lines.get(last).map_or(s.len(), |l| l.next);
        floor = last + 1;
        i = last + 1;
    }
    if removed == 0 {
        return None;
    }
    *n = n.saturating_add(removed);
    let mut out = String::with_capacity(s.len());
    let tail = (kept_from, s.len(), true);
    for (k, &(from, to, after_trace)) in kept.iter().chain([&tail]).enumerate() {
        let before_trace = k < kept.len();
        let mut piece = s.get(from..to).unwrap_or("");
        if after_trace {
            piece = piece.trim_start();
        }
        if before_trace {
            piece = trim_lead_in(piece);
        }
        if is_blank(piece) {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(piece);
    }
    if out.is_empty() {
        out.push_str(AdapterErrorKind::Internal.message());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rm(s: &str) -> (String, u32) {
        let mut n = 0;
        let out = remove_stack_traces(s, &mut n).unwrap_or_else(|| s.to_owned());
        (out, n)
    }

    #[test]
    fn openers() {
        assert_eq!(
            header("x: Traceback (most recent call last):"),
            Some((3, Intro::None))
        );
        assert_eq!(
            header("  + Exception Group Traceback (most recent call last):"),
            Some((0, Intro::None))
        );
        assert_eq!(
            header("thread 'main' panicked at src/main.rs:2:5:"),
            Some((0, Intro::None))
        );
        assert_eq!(
            header("up: worker panicked at src/a.rs:1:2"),
            Some((4, Intro::None))
        );
        assert_eq!(header("the worker panicked at startup"), None);
        assert_eq!(
            header("goroutine 17 [chan receive, 2 minutes]:"),
            Some((0, Intro::Panic))
        );
        assert_eq!(header("goroutine leak [fixed]:"), None);
        // Two openers on a line: the earliest, wherever it is in the list.
        assert_eq!(
            header("x stack backtrace: Exception in thread \"main\""),
            Some((2, Intro::None))
        );
        assert_eq!(
            header("x Exception in thread \"main\" stack backtrace:"),
            Some((2, Intro::None))
        );
        assert_eq!(frame("\tat com.x.Y.z(Y.java:1)"), Some(Intro::Exception));
        assert_eq!(frame("at com.x.Y.z(Y.java:1)"), None);
        assert_eq!(frame("\t/src/main.go:5 +0x1d"), Some(Intro::Panic));
        assert_eq!(frame("  File \"/x.py\", line 3, in f"), Some(Intro::None));
        assert_eq!(frame("\t... 3 more"), Some(Intro::None));
    }

    /// A Go trace's `panic:` line is looked for up to `MAX_LOOK_BACK`
    /// lines above its first goroutine, not one more.
    #[test]
    fn the_panic_line_is_looked_for_so_far_up_and_no_further() {
        let trace = "goroutine 1 [running]:\nmain.main()\n\t/src/main.go:5 +0x1d\n";
        let text = |between: usize| {
            let fill: String = (0..between).map(|k| format!("line {k}\n")).collect();
            format!("before\npanic: boom\n{fill}{trace}")
        };
        // The panic line MAX_LOOK_BACK lines up: it and what follows go.
        assert_eq!(rm(&text(MAX_LOOK_BACK - 1)), ("before".to_owned(), 1));
        // One line further: it stays, with the lines under it.
        let fill: String = (0..MAX_LOOK_BACK).map(|k| format!("\nline {k}")).collect();
        assert_eq!(
            rm(&text(MAX_LOOK_BACK)),
            (format!("before\npanic: boom{fill}"), 1)
        );
    }

    #[test]
    fn exception_names() {
        assert_eq!(exception_name("TypeError: x"), Some(0));
        assert_eq!(
            exception_name("up: java.lang.IllegalStateException"),
            Some(4)
        );
        assert_eq!(exception_name("Uncaught Error [ERR_X]: y"), Some(0));
        assert_eq!(exception_name("an Error occurred: z"), None);
        assert_eq!(exception_name("MyError.field: z"), None);
        // A name starts at a letter, `_` or `$` after no identifier byte.
        assert_eq!(exception_name("9TypeError: x"), None);
        assert_eq!(exception_name("(TypeError: x"), Some(1));
        assert_eq!(panic_line("Don't panic: x"), Some(6));
        assert_eq!(panic_line("nopanic: x"), None);
    }

    #[test]
    fn lead_in_is_trimmed() {
        assert_eq!(trim_lead_in("upstream: "), "upstream");
        assert_eq!(trim_lead_in("a -> "), "a");
        assert_eq!(trim_lead_in("a\r\n\n"), "a");
        assert_eq!(trim_lead_in("C++"), "C++");
        assert_eq!(trim_lead_in(":: -"), "");
    }

    #[test]
    fn removes_whole_and_counts() {
        assert_eq!(rm("plain"), ("plain".to_owned(), 0));
        assert_eq!(
            rm("a\nError: x\n    at f (/a.js:1:2)\n\nb\nError: y\n    at g (/b.js:3:4)\n"),
            ("a\nb".to_owned(), 2)
        );
        assert_eq!(
            rm("   at f (/a.js:1:2)"),
            (AdapterErrorKind::Internal.message().to_owned(), 1)
        );
    }
}
