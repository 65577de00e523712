//! Stack traces and secrets in error texts, found by lce-sanitize's own
//! redaction pass (D20) and described by kind and place, never shown.

use lce_sanitize::{REDACTED, redact_counted};

/// What `text` leaks, as a phrase (`a stack trace and a bearer token, from
/// character 12`), or `None` when redaction changes nothing. `known` are
/// the probe's own ids, which an error may echo (32 hex digits read as a
/// secret otherwise).
pub(crate) fn describe(text: &str, known: &[&str]) -> Option<String> {
    let mut text = text.to_owned();
    for id in known.iter().filter(|id| !id.is_empty()) {
        text = text.replace(id, "ID");
    }
    let (clean, n) = redact_counted(&text);
    if n == 0 {
        return None;
    }
    let secrets = clean
        .matches(REDACTED)
        .count()
        .saturating_sub(text.matches(REDACTED).count());
    let traces = usize::try_from(n)
        .unwrap_or(usize::MAX)
        .saturating_sub(secrets);
    let mut kinds = Vec::new();
    if traces > 0 {
        kinds.push("a stack trace");
    }
    if secrets > 0 {
        kinds.push(secret_kind(&text));
    }
    let at = text
        .chars()
        .zip(clean.chars())
        .take_while(|(a, b)| a == b)
        .count();
    Some(format!("{}, from character {at}", kinds.join(" and ")))
}

/// The likeliest kind of the secret in `text`, by the shapes lce-sanitize
/// recognises.
fn secret_kind(text: &str) -> &'static str {
    let lower = text.to_ascii_lowercase();
    const KINDS: &[(&str, &str)] = &[
        ("private key", "a private key"),
        ("bearer ", "a bearer token"),
        ("authorization", "an Authorization header"),
        ("cookie", "a cookie"),
        ("x-api-key", "an API key"),
        ("sk-", "an API key"),
        ("sk_live_", "an API key"),
        ("akia", "an AWS key"),
        ("ghp_", "a GitHub token"),
        ("github_pat_", "a GitHub token"),
        ("eyj", "a JWT"),
        ("://", "a credential in a URL"),
        ("password", "a password"),
        ("token", "a token"),
        ("secret", "a secret"),
    ];
    KINDS
        .iter()
        .find(|(needle, _)| lower.contains(needle))
        .map_or("a secret", |(_, kind)| kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_and_a_bearer_token_are_named_without_their_text() {
        let text = "Traceback (most recent call last):\n  File \"h.py\", line 3, in run\n    go()\nValueError: boom\n\nAuthorization: Bearer s3cr3t-t0ken-abcdef";
        let said = describe(text, &[]).unwrap();
        assert!(said.contains("a stack trace"), "{said}");
        assert!(said.contains("bearer token"), "{said}");
        assert!(!said.contains("s3cr3t"), "{said}");
    }

    #[test]
    fn plain_messages_and_known_ids_are_clean() {
        assert_eq!(describe("The agent could not answer.", &[]), None);
        let id = "9b1f0c5e2a7d4e3b8c6a1f0e2d4b6a8c";
        assert_eq!(describe(&format!("no run {id}"), &[id]), None);
        assert!(describe(&format!("no run {id}"), &[]).is_some());
    }
}
