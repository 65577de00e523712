//! What an error item broke, typed (`LceError::cause`, `Cause`), and its
//! text: exactly the ids logs, audit records and `--audit-log` carried as
//! strings before.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_stream::{Cause, EncodeError, LceError, Rule};
use lce_types::EventType;

#[test]
fn a_rule_renders_as_its_id() {
    for &rule in Rule::ALL {
        let cause = Cause::from(rule);
        assert_eq!(cause, Cause::Rule(rule));
        assert_eq!(cause.as_str(), rule.id());
        assert_eq!(cause.to_string(), rule.id());
        assert_eq!(cause.rule(), Some(rule));
    }
    // A decision's check renders as the rule it refines; the value keeps
    // the decision.
    let d4 = Cause::Rule(Rule::D4CloseEvents);
    assert_eq!(d4.as_str(), "8");
    assert_eq!(d4.rule().and_then(Rule::decision), Some("D4"));
    assert_eq!(Cause::Rule(Rule::RunIdentity).as_str(), "X");
    assert_eq!(Cause::Rule(Rule::MissingTerminal).as_str(), "12");
}

#[test]
fn the_steps_render_as_before() {
    for (cause, text) in [
        (Cause::Parse, "parse"),
        (Cause::Sanitize, "sanitize"),
        (Cause::Encode, "encode"),
        (Cause::Io, "io"),
    ] {
        assert_eq!(cause.as_str(), text);
        assert_eq!(cause.to_string(), text);
        assert_eq!(cause.rule(), None);
    }
    // Display pads like a string did in log lines.
    assert_eq!(format!("{:>6}|", Cause::Io), "    io|");
}

#[test]
fn every_error_names_its_cause() {
    let parse = LceError::Parse(lce_types::Event::from_json("[]").unwrap_err());
    assert_eq!(parse.cause(), Cause::Parse);
    let violation = LceError::Violation(lce_validate::Violation::new(
        Rule::TextSpan,
        3,
        Some(EventType::TextDelta),
        "text.delta for message `m` that was never started",
    ));
    assert_eq!(violation.cause(), Cause::Rule(Rule::TextSpan));
    assert_eq!(
        (violation.sequence(), violation.event_type()),
        (Some(3), Some(EventType::TextDelta))
    );
    assert_eq!(
        violation.to_string(),
        "seq 3: rule 5 (text_span): text.delta for message `m` that was never started"
    );
    let encode = LceError::from(EncodeError::IncompleteArguments { sequence: 4 });
    assert_eq!(encode.cause(), Cause::Encode);
    assert_eq!(
        encode.to_string(),
        "encode error: tool call arguments are not one complete JSON object (event sequence 4)"
    );
    let io = LceError::Io(std::io::Error::other("read error"));
    assert_eq!(io.cause(), Cause::Io);
}
