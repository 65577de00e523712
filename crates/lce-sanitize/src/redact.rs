//! Redaction of secrets and stack traces from the free text adapters may
//! pass (warning, tool-error and run-error messages), D20.
//!
//! Hand-written scanning, no regular expressions: the recognised shapes are
//! listed in `docs/sanitation.md` and on [`redact`].

use std::borrow::Cow;

use crate::trace::remove_stack_traces;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// How many times the pass is repeated at most until nothing changes.
const MAX_PASSES: usize = 4;

/// Removes secrets and stack traces from `text`; borrowed when nothing was
/// found. Idempotent: `redact(&redact(x)) == redact(x)`.
///
/// Recognised (details in `docs/sanitation.md`):
/// - private keys: `-----BEGIN ... PRIVATE KEY-----` through the matching
///   `-----END ... -----` (or the end of the text);
/// - stack traces (Python, Java, JavaScript, Go, Rust): each is removed
///   whole, header, frames and final exception line included, with no
///   marker; the text before it stays (without a dangling `: `), text after
///   a blank line that is not trace stays, and when nothing is left the
///   result is the safe message of the `internal` adapter error (the rules
///   are in the `trace` module and `docs/sanitation.md`);
/// - header values: `Authorization`, `Proxy-Authorization`, `Cookie`,
///   `Set-Cookie`, `X-Api-Key` followed by `:` or `=` (to the end of the
///   line or the closing quote);
/// - `key=value` and `key: value` (quoted or not) where the key ends with
///   `password`, `passwd`, `pwd`, `secret`, `token`, `api_key`, `apikey`,
///   `api-key`, `access_key`, `secret_key`, `private_key`, `credential(s)`;
/// - `Bearer <token>` (token of 8 or more characters);
/// - credentials in URLs: `scheme://user:pass@host` -> `scheme://[REDACTED]@host`;
/// - provider keys: OpenAI / Anthropic `sk-...` (`sk-proj-`, `sk-ant-`),
///   AWS key ids (`AKIA`, `ASIA`, ... + 16), GitHub (`ghp_`, `gho_`, `ghu_`,
///   `ghs_`, `ghr_`, `github_pat_`), GitLab `glpat-`, Slack (`xoxa-`,
///   `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-`, `xapp-`), Google `AIza...`, Stripe
///   (`sk_live_`, `rk_live_`, `sk_test_`, `rk_test_`, `whsec_`), JWTs
///   (`eyJ...`.`...`.`...`);
/// - long secrets: 32 or more hex digits in a row, and 40 or more
///   base64/base64url characters in a row mixing upper case, lower case and
///   digits.
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_counted(text).0
}

/// [`redact`], also returning how many secrets and stack traces were
/// replaced or removed (0 when the text is returned borrowed).
pub fn redact_counted(text: &str) -> (Cow<'_, str>, u32) {
    let mut cur: Cow<'_, str> = Cow::Borrowed(text);
    let mut total: u32 = 0;
    for _ in 0..MAX_PASSES {
        let (next, n) = redact_pass(&cur);
        if n == 0 {
            break;
        }
        total = total.saturating_add(n);
        cur = Cow::Owned(next);
    }
    (cur, total)
}

fn redact_pass(s: &str) -> (String, u32) {
    let mut n = 0;
    let a = redact_pem(s, &mut n);
    let b = remove_stack_traces(&a, &mut n);
    let c = redact_tokens(b.as_deref().unwrap_or(&a), &mut n);
    (c, n)
}

fn sub(s: &str, a: usize, b: usize) -> &str {
    s.get(a..b).unwrap_or("")
}

fn find_from(s: &str, from: usize, pat: &str) -> Option<usize> {
    s.get(from..)?.find(pat).map(|p| p + from)
}

// ---------------------------------------------------------------- PEM keys

fn redact_pem(s: &str, n: &mut u32) -> String {
    const BEGIN: &str = "-----BEGIN ";
    let mut out = String::with_capacity(s.len());
    let mut pos = 0;
    while let Some(begin) = find_from(s, pos, BEGIN) {
        let head_start = begin + BEGIN.len();
        let header_end = find_from(s, head_start, "-----");
        let is_key = header_end.is_some_and(|h| {
            let header = sub(s, head_start, h);
            header.len() <= 100 && !header.contains('\n') && header.contains("PRIVATE KEY")
        });
        match (is_key, header_end) {
            (true, Some(h)) => {
                out.push_str(sub(s, pos, begin));
                out.push_str(REDACTED);
                *n += 1;
                let close = find_from(s, h + 5, "-----END ")
                    .and_then(|e| find_from(s, e + 9, "-----").map(|c| c + 5))
                    .unwrap_or(s.len());
                pos = close;
            }
            _ => {
                out.push_str(sub(s, pos, head_start));
                pos = head_start;
            }
        }
    }
    out.push_str(sub(s, pos, s.len()));
    out
}

// ---------------------------------------------------------------- tokens

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_key_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// Base64 and base64url characters, padding aside (`=` only ends a run).
fn is_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-')
}

fn is_bearer_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

fn starts_with_ci(b: &[u8], i: usize, pat: &str) -> bool {
    b.get(i..i + pat.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(pat.as_bytes()))
}

fn run_end(b: &[u8], from: usize, class: fn(u8) -> bool) -> usize {
    let mut j = from;
    while b.get(j).copied().is_some_and(class) {
        j += 1;
    }
    j
}

const HEADER_KEYS: &[&str] = &[
    "proxy-authorization",
    "authorization",
    "set-cookie",
    "cookie",
    "x-api-key",
];

const SECRET_KEY_SUFFIXES: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "access_key",
    "secret_key",
    "private_key",
    "credential",
    "credentials",
];

/// (prefix, tail class, minimum tail length, case-sensitive prefix)
type Prefix = (&'static str, fn(u8) -> bool, usize);

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}
fn alnum_us(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}
fn alnum_dash(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}
fn alnum_us_dash(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}
fn upper_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

const PREFIXES: &[Prefix] = &[
    ("sk-", alnum_us_dash, 20),
    ("sk_live_", alnum, 10),
    ("rk_live_", alnum, 10),
    ("sk_test_", alnum, 10),
    ("rk_test_", alnum, 10),
    ("whsec_", alnum, 10),
    ("github_pat_", alnum_us, 20),
    ("ghp_", alnum, 20),
    ("gho_", alnum, 20),
    ("ghu_", alnum, 20),
    ("ghs_", alnum, 20),
    ("ghr_", alnum, 20),
    ("glpat-", alnum_us_dash, 20),
    ("xoxa-", alnum_dash, 10),
    ("xoxb-", alnum_dash, 10),
    ("xoxp-", alnum_dash, 10),
    ("xoxr-", alnum_dash, 10),
    ("xoxs-", alnum_dash, 10),
    ("xapp-", alnum_dash, 10),
    ("AIza", alnum_us_dash, 30),
    ("AKIA", upper_digit, 16),
    ("ASIA", upper_digit, 16),
    ("ABIA", upper_digit, 16),
    ("ACCA", upper_digit, 16),
    ("AGPA", upper_digit, 16),
    ("AIDA", upper_digit, 16),
    ("AIPA", upper_digit, 16),
    ("ANPA", upper_digit, 16),
    ("ANVA", upper_digit, 16),
    ("AROA", upper_digit, 16),
    ("APKA", upper_digit, 16),
];

struct Scan<'a> {
    s: &'a str,
    b: &'a [u8],
    out: String,
    copied: usize,
    n: u32,
}

impl Scan<'_> {
    /// Replaces `s[from..to]` with the marker (everything before `from` not
    /// yet copied is copied first).
    fn replace(&mut self, from: usize, to: usize) {
        self.out.push_str(sub(self.s, self.copied, from));
        self.out.push_str(REDACTED);
        self.copied = to;
        self.n += 1;
    }

    /// Skips markers already in place from `i`; returns the position after.
    fn skip_markers(&self, mut i: usize) -> usize {
        while sub(self.s, i, self.s.len()).starts_with(REDACTED) {
            i += REDACTED.len();
        }
        i
    }

    fn skip_blanks(&self, mut i: usize) -> usize {
        while matches!(self.b.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        i
    }

    fn line_end(&self, i: usize) -> usize {
        let e = find_from(self.s, i, "\n").unwrap_or(self.s.len());
        if e > i && self.b.get(e - 1) == Some(&b'\r') {
            e - 1
        } else {
            e
        }
    }

    /// After a key ending at `k` (the key began at `start`): the separator
    /// and value. Returns the value span to redact, if any, and where to
    /// resume. `to_line_end`: an unquoted value runs to the end of the line.
    fn value_after_key(&self, start: usize, k: usize, to_line_end: bool) -> Option<(usize, usize)> {
        let mut i = k;
        // A quoted key: `"password": "x"`.
        if let Some(&q @ (b'"' | b'\'')) = self.b.get(i) {
            if start > 0 && self.b.get(start - 1) == Some(&q) {
                i += 1;
            }
        }
        i = self.skip_blanks(i);
        if !matches!(self.b.get(i), Some(b'=' | b':')) {
            return None;
        }
        i = self.skip_blanks(i + 1);
        if let Some(&q @ (b'"' | b'\'')) = self.b.get(i) {
            let vstart = self.skip_markers(i + 1);
            let mut j = vstart;
            let end_line = self.line_end(vstart);
            while j < end_line {
                match self.b.get(j) {
                    Some(b'\\') => j += 2,
                    Some(&c) if c == q => break,
                    _ => j += 1,
                }
            }
            let j = j.min(end_line);
            return (j > vstart).then_some((vstart, j));
        }
        let vstart = self.skip_markers(i);
        let end = if to_line_end {
            self.line_end(vstart)
        } else {
            let mut j = vstart;
            while let Some(&c) = self.b.get(j) {
                if c.is_ascii_whitespace()
                    || matches!(
                        c,
                        b'"' | b'\'' | b',' | b';' | b'&' | b'<' | b'>' | b'(' | b')' | b'{' | b'}'
                    )
                {
                    break;
                }
                j += 1;
            }
            j
        };
        (end > vstart).then_some((vstart, end))
    }

    /// Tries every rule at `i`; returns where to continue when one matched.
    fn try_rules(&mut self, i: usize) -> Option<usize> {
        let b = self.b;
        let prev = if i == 0 { None } else { b.get(i - 1).copied() };
        // Credentials in URLs.
        if sub(self.s, i, self.s.len()).starts_with("://")
            && prev.is_some_and(|p| p.is_ascii_alphanumeric())
        {
            let auth_start = i + 3;
            let mut j = auth_start;
            while let Some(&c) = b.get(j) {
                if c.is_ascii_whitespace()
                    || matches!(c, b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>')
                {
                    break;
                }
                j += 1;
            }
            let authority = sub(self.s, auth_start, j);
            if let Some(at) = authority.rfind('@') {
                let user = sub(authority, 0, at);
                if !user.is_empty() && user != REDACTED {
                    self.out.push_str(sub(self.s, self.copied, auth_start));
                    self.copied = auth_start;
                    self.replace(auth_start, auth_start + at);
                    return Some(auth_start + at);
                }
            }
            return None;
        }
        let word_start = !prev.is_some_and(is_key_char);
        if !word_start || !b.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        // Header values.
        for key in HEADER_KEYS {
            if starts_with_ci(b, i, key) && !b.get(i + key.len()).copied().is_some_and(is_key_char)
            {
                if let Some((vs, ve)) = self.value_after_key(i, i + key.len(), true) {
                    self.replace(vs, ve);
                    return Some(ve);
                }
            }
        }
        // key=value with a secret-looking key.
        let kend = run_end(b, i, is_key_char);
        let key = sub(self.s, i, kend).to_ascii_lowercase();
        if SECRET_KEY_SUFFIXES.iter().any(|suf| key.ends_with(suf)) {
            if let Some((vs, ve)) = self.value_after_key(i, kend, false) {
                self.replace(vs, ve);
                return Some(ve);
            }
        }
        // Bearer tokens.
        if starts_with_ci(b, i, "bearer") && matches!(b.get(i + 6), Some(b' ' | b'\t')) {
            let ts = self.skip_blanks(i + 6);
            let te = run_end(b, ts, is_bearer_char);
            if te - ts >= 8 {
                self.replace(ts, te);
                return Some(te);
            }
        }
        // Provider keys.
        if !prev.is_some_and(|p| is_word(p) || p == b'-') {
            for (prefix, class, min) in PREFIXES {
                if sub(self.s, i, self.s.len()).starts_with(prefix) {
                    let ts = i + prefix.len();
                    let te = run_end(b, ts, *class);
                    if te - ts >= *min {
                        self.replace(i, te);
                        return Some(te);
                    }
                }
            }
            // JWT: eyJ<b64url>.<b64url>.<b64url>
            if sub(self.s, i, self.s.len()).starts_with("eyJ") {
                let p1 = run_end(b, i, alnum_us_dash);
                if p1 - i >= 8 && b.get(p1) == Some(&b'.') {
                    let p2 = run_end(b, p1 + 1, alnum_us_dash);
                    if p2 - (p1 + 1) >= 4 && b.get(p2) == Some(&b'.') {
                        let p3 = run_end(b, p2 + 1, alnum_us_dash);
                        self.replace(i, p3);
                        return Some(p3);
                    }
                }
            }
        }
        None
    }

    /// Long hex or base64-ish runs, checked at the start of each run.
    fn try_long_run(&mut self, i: usize) -> Option<usize> {
        let b = self.b;
        let body = run_end(b, i, is_b64);
        let run = b.get(i..body)?;
        let end = run_end(b, body, |c| c == b'=');
        if run.len() >= 40
            && run.iter().any(u8::is_ascii_uppercase)
            && run.iter().any(u8::is_ascii_lowercase)
            && run.iter().any(u8::is_ascii_digit)
        {
            self.replace(i, end);
            return Some(end);
        }
        // Hex sub-runs of 32 or more.
        let mut j = i;
        let mut matched = false;
        while j < body {
            let h = run_end(b, j, |c| c.is_ascii_hexdigit()).min(body);
            if h - j >= 32 {
                self.replace(j, h);
                matched = true;
            }
            j = if h > j { h } else { j + 1 };
        }
        matched.then_some(body)
    }
}

fn redact_tokens(s: &str, n: &mut u32) -> String {
    let mut sc = Scan {
        s,
        b: s.as_bytes(),
        out: String::with_capacity(s.len()),
        copied: 0,
        n: 0,
    };
    let mut i = 0;
    while i < s.len() {
        if sub(s, i, s.len()).starts_with(REDACTED) {
            i += REDACTED.len();
            continue;
        }
        if let Some(next) = sc.try_rules(i) {
            i = next;
            continue;
        }
        let prev_b64 = i > 0 && sc.b.get(i - 1).copied().is_some_and(is_b64);
        if !prev_b64 && sc.b.get(i).copied().is_some_and(is_b64) {
            if let Some(next) = sc.try_long_run(i) {
                i = next;
                continue;
            }
        }
        i += s
            .get(i..)
            .and_then(|r| r.chars().next())
            .map_or(1, char::len_utf8);
    }
    sc.out.push_str(sub(s, sc.copied, s.len()));
    *n += sc.n;
    sc.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> String {
        let out = redact(s).into_owned();
        assert_eq!(redact(&out), out, "not idempotent for {s:?}");
        out
    }

    /// A provider key prefix glued to a word (letters, digits, `_`, `-`
    /// before it) is part of that word, not a key.
    #[test]
    fn key_prefixes_inside_words_are_left() {
        for s in [
            "mask-proj-abcdefghijklmnopqrstuvwx",
            "x9sk-proj-abcdefghijklmnopqrstuvwx",
            "a_sk-proj-abcdefghijklmnopqrstuvwx",
            "a-sk-proj-abcdefghijklmnopqrstuvwx",
        ] {
            assert_eq!(r(s), s);
        }
        assert_eq!(r("(sk-proj-abcdefghijklmnopqrstuvwx"), "([REDACTED]");
    }

    /// A key whose header's closing dashes run straight into `END` has no
    /// end of its own: everything after its header is redacted.
    #[test]
    fn a_key_ending_in_its_own_header_is_redacted_to_the_end() {
        assert_eq!(
            r("a -----BEGIN RSA PRIVATE KEY-----END RSA PRIVATE KEY----- b"),
            "a [REDACTED]"
        );
        assert_eq!(
            r("a -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- b"),
            "a [REDACTED] b"
        );
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(redact("HTTP 404: Not Found"), Cow::Borrowed(_)));
        assert!(matches!(redact("a bearer of bad news"), Cow::Borrowed(_)));
    }

    #[test]
    fn recognises_each_kind() {
        // One written-out case per kind of secret, in the order of the list
        // of kinds above: (text, text redacted).
        for (text, redacted) in [
            ("auth: Bearer abcdef123456789", "auth: Bearer [REDACTED]"),
            (
                "Authorization: Basic dXNlcjpwYXNz\nnext",
                "Authorization: [REDACTED]\nnext",
            ),
            ("key sk-proj-abcdefghijklmnopqrstuvwx!", "key [REDACTED]!"),
            ("k=sk-ant-api03-abcdefghijklmnopqrstu", "k=[REDACTED]"),
            ("id AKIAIOSFODNN7EXAMPLE.", "id [REDACTED]."),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED]",
            ),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]"),
            ("xoxb-1234567890-abcdefghij", "[REDACTED]"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstu", "[REDACTED]"),
            ("sk_live_abcdefghij1234567890", "[REDACTED]"),
            (
                "t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_x end",
                "t [REDACTED] end",
            ),
            (
                "https://bob:hunter2@db.example/x",
                "https://[REDACTED]@db.example/x",
            ),
            (
                "x -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- y",
                "x [REDACTED] y",
            ),
            ("h 0123456789abcdef0123456789abcdef!", "h [REDACTED]!"),
            ("password=hunter2&user=x", "password=[REDACTED]&user=x"),
            (
                r#"{"password": "a b c", "n": 1}"#,
                r#"{"password": "[REDACTED]", "n": 1}"#,
            ),
            ("max_tokens=100", "max_tokens=100"),
        ] {
            assert_eq!(r(text), redacted, "{text}");
        }
    }

    /// The edges of key/value and JWT redaction: an escaped quote inside a
    /// quoted value, a value running to a CRLF line end (the `\r` stays),
    /// and a JWT's first part must be eight characters long and followed
    /// by its dot.
    #[test]
    fn redaction_edges() {
        assert_eq!(
            r(r#"{"password": "p\"q", "n": 1}"#),
            r#"{"password": "[REDACTED]", "n": 1}"#
        );
        assert_eq!(
            r("password=hunter2\r\nnext line"),
            "password=[REDACTED]\r\nnext line"
        );
        assert_eq!(
            r("password: \"hunter2\r\nnext line"),
            "password: \"[REDACTED]\r\nnext line"
        );
        assert_eq!(r("t eyJabc.defgh.ijk end"), "t eyJabc.defgh.ijk end");
        assert_eq!(
            r("t eyJhbGciOiJIUzI1NiJ9 end"),
            "t eyJhbGciOiJIUzI1NiJ9 end"
        );
        assert_eq!(r("t eyJhbGciOi.eyJz.sig end"), "t [REDACTED] end");
    }

    #[test]
    fn stack_traces() {
        let py = "boom\nTraceback (most recent call last):\n  File \"/app/x.py\", line 3, in f\n    raise ValueError()\nValueError: bad\n";
        assert_eq!(redact_counted(py), (Cow::Owned("boom".to_owned()), 1));
        let js = "Error: x\n    at foo (/app/a.js:10:5)\n    at Object.<anonymous> (/app/b.js:1:1)";
        assert_eq!(r(js), "An internal error occurred.");
        let rs = "thread 'main' panicked at src/main.rs:2:5:\nboom\nstack backtrace:\n   0: rust_begin_unwind\n             at /rustc/x/panicking.rs:652:5\n";
        assert_eq!(r(rs), "An internal error occurred.");
        // Secrets around a trace are still redacted, each counted.
        let mixed = "token=abc123 upstream: Traceback (most recent call last):\n  File \"/x.py\", line 1, in f\nKeyError: 'k'";
        assert_eq!(
            redact_counted(mixed),
            (Cow::Owned("token=[REDACTED] upstream".to_owned()), 2)
        );
    }
}
