//! Sanitizer policies built in Rust (NaN, metadata, budgets) and property
//! tests: idempotence, limits always met, truncation, redaction.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_sanitize::{RejectKind, Sanitizer, check_f64, redact};
use lce_testkit::RunBuilder;
use lce_types::*;
use proptest::prelude::*;

#[test]
fn non_finite_floats_built_in_rust_are_rejected() {
    let s = Sanitizer::new(Limits::default());
    let mut run = RunBuilder::new("r", "c");
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let u = UsageUpdated {
            cost: Some(bad),
            currency: Some("USD".into()),
            ..UsageUpdated::default()
        };
        let r = s
            .sanitize(run.payload(Payload::UsageUpdated(u)))
            .unwrap_err();
        assert_eq!(
            (r.kind, r.field),
            (RejectKind::NonFiniteNumber, "data.cost")
        );
        assert_eq!(r.kind.rule(), "D17");
        assert!(check_f64("latency", bad).is_err());
    }
    assert_eq!(check_f64("x", -0.0), Ok(-0.0));
    // Counts are never invented: absent stays absent.
    let u = UsageUpdated {
        output_tokens: Some(5),
        ..UsageUpdated::default()
    };
    let out = s
        .sanitize(
            run.set_sequence(1)
                .set_timestamp("2026-08-17T00:00:00Z")
                .payload(Payload::UsageUpdated(u.clone())),
        )
        .unwrap();
    assert_eq!(out.event.payload, Payload::UsageUpdated(u));
    assert!(out.report.is_clean());
    assert_eq!(
        out.event.to_json(),
        r#"{"version":1,"type":"usage.updated","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"output_tokens":5}}"#
    );
}

#[test]
fn metadata_keeps_order_and_bytes_and_bounds_key_count() {
    let mut limits = Limits::default();
    limits.metadata_allowlist = vec!["a".into(), "b".into(), "c".into(), "d".into()];
    limits.metadata_keys = 2;
    let s = Sanitizer::new(limits);
    let mut run = RunBuilder::new("r", "c");
    let m = JsonObject::from_json(r#"{ "x": 1, "b" : 1.0e2, "a": "\u00e9", "c": true }"#).unwrap();
    let p = ProviderMetadata {
        provider: "p".into(),
        model: None,
        metadata: m,
    };
    let out = s
        .sanitize(run.payload(Payload::ProviderMetadata(p)))
        .unwrap();
    let Payload::ProviderMetadata(p) = &out.event.payload else {
        unreachable!()
    };
    assert_eq!(p.metadata.get(), r#"{"b":1.0e2,"a":"\u00e9"}"#);
    assert_eq!(out.report.dropped_metadata_keys, 2);
    // Untouched when nothing is dropped (whitespace and all).
    let m = JsonObject::from_json(r#"{ "a" : 1 }"#).unwrap();
    let p = ProviderMetadata {
        provider: "p".into(),
        model: None,
        metadata: m.clone(),
    };
    let out = s
        .sanitize(run.payload(Payload::ProviderMetadata(p)))
        .unwrap();
    assert!(out.report.is_clean());
    let Payload::ProviderMetadata(p) = &out.event.payload else {
        unreachable!()
    };
    assert_eq!(p.metadata, m);
}

#[test]
fn display_budget_is_per_event() {
    let mut limits = Limits::default();
    limits.display_bytes = 10;
    limits.identifier_bytes = 10;
    limits.name_bytes = 10;
    let s = Sanitizer::new(limits);
    let mut run = RunBuilder::new("r", "c");
    let field = |label: &str| FormField {
        field_name: "f".into(),
        field_label: Some(label.into()),
        field_description: None,
        field_type: "text".into(),
        field_values: None,
        required: None,
        default_value: None,
        placeholder: None,
    };
    let i = InterruptRequested {
        interrupt_id: "i".into(),
        interrupt_type: InterruptType::FormInput,
        agent_id: "a".into(),
        prompt: Some("123456".into()),
        fields: Some(vec![field("abcdef"), field("xyz")]),
        tool_approvals: None,
    };
    let out = s
        .sanitize(run.payload(Payload::InterruptRequested(i)))
        .unwrap();
    let Payload::InterruptRequested(i) = &out.event.payload else {
        unreachable!()
    };
    assert_eq!(i.prompt.as_deref(), Some("123456"));
    let labels: Vec<_> = i
        .fields
        .iter()
        .flatten()
        .map(|f| f.field_label.clone().unwrap())
        .collect();
    assert_eq!(labels, ["abcd", ""]);
    assert_eq!(out.report.truncated_fields, 2);
    assert_eq!(out.report.truncated_bytes, 5);
}

/// An identifier or a name exactly at its limit passes; one byte more is
/// rejected with its size and the limit.
#[test]
fn identifiers_and_names_may_be_exactly_as_long_as_their_limit() {
    let mut limits = Limits::default();
    limits.identifier_bytes = 8;
    limits.name_bytes = 5;
    let s = Sanitizer::new(limits);
    let mut run = RunBuilder::new("r", "c");
    let start = |run: &mut RunBuilder, id: &str, name: &str| run.tool_started(id, name, "{}");
    assert!(s.sanitize(start(&mut run, "12345678", "abcde")).is_ok());
    let r = s
        .sanitize(start(&mut run, "123456789", "abcde"))
        .unwrap_err();
    assert_eq!(
        (r.kind, r.field, r.size, r.limit),
        (
            RejectKind::IdentifierTooLong,
            "data.tool_call_id",
            Some(9),
            Some(8)
        )
    );
    let r = s
        .sanitize(start(&mut run, "12345678", "abcdef"))
        .unwrap_err();
    assert_eq!(
        (r.kind, r.field, r.size, r.limit),
        (RejectKind::NameTooLong, "data.tool_name", Some(6), Some(5))
    );
}

#[test]
fn rejection_and_report_carry_no_text() {
    let s = Sanitizer::new(Limits::default());
    let mut run = RunBuilder::new("r", "c");
    let d = SpanDelta {
        message_id: "SECRETTEXT\u{1}".into(),
        delta: "x".into(),
    };
    let r = s.sanitize(run.payload(Payload::TextDelta(d))).unwrap_err();
    let shown = format!("{r} {r:?} {}", serde_json::to_string(&r).unwrap());
    assert!(!shown.contains("SECRETTEXT"), "{shown}");
    assert_eq!(r.to_string(), "control_character (D18) at data.message_id");
    assert_eq!(
        RejectKind::from_name("text_too_long"),
        Some(RejectKind::TextTooLong)
    );
}

#[test]
fn messages_are_redacted_for_every_free_text_event() {
    let s = Sanitizer::new(Limits::default());
    let mut run = RunBuilder::new("r", "c");
    let msg = "failed: Bearer abcdefghijklmnop";
    let w = Warning {
        code: "w".into(),
        message: msg.into(),
        details: None,
    };
    let t = ToolError {
        tool_call_id: "t".into(),
        code: "tool_error".into(),
        message: msg.into(),
        retryable: false,
    };
    let e = RunError {
        code: "x".into(),
        message: msg.into(),
        retryable: false,
        retry_after_seconds: None,
        side_effect_status: SideEffectStatus::None,
    };
    for p in [
        Payload::Warning(w),
        Payload::ToolError(t),
        Payload::RunError(e),
    ] {
        let out = s.sanitize(run.payload(p)).unwrap();
        let message = match &out.event.payload {
            Payload::Warning(w) => &w.message,
            Payload::ToolError(t) => &t.message,
            Payload::RunError(e) => &e.message,
            other => panic!("{other:?}"),
        };
        assert_eq!(message, "failed: Bearer [REDACTED]");
        assert_eq!(out.report.redactions, 1);
    }
}

// ------------------------------------------------------------ properties

fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range('a', 'e'),
        2 => any::<char>(),
        1 => prop::sample::select(vec![
            '\u{0}', '\u{1b}', '\t', '\n', '\r', '\u{7f}', '\u{85}', '\u{9f}', '\u{202e}',
            '\u{2066}', '\u{200e}', '\u{fffd}', 'é', '😀', ' ', '=', ':', '"', '[', ']',
        ]),
    ]
}

fn text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(hostile_char(), 0..max).prop_map(|v| v.into_iter().collect())
}

fn secretish() -> impl Strategy<Value = String> {
    prop_oneof![
        text(40),
        Just("password=hunter2 Bearer abcdefghijk sk-abcdefghijklmnopqrstuvwxyz".to_owned()),
        Just("0123456789abcdef0123456789abcdef0123 ok".to_owned()),
        Just("x\n  File \"a.py\", line 3\n    boom\nend".to_owned()),
    ]
}

fn small_limits() -> Limits {
    let mut l = Limits::default();
    l.identifier_bytes = 12;
    l.name_bytes = 8;
    l.display_bytes = 48;
    l.tool_result_bytes = 20;
    l.tool_arguments_bytes = 30;
    l.warning_details_bytes = 40;
    l.warning_details_depth = 2;
    l.warning_details_members = 3;
    l.metadata_keys = 2;
    l.metadata_value_bytes = 8;
    l.metadata_allowlist = vec!["a".into(), "b".into(), "c".into()];
    l.namespace_depth = 2;
    l
}

fn payload() -> impl Strategy<Value = Payload> {
    let details = prop_oneof![
        Just(None),
        Just(Some(r#"{"a":1}"#)),
        Just(Some(r#"{"a":{"b":{"c":1}}}"#)),
        Just(Some(r#"{"a":[1,2,3,4]}"#)),
        Just(Some(r#"{"a":"0123456789012345678901234567890123456789"}"#)),
    ];
    let meta = prop::collection::vec(
        (
            prop::sample::select(vec!["a", "b", "c", "x"]),
            prop::sample::select(vec!["1", "\"v\"", "[1]", "{}", "null", "\"0123456789\""]),
        ),
        0..5,
    );
    prop_oneof![
        (text(12), text(60)).prop_map(|(m, d)| Payload::TextDelta(SpanDelta {
            message_id: m.into(),
            delta: d
        })),
        (text(12), text(60), prop::option::of(text(8))).prop_map(|(t, r, rr)| {
            Payload::ToolFinished(ToolFinished {
                tool_call_id: t,
                result: r,
                result_ref: rr,
            })
        }),
        (text(10), secretish()).prop_map(|(c, m)| Payload::ToolError(ToolError {
            tool_call_id: "t".into(),
            code: c,
            message: m,
            retryable: false
        })),
        (secretish(), details).prop_map(|(m, d)| Payload::Warning(Warning {
            code: "w".into(),
            message: m,
            details: d.map(|d| JsonObject::from_json(d).unwrap()),
        })),
        (text(30), text(20), text(20)).prop_map(|(p, l, d)| Payload::InterruptRequested(
            InterruptRequested {
                interrupt_id: "i".into(),
                interrupt_type: InterruptType::FormInput,
                agent_id: "a".into(),
                prompt: Some(p),
                fields: Some(vec![FormField {
                    field_name: "f".into(),
                    field_label: Some(l),
                    field_description: Some(d),
                    field_type: "text".into(),
                    field_values: None,
                    required: None,
                    default_value: None,
                    placeholder: None,
                }]),
                tool_approvals: None,
            }
        )),
        meta.prop_map(|kv| {
            let mut seen = std::collections::HashSet::new();
            let members: Vec<String> = kv
                .into_iter()
                .filter(|(k, _)| seen.insert(*k))
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            Payload::ProviderMetadata(ProviderMetadata {
                provider: "p".into(),
                model: None,
                metadata: JsonObject::from_json(&format!("{{{}}}", members.join(","))).unwrap(),
            })
        }),
        (text(10), text(10)).prop_map(|(a, n)| Payload::NamespaceEntered(NamespaceEntered {
            agent_id: a,
            agent_name: n,
            parent_tool_call_id: "tc".into(),
        })),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    (text(14), prop::collection::vec(text(6), 0..4), payload()).prop_map(
        |(run_id, namespace, payload)| {
            RunBuilder::new(run_id, "c")
                .set_sequence(3)
                .at(namespace)
                .payload(payload)
        },
    )
}

// D18's two character classes, written again from the contract rather than
// taken from the crate: `within_limits` is an independent check, so it must
// not trust the code it checks (a deliberate second copy of the crate's
// private `is_forbidden_in_name` and `is_replaced_in_display`).

/// Rejected in identifiers, codes and names: every control (`Cc`), the bidi
/// marks, overrides and isolates, and U+2028/U+2029.
fn forbidden_in_name(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Replaced in display text: controls except `\t`, `\n`, `\r`, and the bidi
/// overrides and isolates.
fn replaced_in_display(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r')
        && (c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
}

fn id_ok(s: &str, max: usize) -> bool {
    s.len() <= max && !s.chars().any(forbidden_in_name)
}

fn display_ok(s: &str) -> bool {
    !s.chars().any(replaced_in_display)
}

/// An independent check that an event meets every bound.
fn within_limits(e: &Event, l: &Limits) {
    assert!(id_ok(&e.run_id, l.identifier_bytes));
    assert!(e.namespace.len() <= l.namespace_depth);
    assert!(e.namespace.iter().all(|n| id_ok(n, l.identifier_bytes)));
    let mut display = 0;
    match &e.payload {
        Payload::TextDelta(d) => {
            assert!(id_ok(&d.message_id, l.identifier_bytes) && display_ok(&d.delta));
            display += d.delta.len();
        }
        Payload::ToolFinished(t) => {
            assert!(display_ok(&t.result) && t.result.len() <= l.tool_result_bytes);
            assert!(
                t.result_ref
                    .as_deref()
                    .is_none_or(|r| id_ok(r, l.identifier_bytes))
            );
        }
        Payload::ToolError(t) => {
            assert!(id_ok(&t.code, l.name_bytes) && display_ok(&t.message));
            assert_eq!(redact(&t.message), t.message.as_str());
            display += t.message.len();
        }
        Payload::Warning(w) => {
            assert!(display_ok(&w.message));
            assert_eq!(redact(&w.message), w.message.as_str());
            display += w.message.len();
            if let Some(d) = &w.details {
                assert!(d.len() <= l.warning_details_bytes);
            }
        }
        Payload::InterruptRequested(i) => {
            for t in i
                .prompt
                .iter()
                .chain(i.fields.iter().flatten().flat_map(|f| {
                    f.field_label
                        .iter()
                        .chain(f.field_description.iter())
                        .chain(f.placeholder.iter())
                }))
            {
                assert!(display_ok(t));
                display += t.len();
            }
        }
        Payload::ProviderMetadata(p) => {
            let v: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(p.metadata.get()).unwrap();
            assert!(v.len() <= l.metadata_keys);
            for (k, val) in &v {
                assert!(l.metadata_allowlist.contains(k));
                assert!(!val.is_object() && !val.is_array());
                assert!(val.to_string().len() <= l.metadata_value_bytes);
            }
        }
        Payload::NamespaceEntered(n) => {
            assert!(id_ok(&n.agent_id, l.name_bytes) && id_ok(&n.agent_name, l.name_bytes));
        }
        _ => {}
    }
    assert!(display <= l.display_bytes);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn sanitizer_is_idempotent_and_output_meets_the_limits(e in event()) {
        let limits = small_limits();
        let s = Sanitizer::new(limits.clone());
        if let Ok(out) = s.sanitize(e) {
            within_limits(&out.event, &limits);
            let again = s.sanitize(out.event.clone()).expect("a sanitized event is accepted");
            prop_assert_eq!(&again.event, &out.event);
            prop_assert!(again.report.is_clean(), "{:?}", again.report);
            // The canonical line parses back to the same event.
            prop_assert_eq!(Event::from_json(&out.event.to_json()).unwrap(), out.event);
        }
    }

    #[test]
    fn redact_removes_planted_secrets(
        prefix in text(30),
        suffix in text(30),
        kind in 0usize..16,
        a in "[A-Za-z0-9]{48}",
        lower in "[a-z0-9]{40}",
        upper in "[A-Z0-9]{16}",
    ) {
        let (planted, secret): (String, String) = match kind {
            0 => (format!("sk-proj-{}", &a[..28]), format!("sk-proj-{}", &a[..28])),
            1 => (format!("sk-ant-api03-{}", &a[..30]), a[..30].to_owned()),
            2 => (format!("AKIA{upper}"), format!("AKIA{upper}")),
            3 => (format!("ghp_{}", &a[..36]), a[..36].to_owned()),
            4 => (format!("github_pat_{}", &a[..40]), a[..40].to_owned()),
            5 => (format!("xoxb-{}-{}", &lower[..10], &a[..12]), format!("{}-{}", &lower[..10], &a[..12])),
            6 => (format!("AIza{}", &a[..35]), a[..35].to_owned()),
            7 => (format!("sk_live_{}", &a[..24]), a[..24].to_owned()),
            8 => (format!("eyJ{}.eyJ{}.{}", &a[..10], &a[10..20], &a[20..30]), format!("{}.eyJ{}", &a[..10], &a[10..20])),
            9 => (lower[..36].chars().map(|c| if c.is_ascii_alphabetic() { 'f' } else { c }).collect(), String::new()),
            10 => (format!("Ab1{}", &a[..41]), format!("Ab1{}", &a[..41])),
            11 => (format!("Bearer {}", &a[..20]), a[..20].to_owned()),
            12 => (format!("https://{}:{}@host.example/x", &lower[..5], &a[..12]), format!("{}:{}", &lower[..5], &a[..12])),
            13 => (format!("password={}", &a[..10]), a[..10].to_owned()),
            14 => (format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----", &a[..40]), a[..40].to_owned()),
            _ => (format!("aws_secret_access_key = {}", &a[..40]), a[..40].to_owned()),
        };
        let secret = if secret.is_empty() { planted.clone() } else { secret };
        let input = format!("{prefix} {planted} {suffix}");
        let out = redact(&input);
        prop_assert!(!out.contains(&secret), "{:?} -> {:?}", input, out);
        prop_assert_eq!(redact(&out), out.clone(), "not idempotent");
    }

    #[test]
    fn redact_is_idempotent_on_arbitrary_text(s in secretish()) {
        let once = redact(&s).into_owned();
        prop_assert_eq!(redact(&once), once.as_str());
    }
}

/// A streamed arguments fragment of exactly the bound passes; one byte
/// more is refused.
#[test]
fn an_arguments_fragment_at_the_bound_passes() {
    let mut limits = Limits::default();
    limits.tool_arguments_bytes = 10;
    let s = Sanitizer::new(limits);
    let mut run = RunBuilder::new("r", "c");
    let at = run.tool_arguments_delta("t", "{\"q\":\"12\"}");
    assert!(s.sanitize(at).unwrap().report.is_clean());
    let over = run.tool_arguments_delta("t", "{\"q\":\"123\"}");
    let r = s.sanitize(over).unwrap_err();
    assert_eq!(
        (r.kind, r.field),
        (RejectKind::ArgumentsTooLarge, "data.delta")
    );
}

/// Text whose bytes only look like a control to the block scan (a no-break
/// space shares the C1 controls' lead byte) is left as it is, and the
/// report says nothing changed.
#[test]
fn look_alikes_of_controls_change_nothing() {
    let s = Sanitizer::new(Limits::default());
    let mut run = RunBuilder::new("r", "c");
    let text = "twelve bytes\u{a0}and more after it";
    let e = run.text_delta("m", text);
    let out = s.sanitize(e.clone()).unwrap();
    assert_eq!(out.event, e);
    assert!(out.report.is_clean(), "{:?}", out.report);
}
