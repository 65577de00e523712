//! The shared vocabulary, exactly: every rule's number, decision, id, name
//! and text and their inverses; every cause's id; every wire format's name
//! and `Content-Type`; a shared audit sink records through what it shares.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use lce_core::{AuditRecord, AuditSink, Cause, Rule, RunCounters, WireFormat};
use lce_types::EventType;

/// `(rule, number, decision, id, name, text)`.
type RuleRow = (
    Rule,
    Option<u8>,
    Option<&'static str>,
    &'static str,
    &'static str,
    &'static str,
);

/// Every rule, in `Rule::ALL`'s order.
const RULES: [RuleRow; 22] = [
    (
        Rule::Sequence,
        Some(1),
        None,
        "1",
        "sequence",
        "rule 1 (sequence)",
    ),
    (
        Rule::RunStarted,
        Some(2),
        None,
        "2",
        "run_started",
        "rule 2 (run_started)",
    ),
    (
        Rule::SingleTerminal,
        Some(3),
        None,
        "3",
        "single_terminal",
        "rule 3 (single_terminal)",
    ),
    (
        Rule::AfterTerminal,
        Some(4),
        None,
        "4",
        "after_terminal",
        "rule 4 (after_terminal)",
    ),
    (
        Rule::TextSpan,
        Some(5),
        None,
        "5",
        "text_span",
        "rule 5 (text_span)",
    ),
    (
        Rule::ToolCall,
        Some(6),
        None,
        "6",
        "tool_call",
        "rule 6 (tool_call)",
    ),
    (
        Rule::ToolOutcome,
        Some(7),
        None,
        "7",
        "tool_outcome",
        "rule 7 (tool_outcome)",
    ),
    (
        Rule::Interrupt,
        Some(8),
        None,
        "8",
        "interrupt",
        "rule 8 (interrupt)",
    ),
    (
        Rule::NamespaceBalance,
        Some(9),
        None,
        "9",
        "namespace_balance",
        "rule 9 (namespace_balance)",
    ),
    (
        Rule::NamespaceActive,
        Some(10),
        None,
        "10",
        "namespace_active",
        "rule 10 (namespace_active)",
    ),
    (
        Rule::Limits,
        Some(11),
        None,
        "11",
        "limits",
        "rule 11 (limits)",
    ),
    (
        Rule::MissingTerminal,
        Some(12),
        None,
        "12",
        "missing_terminal",
        "rule 12 (missing_terminal)",
    ),
    (
        Rule::ThreadDurability,
        Some(13),
        None,
        "13",
        "thread_durability",
        "rule 13 (thread_durability)",
    ),
    (
        Rule::PendingInterrupt,
        Some(14),
        None,
        "14",
        "pending_interrupt",
        "rule 14 (pending_interrupt)",
    ),
    (
        Rule::DurabilityUncertain,
        Some(15),
        None,
        "15",
        "durability_uncertain",
        "rule 15 (durability_uncertain)",
    ),
    (
        Rule::D3Contiguous,
        Some(1),
        Some("D3"),
        "1",
        "contiguous_sequence",
        "rule 1 (contiguous_sequence, D3)",
    ),
    (
        Rule::D4CloseEvents,
        Some(8),
        Some("D4"),
        "8",
        "interrupt_close_events",
        "rule 8 (interrupt_close_events, D4)",
    ),
    (
        Rule::D5OpenText,
        Some(5),
        Some("D5"),
        "5",
        "text_span_open_at_terminal",
        "rule 5 (text_span_open_at_terminal, D5)",
    ),
    (
        Rule::D5OpenTool,
        Some(6),
        Some("D5"),
        "6",
        "tool_call_open_at_terminal",
        "rule 6 (tool_call_open_at_terminal, D5)",
    ),
    (
        Rule::D5OpenNamespace,
        Some(9),
        Some("D5"),
        "9",
        "namespace_open_at_terminal",
        "rule 9 (namespace_open_at_terminal, D5)",
    ),
    (
        Rule::D6Arguments,
        Some(6),
        Some("D6"),
        "6",
        "tool_arguments",
        "rule 6 (tool_arguments, D6)",
    ),
    (
        Rule::RunIdentity,
        None,
        None,
        "X",
        "run_identity",
        "rule X (run_identity)",
    ),
];

#[test]
fn every_rule_has_its_number_decision_id_name_and_text() {
    assert_eq!(Rule::ALL.len(), RULES.len());
    for (i, (rule, number, decision, id, name, text)) in RULES.into_iter().enumerate() {
        assert_eq!(Rule::ALL[i], rule, "Rule::ALL's order");
        assert_eq!(rule.number(), number, "{rule:?}");
        assert_eq!(rule.decision(), decision, "{rule:?}");
        assert_eq!(rule.id(), id, "{rule:?}");
        assert_eq!(rule.name(), name, "{rule:?}");
        assert_eq!(rule.to_string(), text, "{rule:?}");
    }
}

#[test]
fn rules_are_found_by_id_decision_and_name() {
    for (rule, _, decision, id, name, _) in RULES {
        assert_eq!(Rule::from_id_and_decision(id, decision), Some(rule));
        assert_eq!(Rule::from_name(name), Some(rule));
        // `from_id` finds the contract's own rule of that id.
        let own = Rule::from_id(id).unwrap();
        assert_eq!((own.id(), own.decision()), (id, None));
    }
    assert_eq!(Rule::from_id("8"), Some(Rule::Interrupt));
    assert_eq!(Rule::from_id("X"), Some(Rule::RunIdentity));
    assert_eq!(Rule::from_id("16"), None);
    assert_eq!(
        Rule::from_id_and_decision("6", Some("D5")),
        Some(Rule::D5OpenTool)
    );
    assert_eq!(Rule::from_id_and_decision("8", Some("D5")), None);
    assert_eq!(Rule::from_id_and_decision("1", Some("D4")), None);
    assert_eq!(Rule::from_name("Sequence"), None);
}

#[test]
fn causes_are_rule_ids_or_step_names() {
    for (rule, _, _, id, _, _) in RULES {
        let cause = Cause::from(rule);
        assert_eq!(cause, Cause::Rule(rule));
        assert_eq!((cause.as_str(), cause.rule()), (id, Some(rule)));
        assert_eq!(cause.to_string(), id);
    }
    for (cause, id) in [
        (Cause::Parse, "parse"),
        (Cause::Sanitize, "sanitize"),
        (Cause::Encode, "encode"),
        (Cause::Io, "io"),
    ] {
        assert_eq!((cause.as_str(), cause.rule()), (id, None));
        assert_eq!(cause.to_string(), id);
    }
    // `Display` pads like a string.
    assert_eq!(format!("[{:>4}]", Cause::Io), "[  io]");
}

#[test]
fn wire_formats_have_one_name_and_their_content_type() {
    let want = [
        (
            WireFormat::Custom,
            "custom",
            "text/event-stream; charset=utf-8",
        ),
        (WireFormat::Agui, "agui", "text/event-stream; charset=utf-8"),
        (WireFormat::AguiV1, "agui-v1", "text/event-stream"),
    ];
    assert_eq!(WireFormat::ALL.len(), want.len());
    for (i, (format, name, content_type)) in want.into_iter().enumerate() {
        assert_eq!(WireFormat::ALL[i], format);
        assert_eq!(format.name(), name);
        assert_eq!(format.to_string(), name);
        assert_eq!(format.content_type(), content_type);
        assert_eq!(WireFormat::from_name(name), Some(format));
    }
    assert_eq!(WireFormat::from_name("AGUI"), None);
    assert_eq!(WireFormat::from_name(""), None);
}

/// Keeps the run ids of what it records.
#[derive(Default)]
struct Kept(Mutex<Vec<String>>);

impl AuditSink for Kept {
    fn record(&self, record: &AuditRecord) {
        self.0.lock().unwrap().push(record.run_id.clone());
    }
}

#[test]
fn a_shared_sink_records_through_what_it_shares() {
    let kept = Arc::new(Kept::default());
    let shared: Arc<Kept> = Arc::clone(&kept);
    let record = AuditRecord {
        run_id: "run-1".to_owned(),
        conversation_id: "c".to_owned(),
        terminal: EventType::RunFinished,
        sequence: Some(3),
        code: None,
        side_effect_status: None,
        rule: None,
        reason: None,
        coordinator_terminal: false,
        counters: RunCounters::default(),
    };
    // Through `impl AuditSink for Arc<T>`, not `Kept`'s own.
    AuditSink::record(&shared, &record);
    assert_eq!(*kept.0.lock().unwrap(), ["run-1"]);
}
