//! Property tests: parsing never panics, and parse -> serialize -> parse is
//! the identity for generated events of every type.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_types::{Event, EventLines, EventType, ParseErrorKind};
use proptest::prelude::*;

fn envelope(ty: &str, data: &str) -> String {
    format!(
        r#"{{"version":1,"type":"{ty}","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:00Z","namespace":["a"],"data":{data}}}"#
    )
}

include!("common/payloads.rs");

#[test]
fn every_event_type_round_trips() {
    assert_eq!(PAYLOADS.len(), EventType::ALL.len());
    for (ty, data) in PAYLOADS {
        let line = envelope(ty, data);
        let event = Event::from_json(&line).unwrap_or_else(|e| panic!("{ty}: {e}"));
        assert_eq!(event.event_type().as_str(), *ty);
        assert_eq!(Event::from_json(&event.to_json()).unwrap(), event, "{ty}");
        // canonical member order and opaque values: byte-identical here
        assert_eq!(event.to_json(), line, "{ty}");
    }
}

/// Issue 16 (D19, amended): `retry_after_seconds` is `null` or any
/// non-negative finite number up to 86,400, fraction or integer, kept as its
/// exact text; anything else is a typed error at the member.
#[test]
fn retry_after_seconds_takes_fractions_and_keeps_their_text() {
    let data = |v: &str| {
        format!(
            r#"{{"code":"rate_limited","message":"m","retryable":true,"retry_after_seconds":{v},"side_effect_status":"none"}}"#
        )
    };
    for (v, ceil) in [("0.25", 1), ("0", 0), ("86400", 86_400), ("1e2", 100)] {
        let line = envelope("run.error", &data(v));
        let event = Event::from_json(&line).unwrap_or_else(|e| panic!("{v}: {e}"));
        let lce_types::Payload::RunError(r) = &event.payload else {
            panic!("{v}")
        };
        let r = r.retry_after_seconds.as_ref().unwrap();
        assert_eq!((r.as_str(), r.ceil_seconds()), (v, ceil));
        // Written back byte for byte, read back equal.
        assert_eq!(event.to_json(), line, "{v}");
        assert_eq!(Event::from_json(&event.to_json()).unwrap(), event);
        assert_eq!(Event::from_slice(line.as_bytes()).unwrap(), event);
    }
    for (v, kind, message) in [
        (
            "-1",
            ParseErrorKind::NumberOutOfRange,
            "number_out_of_range at data.retry_after_seconds: retry_after_seconds is negative",
        ),
        (
            "86400.5",
            ParseErrorKind::NumberOutOfRange,
            "number_out_of_range at data.retry_after_seconds: retry_after_seconds is above 86400 (a day)",
        ),
        (
            r#""5""#,
            ParseErrorKind::WrongType,
            "wrong_type at data.retry_after_seconds: retry_after_seconds must be a number, found a string",
        ),
    ] {
        let e = Event::from_json(&envelope("run.error", &data(v))).unwrap_err();
        assert_eq!(
            (e.kind, e.path.as_str()),
            (kind, "data.retry_after_seconds"),
            "{v}: {e}"
        );
        assert_eq!(e.to_string(), message, "{v}");
    }
    // `NaN` is not JSON (D17): the line's syntax error, at the value's byte.
    let line = envelope("run.error", &data("NaN"));
    let e = Event::from_json(&line).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    assert_eq!(e.offset, line.find("NaN"));
    assert_eq!(
        lce_types::RetryAfter::from_seconds(86_401),
        None,
        "a day at most"
    );
    assert_eq!(
        lce_types::RetryAfter::from_seconds(30).map(|r| r.to_string()),
        Some("30".to_owned())
    );
}

/// A sequence that is not a whole number is the wrong type; a whole
/// number beyond what `u64`/`i64` hold (read as a float) is out of range,
/// on the side it is out.
#[test]
fn sequences_that_are_floats_are_refused_by_what_is_wrong() {
    for (v, message) in [
        ("1.5", "wrong_type at sequence: sequence must be an integer"),
        ("7.0", "wrong_type at sequence: sequence must be an integer"),
        (
            "-0.5",
            "wrong_type at sequence: sequence must be an integer",
        ),
        (
            "-0.0",
            "wrong_type at sequence: sequence must be an integer",
        ),
        (
            "9007199254740991.0",
            "wrong_type at sequence: sequence must be an integer",
        ),
        (
            "9007199254740992.0",
            "number_out_of_range at sequence: sequence above 2^53-1",
        ),
        (
            "1e300",
            "number_out_of_range at sequence: sequence above 2^53-1",
        ),
        (
            "18446744073709551616",
            "number_out_of_range at sequence: sequence above 2^53-1",
        ),
        (
            "-1e300",
            "number_out_of_range at sequence: sequence is negative",
        ),
        (
            "-9223372036854775809",
            "number_out_of_range at sequence: sequence is negative",
        ),
    ] {
        let line = envelope("text.finished", r#"{"message_id":"m"}"#)
            .replace(r#""sequence":1"#, &format!(r#""sequence":{v}"#));
        let mut e = Event::from_json(&line).unwrap_err();
        // Located inside the value (serde points at its last byte).
        let start = line.find(&format!(r#""sequence":{v}"#)).unwrap() + 11;
        let at = e.offset.take().unwrap();
        assert!((start..start + v.len()).contains(&at), "{v}: {at}");
        assert_eq!(e.to_string(), message, "{v}");
    }
}

#[test]
fn approval_interrupt_rules() {
    let ok = r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"a","tool_approvals":[{"tool_call_id":"t","tool_name":"n","tool_args":{}}]}"#;
    assert!(Event::from_json(&envelope("interrupt.requested", ok)).is_ok());
    let empty = r#"{"interrupt_id":"i","interrupt_type":"tool_approval","agent_id":"a","tool_approvals":[]}"#;
    let e = Event::from_json(&envelope("interrupt.requested", empty)).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::InvalidValue);
    let mixed = r#"{"interrupt_id":"i","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[],"tool_approvals":[]}"#;
    let e = Event::from_json(&envelope("interrupt.requested", mixed)).unwrap_err();
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ParseErrorKind::UnknownField, "data.tool_approvals")
    );
}

#[test]
fn over_long_lines_are_reported_once_and_skipped() {
    let good = envelope("text.finished", r#"{"message_id":"m"}"#);
    let input = format!("{good}\n{}\n{good}\n", "x".repeat(5000));
    let results: Vec<_> = EventLines::with_max_line_bytes(input.as_bytes(), 1000)
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok() && results[2].is_ok());
    let e = results[1].as_ref().unwrap_err();
    assert_eq!((e.kind, e.line), (ParseErrorKind::LineTooLong, Some(2)));
}

#[test]
fn crlf_and_missing_final_newline_are_accepted() {
    let good = envelope("text.finished", r#"{"message_id":"m"}"#);
    let input = format!("{good}\r\n{good}");
    let n = EventLines::new(input.as_bytes())
        .filter(|r| matches!(r, Ok(Ok(_))))
        .count();
    assert_eq!(n, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = Event::from_slice(&bytes);
    }

    #[test]
    fn mutated_valid_lines_never_panic(idx in 0usize..21, pos in 0usize..400, byte in any::<u8>()) {
        let (ty, data) = PAYLOADS[idx];
        let mut line = envelope(ty, data).into_bytes();
        let at = pos % line.len();
        line[at] = byte;
        let _ = Event::from_slice(&line);
    }

    #[test]
    fn text_round_trips(delta in any::<String>(), id in "[a-zA-Z0-9_-]{1,40}") {
        let data = serde_json::json!({"message_id": id, "delta": delta}).to_string();
        let event = Event::from_json(&envelope("text.delta", &data)).unwrap();
        prop_assert_eq!(Event::from_json(&event.to_json()).unwrap(), event);
    }

    #[test]
    fn opaque_arguments_round_trip_byte_exact(v in arb_json()) {
        let args = format!(r#"{{"k":{v}}}"#);
        let data = format!(r#"{{"tool_call_id":"t","tool_name":"n","arguments":{args}}}"#);
        let event = Event::from_json(&envelope("tool.started", &data)).unwrap();
        let lce_types::Payload::ToolStarted(t) = &event.payload else { panic!() };
        prop_assert_eq!(t.arguments.get(), args.as_str());
        prop_assert_eq!(Event::from_json(&event.to_json()).unwrap(), event);
    }
}

fn arb_json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        "[1-9][0-9]{19,29}",
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6)
                .prop_map(|v| format!("[{}]", v.join(", "))),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..6).prop_map(|m| {
                let members: Vec<String> = m
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\" : {v}"))
                    .collect();
                format!("{{ {} }}", members.join(",\n"))
            }),
        ]
    })
}

/// An unknown type is named in the error when it is a short plain name, and
/// elided to its size otherwise: empty, over 64 bytes, or with other bytes.
#[test]
fn unknown_types_are_named_only_when_short_and_plain() {
    let plain64 = "a".repeat(64);
    let plain65 = "a".repeat(65);
    for (ty, shown) in [
        ("x.y-z_9", "`x.y-z_9`".to_owned()),
        (plain64.as_str(), format!("`{plain64}`")),
        (plain65.as_str(), "`<65 byte name>`".to_owned()),
        ("", "`<0 byte name>`".to_owned()),
        ("a b", "`<3 byte name>`".to_owned()),
    ] {
        let e = Event::from_json(&envelope(ty, "{}")).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::UnknownType, "{ty}");
        assert_eq!(
            e.detail,
            format!("{shown} is not an event type of the contract"),
            "{ty}"
        );
    }
}
