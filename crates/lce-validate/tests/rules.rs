//! One test (or a few) per rule, with the modes and options.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_testkit::RunBuilder;
use lce_types::{Event, EventType, Limits};
use lce_validate::{Mode, Rule, RunValidator, ToolSchemas, ValidatorOptions, Violation};

/// `(type, namespace, data)`; sequences are numbered from 0.
type Spec<'a> = (&'a str, &'a [&'a str], &'a str);

/// The event `(ty, ns, data)` at `seq`, in run `r` of `c`; its timestamp
/// text is fixed (`2026-08-17T00:00:00Z`), so every event of a given type and
/// data has the same size, whatever its place (rule 11 counts bytes).
fn ev_seq(ty: &str, seq: u64, ns: &[&str], data: &str) -> Event {
    RunBuilder::new("r", "c")
        .set_sequence(seq)
        .set_timestamp("2026-08-17T00:00:00Z")
        .at(ns)
        .event(ty, data)
}

fn events(specs: &[Spec<'_>]) -> Vec<Event> {
    specs
        .iter()
        .enumerate()
        .map(|(i, (ty, ns, data))| ev_seq(ty, i as u64, ns, data))
        .collect()
}

fn run_with(evs: &[Event], opts: ValidatorOptions) -> Result<(), Violation> {
    let mut v = RunValidator::new(opts);
    for e in evs {
        v.push(e)?;
    }
    v.finish()
}

fn run(specs: &[Spec<'_>]) -> Result<(), Violation> {
    run_with(&events(specs), ValidatorOptions::new())
}

#[track_caller]
fn broken(specs: &[Spec<'_>], rule: Rule, seq: u64) -> Violation {
    let v = run(specs).expect_err("expected a violation");
    assert_eq!((v.rule, v.sequence), (rule, seq), "{v}");
    v
}

/// [`broken`] for each of `cases`, `(specs, seq)`: each breaks `rule`
/// first at `seq`.
#[track_caller]
fn broken_each(rule: Rule, cases: &[(&[Spec<'_>], u64)]) {
    for (specs, seq) in cases {
        broken(specs, rule, *seq);
    }
}

/// `root_events! { NAME = "type", data; ... }`: one `Spec` constant each,
/// in the root namespace.
macro_rules! root_events {
    ($($name:ident = $ty:literal, $data:literal;)*) => {
        $(const $name: Spec<'static> = ($ty, &[], $data);)*
    };
}

// The events the tests combine, one constant each: a table, alike by
// design (each differs in its data, which is the point).
root_events! {
    STARTED = "run.started", r#"{"harness_id":"h","adapter_version":"1"}"#;
    FINISHED = "run.finished", r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":3,"head_ref":"h"}}"#;
    CANCELLED = "run.cancelled", r#"{"reason":"client_request","side_effect_status":"none"}"#;
    ERROR = "run.error", r#"{"code":"internal","message":"m","retryable":false,"side_effect_status":"none"}"#;
    UNCERTAIN = "run.error", r#"{"code":"thread_durability_uncertain","message":"m","retryable":false,"side_effect_status":"possible"}"#;
    T_START = "text.started", r#"{"message_id":"m","role":"assistant"}"#;
    T_DELTA = "text.delta", r#"{"message_id":"m","delta":"secret words"}"#;
    T_END = "text.finished", r#"{"message_id":"m"}"#;
    FORM = "interrupt.requested", r#"{"interrupt_id":"i1","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[]}"#;
    INTERRUPTED = "run.interrupted", r#"{"interrupt_id":"i1","reason":"human_input"}"#;
    TOOL = "tool.started", r#"{"tool_call_id":"t","tool_name":"search","arguments":{"q":"x"}}"#;
    TOOL_STREAMED = "tool.started", r#"{"tool_call_id":"t","tool_name":"search","arguments":{}}"#;
    TOOL_DONE = "tool.finished", r#"{"tool_call_id":"t","result":"ok"}"#;
    TOOL_ERR = "tool.error", r#"{"tool_call_id":"t","code":"tool_error","message":"m","retryable":false}"#;
    ENTER = "namespace.entered", r#"{"agent_id":"a","agent_name":"A","parent_tool_call_id":"t"}"#;
    EXIT = "namespace.exited", r#"{"agent_id":"a","parent_tool_call_id":"t","outcome":"success"}"#;
    WARN = "warning", r#"{"code":"w","message":"m"}"#;
}

fn delta(d: &str) -> String {
    format!(
        r#"{{"tool_call_id":"t","delta":{}}}"#,
        serde_json::to_string(d).unwrap()
    )
}

#[test]
fn a_minimal_run_passes() {
    run(&[STARTED, T_START, T_DELTA, T_END, FINISHED]).unwrap();
    run(&[STARTED, CANCELLED]).unwrap();
}

#[test]
fn validate_run_is_push_then_finish() {
    let opts = ValidatorOptions::new;
    let clean = events(&[STARTED, T_START, T_DELTA, T_END, FINISHED]);
    assert_eq!(lce_validate::validate_run(&clean, opts()), Ok(()));
    // A break while pushing: the first violation, as `push` reports it.
    let mut evs = events(&[STARTED, T_START, T_END, FINISHED]);
    evs[2].sequence = 1;
    let v = lce_validate::validate_run(&evs, opts()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Sequence, 1));
    assert_eq!(Err(v), run_with(&evs, opts()));
    // A break only `finish` sees.
    let open = events(&[STARTED, T_START]);
    let v = lce_validate::validate_run(&open, opts()).unwrap_err();
    assert_eq!(
        (v.rule, v.sequence, v.event_type),
        (Rule::MissingTerminal, 1, Some(EventType::TextStarted))
    );
    // The options are used: the same run is clean, then not, with D3.
    let mut gap = events(&[STARTED, T_START, T_END, FINISHED]);
    gap[3].sequence = 10;
    assert_eq!(lce_validate::validate_run(&gap, opts()), Ok(()));
    let v = lce_validate::validate_run(&gap, opts().contiguous(true)).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::D3Contiguous, 10));
}

#[test]
fn rule_ids_names_and_display() {
    for r in Rule::ALL {
        assert_eq!(Rule::from_id_and_decision(r.id(), r.decision()), Some(*r));
        assert_eq!(Rule::from_name(r.name()), Some(*r));
        if r.decision().is_none() {
            assert_eq!(Rule::from_id(r.id()), Some(*r));
        }
        assert!(
            r.name()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_')
        );
        // Every rule but the run identity has a contract number, and its id
        // is that number.
        assert_eq!(
            r.number().map(|n| n.to_string()),
            r.id().parse::<u8>().ok().map(|n| n.to_string())
        );
        assert_eq!(r.number().is_none(), *r == Rule::RunIdentity, "{r}");
        assert!((1..=15).contains(&r.number().unwrap_or(1)), "{r}");
    }
    // A decision's check is the rule it refines, the decision as detail.
    for (rule, number, decision) in [
        (Rule::D3Contiguous, 1, "D3"),
        (Rule::D4CloseEvents, 8, "D4"),
        (Rule::D5OpenText, 5, "D5"),
        (Rule::D5OpenTool, 6, "D5"),
        (Rule::D5OpenNamespace, 9, "D5"),
        (Rule::D6Arguments, 6, "D6"),
    ] {
        assert_eq!(
            (rule.number(), rule.decision()),
            (Some(number), Some(decision))
        );
        assert_eq!(rule.id(), number.to_string());
        assert_eq!(
            rule.to_string(),
            format!("rule {number} ({}, {decision})", rule.name())
        );
    }
    assert_eq!(Rule::from_id("8"), Some(Rule::Interrupt));
    assert_eq!(Rule::from_id("X"), Some(Rule::RunIdentity));
    assert_eq!(Rule::from_id("D4"), None);
    assert_eq!(
        Rule::from_id_and_decision("8", Some("D4")),
        Some(Rule::D4CloseEvents)
    );
    assert_eq!(
        Rule::from_id_and_decision("6", Some("D5")),
        Some(Rule::D5OpenTool)
    );
    assert_eq!(Rule::from_id_and_decision("7", Some("D4")), None);
    assert_eq!(Rule::RunIdentity.to_string(), "rule X (run_identity)");
    assert_eq!(Rule::RunIdentity.decision(), None);
    let v = broken(
        &[
            STARTED,
            ("text.delta", &[], r#"{"message_id":"m7","delta":"x"}"#),
        ],
        Rule::TextSpan,
        1,
    );
    assert_eq!(
        v.to_string(),
        "seq 1: rule 5 (text_span): text.delta for message `m7` that was never started"
    );
    assert_eq!(v.event_type, Some(EventType::TextDelta));
}

#[test]
fn rule_1_sequence() {
    let mut evs = events(&[STARTED, T_START, T_END, FINISHED]);
    evs[2].sequence = 1;
    let v = run_with(&evs, ValidatorOptions::new()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Sequence, 1));
    // Gaps are allowed, unless contiguous (D3).
    let mut evs = events(&[STARTED, T_START, T_END, FINISHED]);
    evs[3].sequence = 10;
    run_with(&evs, ValidatorOptions::new()).unwrap();
    let v = run_with(&evs, ValidatorOptions::new().contiguous(true)).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::D3Contiguous, 10));
    // D3 refines rule 1.
    assert_eq!((v.rule.id(), v.rule.decision()), ("1", Some("D3")));
    assert_eq!(
        v.to_string(),
        "seq 10: rule 1 (contiguous_sequence, D3): sequence jumps from 2 to 10"
    );
}

#[test]
fn rule_2_run_started() {
    broken(&[T_START, T_END, FINISHED], Rule::RunStarted, 0);
    broken(&[STARTED, STARTED, FINISHED], Rule::RunStarted, 1);
    let evs = vec![ev_seq("run.started", 3, &[], STARTED.2)];
    let v = run_with(&evs, ValidatorOptions::new()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::RunStarted, 3));
}

#[test]
fn rules_3_4_terminals() {
    broken(&[STARTED, CANCELLED, ERROR], Rule::SingleTerminal, 2);
    broken(&[STARTED, FINISHED, WARN], Rule::AfterTerminal, 2);
}

#[test]
fn rule_5_text_and_reasoning_spans() {
    broken_each(
        Rule::TextSpan,
        &[
            (&[STARTED, T_DELTA, FINISHED], 1),
            (&[STARTED, T_START, T_START, FINISHED], 2),
            (&[STARTED, T_START, T_END, T_END, FINISHED], 3),
            (&[STARTED, T_START, T_END, T_DELTA, FINISHED], 3),
            // Text and reasoning ids are separate.
            (
                &[
                    STARTED,
                    T_START,
                    ("reasoning.delta", &[], r#"{"message_id":"m","delta":"x"}"#),
                    FINISHED,
                ],
                2,
            ),
        ],
    );
    run(&[
        STARTED,
        T_START,
        (
            "reasoning.started",
            &[],
            r#"{"message_id":"m","role":"assistant"}"#,
        ),
        ("reasoning.finished", &[], r#"{"message_id":"m"}"#),
        T_END,
        FINISHED,
    ])
    .unwrap();
}

#[test]
fn d7_empty_deltas_are_ignored() {
    run(&[
        STARTED,
        ("text.delta", &[], r#"{"message_id":"nobody","delta":""}"#),
        FINISHED,
    ])
    .unwrap();
    // An empty argument delta neither needs a call nor ends an assembly.
    run(&[
        STARTED,
        TOOL_STREAMED,
        ("tool.arguments.delta", &[], &delta("{\"q\":")),
        (
            "tool.arguments.delta",
            &[],
            r#"{"tool_call_id":"other","delta":""}"#,
        ),
        ("tool.arguments.delta", &[], &delta("1}")),
        TOOL_DONE,
        FINISHED,
    ])
    .unwrap();
    // But it is still an event of the run: sequence and terminal rules hold.
    broken(
        &[
            STARTED,
            FINISHED,
            ("text.delta", &[], r#"{"message_id":"m","delta":""}"#),
        ],
        Rule::AfterTerminal,
        2,
    );
}

#[test]
fn rules_6_7_tool_calls() {
    broken_each(
        Rule::ToolCall,
        &[
            (&[STARTED, TOOL_DONE, FINISHED], 1),
            (&[STARTED, TOOL, TOOL, FINISHED], 2),
            (&[STARTED, TOOL, TOOL_DONE, TOOL_DONE, FINISHED], 3),
            (&[STARTED, TOOL, TOOL_ERR, TOOL_ERR, FINISHED], 3),
        ],
    );
    broken(
        &[STARTED, TOOL, TOOL_DONE, TOOL_ERR, FINISHED],
        Rule::ToolOutcome,
        3,
    );
    broken(
        &[STARTED, TOOL, TOOL_ERR, TOOL_DONE, FINISHED],
        Rule::ToolOutcome,
        3,
    );
    broken(
        &[
            STARTED,
            ("tool.arguments.delta", &[], &delta("{}")),
            FINISHED,
        ],
        Rule::ToolCall,
        1,
    );
}

#[test]
fn rule_8_and_d4_interrupts() {
    run(&[STARTED, T_START, FORM, T_END, INTERRUPTED]).unwrap();
    broken(&[STARTED, FORM, FORM, INTERRUPTED], Rule::Interrupt, 2);
    broken(&[STARTED, FORM, FINISHED], Rule::Interrupt, 2);
    let v = broken(&[STARTED, FORM, WARN, INTERRUPTED], Rule::D4CloseEvents, 2);
    assert_eq!(
        v.message,
        "warning after interrupt.requested; only close events may follow it"
    );
    broken(
        &[STARTED, T_START, FORM, T_DELTA, T_END, INTERRUPTED],
        Rule::D4CloseEvents,
        3,
    );
    // The coordinator's own terminals may replace run.interrupted.
    run(&[STARTED, FORM, CANCELLED]).unwrap();
    run(&[STARTED, FORM, ERROR]).unwrap();
    run(&[STARTED, FORM, UNCERTAIN]).unwrap();
    // namespace.exited closes only with outcome `interrupted`.
    let exit_int: Spec<'_> = (
        "namespace.exited",
        &[],
        r#"{"agent_id":"a","parent_tool_call_id":"t","outcome":"interrupted"}"#,
    );
    let form_in: Spec<'_> = ("interrupt.requested", &["t"], FORM.2);
    run(&[
        STARTED,
        TOOL,
        ENTER,
        form_in,
        exit_int,
        TOOL_ERR,
        INTERRUPTED,
    ])
    .unwrap();
    let v = broken(
        &[STARTED, TOOL, ENTER, form_in, EXIT, INTERRUPTED],
        Rule::D4CloseEvents,
        4,
    );
    // Its own message: a close event, with the wrong outcome.
    assert_eq!(
        v.message,
        "namespace.exited with outcome success after interrupt.requested (only `interrupted` closes)"
    );
}

/// A text span in namespace `["t"]` (entered by `ENTER`), and its end.
const CHILD_TEXT: Spec<'static> = (
    "text.started",
    &["t"],
    r#"{"message_id":"c","role":"assistant"}"#,
);
const CHILD_END: Spec<'static> = ("text.finished", &["t"], r#"{"message_id":"c"}"#);
/// A delegation call `u` inside `["t"]`, and its namespace `["t","u"]`.
const INNER_TOOL: Spec<'static> = (
    "tool.started",
    &["t"],
    r#"{"tool_call_id":"u","tool_name":"task","arguments":{"a":1}}"#,
);
const INNER_ENTER: Spec<'static> = (
    "namespace.entered",
    &["t"],
    r#"{"agent_id":"b","agent_name":"B","parent_tool_call_id":"u"}"#,
);

#[test]
fn rule_9_namespace_balance() {
    run(&[
        STARTED, TOOL, ENTER, CHILD_TEXT, CHILD_END, EXIT, TOOL_DONE, FINISHED,
    ])
    .unwrap();
    // Exit without entry, other agent, twice, entered twice, inner still
    // active.
    broken_each(
        Rule::NamespaceBalance,
        &[
            (&[STARTED, TOOL, EXIT, TOOL_DONE, FINISHED], 2),
            (
                &[
                    STARTED,
                    TOOL,
                    ENTER,
                    (
                        "namespace.exited",
                        &[],
                        r#"{"agent_id":"b","parent_tool_call_id":"t","outcome":"success"}"#,
                    ),
                ],
                3,
            ),
            (&[STARTED, TOOL, ENTER, EXIT, EXIT], 4),
            (&[STARTED, TOOL, ENTER, ENTER], 3),
            (&[STARTED, TOOL, ENTER, INNER_TOOL, INNER_ENTER, EXIT], 5),
            // The exit carries the parent's path (D1).
            (
                &[
                    STARTED,
                    TOOL,
                    ENTER,
                    INNER_TOOL,
                    INNER_ENTER,
                    (
                        "namespace.exited",
                        &[],
                        r#"{"agent_id":"b","parent_tool_call_id":"u","outcome":"success"}"#,
                    ),
                ],
                5,
            ),
            // A second namespace for the same delegation call.
            (
                &[
                    STARTED,
                    TOOL,
                    ENTER,
                    (
                        "namespace.entered",
                        &["t"],
                        r#"{"agent_id":"b","agent_name":"B","parent_tool_call_id":"t"}"#,
                    ),
                ],
                3,
            ),
        ],
    );
}

/// A namespace entered again is rule 9 when either of the two memories
/// still knows it: the exited namespace, or its delegation call (which
/// outlives a forgotten namespace while it is open, and is forgotten on its
/// own once ended). With a window of one, each case leaves only one.
#[test]
fn rule_9_reentry_is_known_from_the_namespace_or_its_call() {
    let opts = || ValidatorOptions::new().closed_window(1);
    let args = r#"{"a":1}"#;
    // The namespace forgotten (another exited after it), its call open.
    let mut r = RunBuilder::new("r", "c");
    let evs = [
        r.run_started(),
        r.tool_started("t", "task", args),
        r.namespace_entered("a", "A", "t"),
        r.namespace_exited("a", "t"),
        r.tool_started("v", "task", args),
        r.namespace_entered("b", "B", "v"),
        r.namespace_exited("b", "v"),
        r.namespace_entered("a", "A", "t"),
    ];
    let v = run_with(&evs, opts()).unwrap_err();
    assert_eq!(
        (v.rule, v.sequence, v.message.as_str()),
        (Rule::NamespaceBalance, 7, "namespace `t` entered again")
    );
    // The call forgotten (another ended after it), the namespace remembered.
    let mut r = RunBuilder::new("r", "c");
    let evs = [
        r.run_started(),
        r.tool_started("t", "task", args),
        r.namespace_entered("a", "A", "t"),
        r.namespace_exited("a", "t"),
        r.tool_finished("t", "ok"),
        r.tool_started("u", "task", args),
        r.tool_finished("u", "ok"),
        r.namespace_entered("a", "A", "t"),
    ];
    let v = run_with(&evs, opts()).unwrap_err();
    assert_eq!(
        (v.rule, v.sequence, v.message.as_str()),
        (Rule::NamespaceBalance, 7, "namespace `t` entered again")
    );
}

#[test]
fn rule_10_namespace_active() {
    // Unknown namespace, wrong path, exited namespace.
    broken_each(
        Rule::NamespaceActive,
        &[
            (&[STARTED, TOOL, CHILD_TEXT], 2),
            (
                &[
                    STARTED,
                    TOOL,
                    ENTER,
                    INNER_TOOL,
                    INNER_ENTER,
                    ("warning", &["u"], WARN.2),
                ],
                5,
            ),
            (
                &[STARTED, TOOL, ENTER, EXIT, ("warning", &["t"], WARN.2)],
                4,
            ),
            // D2: the delegation call is started in the parent namespace, open, and
            // not finished while its namespace is active.
            (&[STARTED, ENTER], 1),
            (&[STARTED, TOOL, TOOL_DONE, ENTER], 3),
            (&[STARTED, TOOL, ENTER, TOOL_DONE], 3),
            // Span events stay in the namespace their span started in.
            (
                &[
                    STARTED,
                    TOOL,
                    ENTER,
                    CHILD_TEXT,
                    ("text.finished", &[], r#"{"message_id":"c"}"#),
                ],
                4,
            ),
            // Run events are root events.
            (
                &[STARTED, TOOL, ENTER, ("run.cancelled", &["t"], CANCELLED.2)],
                3,
            ),
        ],
    );
}

#[test]
fn rule_11_limits() {
    let mut limits = Limits::default();
    limits.events_per_run = 3;
    let evs = events(&[STARTED, T_START, T_END, FINISHED]);
    let v = run_with(&evs, ValidatorOptions::new().limits(limits)).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Limits, 3));

    let evs = events(&[STARTED, T_START, T_DELTA, T_END, FINISHED]);
    let total: u64 = evs.iter().map(|e| e.to_json().len() as u64).sum();
    let mut limits = Limits::default();
    limits.bytes_per_run = total - 1;
    let v = run_with(&evs, ValidatorOptions::new().limits(limits.clone())).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Limits, 4));
    limits.bytes_per_run = total;
    run_with(&evs, ValidatorOptions::new().limits(limits)).unwrap();

    let mut limits = Limits::default();
    limits.tool_result_bytes = 1;
    limits.tool_arguments_bytes = 9;
    let opts = ValidatorOptions::new().limits(limits);
    let v = run_with(&events(&[STARTED, TOOL, TOOL_DONE, FINISHED]), opts.clone()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Limits, 2));
    let big: Spec<'_> = (
        "tool.started",
        &[],
        r#"{"tool_call_id":"t","tool_name":"s","arguments":{"q":"xyz"}}"#,
    );
    let v = run_with(&events(&[STARTED, big]), opts.clone()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Limits, 1));
    let (d1, d2) = (delta("{\"q\":"), delta("\"xy\"}"));
    let v = run_with(
        &events(&[
            STARTED,
            TOOL_STREAMED,
            ("tool.arguments.delta", &[], &d1),
            ("tool.arguments.delta", &[], &d2),
        ]),
        opts,
    )
    .unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Limits, 3));
    // Streamed arguments of exactly the bound are within it.
    let d3 = delta("\"x\"}");
    let mut limits = Limits::default();
    limits.tool_arguments_bytes = 9;
    let mut v = RunValidator::new(ValidatorOptions::new().limits(limits));
    for e in events(&[
        STARTED,
        TOOL_STREAMED,
        ("tool.arguments.delta", &[], &d1),
        ("tool.arguments.delta", &[], &d3),
    ]) {
        v.push(&e).unwrap();
    }

    // Namespace depth.
    let mut limits = Limits::default();
    limits.namespace_depth = 0;
    let v = run_with(
        &events(&[STARTED, TOOL, ENTER]),
        ValidatorOptions::new().limits(limits),
    )
    .unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::Limits, 2));
}

#[test]
fn rule_12_missing_terminal() {
    let v = run(&[STARTED, T_START]).unwrap_err();
    assert_eq!(
        (v.rule, v.sequence, v.event_type),
        (Rule::MissingTerminal, 1, Some(EventType::TextStarted))
    );
    let v = run(&[]).unwrap_err();
    assert_eq!(
        (v.rule, v.sequence, v.event_type),
        (Rule::MissingTerminal, 0, None)
    );
}

#[test]
fn rule_13_thread_state_by_mode() {
    let bare: Spec<'_> = ("run.finished", &[], r#"{"outcome":"success"}"#);
    let uncommitted: Spec<'_> = (
        "run.finished",
        &[],
        r#"{"outcome":"success","thread_state":{"durability":"uncommitted","durable_revision":3,"head_ref":"h"}}"#,
    );
    broken(&[STARTED, bare], Rule::ThreadDurability, 1);
    broken(&[STARTED, uncommitted], Rule::ThreadDurability, 1);
    let ephemeral = ValidatorOptions::new().ephemeral(true);
    run_with(&events(&[STARTED, bare]), ephemeral.clone()).unwrap();
    let v = run_with(&events(&[STARTED, FINISHED]), ephemeral).unwrap_err();
    assert_eq!(v.rule, Rule::ThreadDurability);
    for spec in [bare, uncommitted, FINISHED] {
        run_with(
            &events(&[STARTED, spec]),
            ValidatorOptions::new().mode(Mode::Adapter),
        )
        .unwrap();
        run_with(
            &events(&[STARTED, spec]),
            ValidatorOptions::new().mode(Mode::Adapter).ephemeral(true),
        )
        .unwrap();
    }
}

/// Issue 16 (D19 amended): a durability other than `committed` parses and
/// is a rule-13 violation in full mode, with a message that says so; the
/// adapter mode skips rule 13 (D10a: the coordinator replaces an adapter's
/// `thread_state`).
#[test]
fn rule_13_durability_other_than_committed() {
    let pending: Spec<'_> = (
        "run.finished",
        &[],
        r#"{"outcome":"success","thread_state":{"durability":"pending","durable_revision":3,"head_ref":"h"}}"#,
    );
    let v = broken(&[STARTED, pending], Rule::ThreadDurability, 1);
    assert_eq!(
        v.to_string(),
        "seq 1: rule 13 (thread_durability): run.finished thread_state.durability is `pending`, not `committed`"
    );
    let uncommitted: Spec<'_> = (
        "run.finished",
        &[],
        r#"{"outcome":"success","thread_state":{"durability":"uncommitted","durable_revision":3,"head_ref":"h"}}"#,
    );
    let v = broken(&[STARTED, uncommitted], Rule::ThreadDurability, 1);
    assert_eq!(
        v.message,
        "run.finished thread_state.durability is `uncommitted`, not `committed`"
    );
    // An unusual code is shown by its size only.
    let odd: Spec<'_> = (
        "run.finished",
        &[],
        r#"{"outcome":"success","thread_state":{"durability":"p\"nd ng","durable_revision":3,"head_ref":"h"}}"#,
    );
    let v = broken(&[STARTED, odd], Rule::ThreadDurability, 1);
    assert_eq!(
        v.message,
        "run.finished thread_state.durability is <7 byte code>, not `committed`"
    );
    for spec in [pending, odd] {
        run_with(
            &events(&[STARTED, spec]),
            ValidatorOptions::new().mode(Mode::Adapter),
        )
        .unwrap();
        // Ephemeral in full mode: any thread_state claims a commit.
        let v = run_with(
            &events(&[STARTED, spec]),
            ValidatorOptions::new().ephemeral(true),
        )
        .unwrap_err();
        assert_eq!(v.rule, Rule::ThreadDurability);
    }
}

/// Issue 16 (D19, amended): a run ending in `run.error` with a fractional
/// (or any other valid) `retry_after_seconds` validates, and its size (rule
/// 11) counts the exact number text.
#[test]
fn run_error_with_a_fractional_retry_after_validates() {
    for v in ["0.25", "0", "86400", "1e2"] {
        let data = format!(
            r#"{{"code":"rate_limited","message":"m","retryable":true,"retry_after_seconds":{v},"side_effect_status":"none"}}"#
        );
        let evs = events(&[STARTED, T_START, ("run.error", &[], &data)]);
        for opts in [
            ValidatorOptions::new(),
            ValidatorOptions::new().mode(Mode::Adapter),
        ] {
            run_with(&evs, opts).unwrap();
        }
        let total: u64 = evs.iter().map(|e| e.to_json().len() as u64).sum();
        assert_eq!(
            evs[2].to_json(),
            format!(
                r#"{{"version":1,"type":"run.error","run_id":"r","conversation_id":"c","sequence":2,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
            )
        );
        let mut limits = Limits::default();
        limits.bytes_per_run = total;
        run_with(&evs, ValidatorOptions::new().limits(limits.clone())).unwrap();
        limits.bytes_per_run = total - 1;
        let v = run_with(&evs, ValidatorOptions::new().limits(limits)).unwrap_err();
        assert_eq!((v.rule, v.sequence), (Rule::Limits, 2));
    }
}

#[test]
fn rule_14_pending_interrupt_in_both_modes() {
    for opts in [
        ValidatorOptions::new(),
        ValidatorOptions::new().mode(Mode::Adapter),
    ] {
        let cases: [&[Spec<'_>]; 3] = [
            &[STARTED, INTERRUPTED],
            &[
                STARTED,
                FORM,
                (
                    "run.interrupted",
                    &[],
                    r#"{"interrupt_id":"i2","reason":"human_input"}"#,
                ),
            ],
            &[
                STARTED,
                FORM,
                (
                    "run.interrupted",
                    &[],
                    r#"{"interrupt_id":"i1","reason":"tool_approval"}"#,
                ),
            ],
        ];
        for specs in cases {
            let v = run_with(&events(specs), opts.clone()).unwrap_err();
            assert_eq!(
                (v.rule, v.sequence),
                (Rule::PendingInterrupt, specs.len() as u64 - 1)
            );
        }
    }
}

#[test]
fn rule_15_durability_uncertain_is_final() {
    broken(
        &[STARTED, UNCERTAIN, FINISHED],
        Rule::DurabilityUncertain,
        2,
    );
    broken(&[STARTED, UNCERTAIN, WARN], Rule::DurabilityUncertain, 2);
    run(&[STARTED, T_START, UNCERTAIN]).unwrap();
}

/// Issue 16: a D4 violation is a violation of rule 8, and reported as rule
/// 8 with D4 as its detail (decisions.md, D4).
#[test]
fn d4_is_reported_as_rule_8() {
    let tool_after: Spec<'_> = (
        "tool.started",
        &[],
        r#"{"tool_call_id":"late","tool_name":"search","arguments":{"q":"x"}}"#,
    );
    let v = broken(
        &[STARTED, FORM, tool_after, INTERRUPTED],
        Rule::D4CloseEvents,
        2,
    );
    assert_eq!(v.rule.id(), "8");
    assert_eq!(v.rule.number(), Some(8));
    assert_eq!(v.rule.decision(), Some("D4"));
    assert_eq!(
        v.to_string(),
        "seq 2: rule 8 (interrupt_close_events, D4): tool.started after interrupt.requested; only close events may follow it"
    );
}

#[test]
fn d5_open_spans_at_terminals() {
    // Reported as the rule of the span left open: text and reasoning 5,
    // tool calls 6, namespaces 9; D5 is the detail.
    let v = broken(&[STARTED, T_START, FINISHED], Rule::D5OpenText, 2);
    assert_eq!((v.rule.id(), v.rule.decision()), ("5", Some("D5")));
    assert_eq!(
        v.to_string(),
        "seq 2: rule 5 (text_span_open_at_terminal, D5): run.finished with spans still open: 1 text"
    );
    let v = broken(&[STARTED, TOOL, FINISHED], Rule::D5OpenTool, 2);
    assert_eq!((v.rule.id(), v.rule.decision()), ("6", Some("D5")));
    let v = broken(&[STARTED, T_START, FORM, INTERRUPTED], Rule::D5OpenText, 3);
    assert_eq!(v.rule.id(), "5");
    let reasoning: Spec<'_> = (
        "reasoning.started",
        &[],
        r#"{"message_id":"r","role":"assistant"}"#,
    );
    broken(&[STARTED, reasoning, FINISHED], Rule::D5OpenText, 2);
    // An active namespace keeps its delegation call open (D2): the
    // namespace is what was left open, rule 9.
    let v = broken(&[STARTED, TOOL, ENTER, FINISHED], Rule::D5OpenNamespace, 3);
    assert_eq!((v.rule.id(), v.rule.decision()), ("9", Some("D5")));
    assert_eq!(
        v.message,
        "run.finished with spans still open: 1 tool call, 1 namespace"
    );
    // Text before namespaces and calls; the message lists everything open.
    let v = broken(
        &[STARTED, TOOL, ENTER, T_START, FINISHED],
        Rule::D5OpenText,
        4,
    );
    assert_eq!(
        v.message,
        "run.finished with spans still open: 1 text, 1 tool call, 1 namespace"
    );
    // Tools and namespaces may stay open at run.interrupted; anything at
    // run.error / run.cancelled.
    run(&[
        STARTED,
        TOOL,
        ENTER,
        ("interrupt.requested", &["t"], FORM.2),
        INTERRUPTED,
    ])
    .unwrap();
    run(&[STARTED, T_START, TOOL, ENTER, ERROR]).unwrap();
}

#[test]
fn d6_streamed_arguments() {
    let d = |s: &str| delta(s);
    let (a, b) = (d("{\"q\":"), d("\"x\"}"));
    run(&[
        STARTED,
        TOOL_STREAMED,
        ("tool.arguments.delta", &[], &a),
        ("tool.arguments.delta", &[], &b),
        TOOL_DONE,
        FINISHED,
    ])
    .unwrap();
    // No deltas: the arguments are the started `{}`.
    run(&[STARTED, TOOL_STREAMED, TOOL_DONE, FINISHED]).unwrap();
    // Only after `{}`. D6 refines rule 6.
    let v = broken(
        &[STARTED, TOOL, ("tool.arguments.delta", &[], &a)],
        Rule::D6Arguments,
        2,
    );
    assert_eq!((v.rule.id(), v.rule.decision()), ("6", Some("D6")));
    assert_eq!(
        v.to_string(),
        "seq 2: rule 6 (tool_arguments, D6): tool.arguments.delta for call `t`, but its arguments were given at tool.started (only `{}` may stream)"
    );
    // Text after arguments that already form one object is caught at that
    // delta, not at the next event (so no encoder sees it after a live
    // release, D13a); whitespace after the object is fine.
    let (whole, junk, space) = (d("{\"q\":\"x\"}"), d("x"), d(" \n"));
    let v = broken(
        &[
            STARTED,
            TOOL_STREAMED,
            ("tool.arguments.delta", &[], &whole),
            ("tool.arguments.delta", &[], &space),
            ("tool.arguments.delta", &[], &junk),
            TOOL_DONE,
        ],
        Rule::D6Arguments,
        4,
    );
    assert_eq!(
        v.to_string(),
        "seq 4: rule 6 (tool_arguments, D6): tool.arguments.delta for call `t` continues arguments that already form one JSON object"
    );
    run(&[
        STARTED,
        TOOL_STREAMED,
        ("tool.arguments.delta", &[], &whole),
        ("tool.arguments.delta", &[], &space),
        TOOL_DONE,
        FINISHED,
    ])
    .unwrap();
    // Not after another event.
    broken(
        &[
            STARTED,
            TOOL_STREAMED,
            ("tool.arguments.delta", &[], &a),
            WARN,
            ("tool.arguments.delta", &[], &b),
        ],
        Rule::D6Arguments,
        3,
    );
    // Not after the call ended.
    broken(
        &[
            STARTED,
            TOOL_STREAMED,
            TOOL_DONE,
            ("tool.arguments.delta", &[], &a),
        ],
        Rule::D6Arguments,
        3,
    );
    // One JSON object, strict (no duplicate keys), complete at the next event.
    for bad in ["[1]", "{\"q\":", "{\"q\":1,\"q\":2}", "{} {}", "1"] {
        let x = d(bad);
        broken(
            &[
                STARTED,
                TOOL_STREAMED,
                ("tool.arguments.delta", &[], &x),
                WARN,
                TOOL_DONE,
                FINISHED,
            ],
            Rule::D6Arguments,
            3,
        );
    }
    // Interleaving with another call's deltas completes the first call.
    let other: Spec<'_> = (
        "tool.started",
        &[],
        r#"{"tool_call_id":"u","tool_name":"s","arguments":{}}"#,
    );
    broken(
        &[
            STARTED,
            TOOL_STREAMED,
            ("tool.arguments.delta", &[], &a),
            other,
        ],
        Rule::D6Arguments,
        3,
    );
    // run.cancelled / run.error discard unfinished arguments.
    run(&[
        STARTED,
        TOOL_STREAMED,
        ("tool.arguments.delta", &[], &a),
        CANCELLED,
    ])
    .unwrap();
    // The event that completes bad arguments is still applied.
    let mut v = RunValidator::new(ValidatorOptions::new());
    for e in events(&[
        STARTED,
        TOOL_STREAMED,
        ("tool.arguments.delta", &[], &a),
        TOOL_DONE,
    ]) {
        let _ = v.push(&e);
    }
    assert_eq!(v.failure().map(|f| f.rule), Some(Rule::D6Arguments));
    v.clear_failure();
    v.push(&ev_seq(FINISHED.0, 4, &[], FINISHED.2)).unwrap();
}

#[test]
fn d6_schemas() {
    let mut schemas = ToolSchemas::new();
    schemas
        .insert(
            "search",
            r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","required":["q"],"properties":{"q":{"type":"string","minLength":1}},"additionalProperties":false}"#,
        )
        .unwrap();
    assert!(schemas.contains("search") && schemas.len() == 1);
    let opts = ValidatorOptions::new().schemas(schemas);
    run_with(&events(&[STARTED, TOOL, TOOL_DONE, FINISHED]), opts.clone()).unwrap();
    let bad: Spec<'_> = (
        "tool.started",
        &[],
        r#"{"tool_call_id":"t","tool_name":"search","arguments":{"q":"TOPSECRET","extra":1}}"#,
    );
    let v = run_with(&events(&[STARTED, bad]), opts.clone()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::D6Arguments, 1));
    // The keyword and where, never the value.
    assert_eq!(
        v.message,
        "arguments of tool `search` fail their schema: keyword `additionalProperties` at / (schema /additionalProperties)"
    );
    // Streamed: checked when complete; `{}` misses `q`.
    let v = run_with(&events(&[STARTED, TOOL_STREAMED, TOOL_DONE]), opts.clone()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::D6Arguments, 2));
    assert_eq!(
        v.message,
        "call `t`: arguments of tool `search` fail their schema: keyword `required` at / (schema /required)"
    );
    let x = delta(r#"{"q":7}"#);
    let v = run_with(
        &events(&[
            STARTED,
            TOOL_STREAMED,
            ("tool.arguments.delta", &[], &x),
            TOOL_DONE,
        ]),
        opts,
    )
    .unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::D6Arguments, 3));
    assert_eq!(
        v.message,
        "call `t`: arguments of tool `search` fail their schema: keyword `type` at /q (schema /properties/q/type)"
    );
    // Broken schemas are refused at registration.
    let mut s = ToolSchemas::new();
    assert!(s.insert("x", "{").is_err());
    assert!(s.insert("x", r#"{"type":"no-such-type"}"#).is_err());
    assert!(
        s.insert("x", r#"{"$ref":"https://example.invalid/s.json"}"#)
            .is_err()
    );
}

#[test]
fn schemas_are_counted_by_tool() {
    let mut s = ToolSchemas::new();
    assert_eq!((s.len(), s.is_empty()), (0, true));
    s.insert("a", r#"{"type":"object"}"#).unwrap();
    s.insert("b", r#"{"type":"object"}"#).unwrap();
    assert_eq!((s.len(), s.is_empty()), (2, false));
    // Registered again: replaced, not added.
    s.insert("a", r#"{"type":"object","required":["q"]}"#)
        .unwrap();
    assert_eq!(s.len(), 2);
    // A refused schema adds nothing.
    assert!(s.insert("c", "{").is_err());
    assert_eq!((s.len(), s.contains("c")), (2, false));
}

#[test]
fn schemas_from_a_directory() {
    let dir = std::env::temp_dir().join(format!("lce-validate-schemas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("search.schema.json"),
        r#"{"type":"object","required":["q"]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), "ignored").unwrap();
    let s = ToolSchemas::from_dir(&dir).unwrap();
    assert_eq!(s.len(), 1);
    assert!(s.contains("search"));
    std::fs::write(dir.join("bad.schema.json"), "{").unwrap();
    assert!(ToolSchemas::from_dir(&dir).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_identity() {
    let mut evs = events(&[STARTED, T_START, T_END, FINISHED]);
    evs[2].run_id = "other".into();
    let v = run_with(&evs, ValidatorOptions::new()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::RunIdentity, 2));
    let mut evs = events(&[STARTED, T_START, T_END, FINISHED]);
    evs[3].conversation_id = "other".into();
    let v = run_with(&evs, ValidatorOptions::new()).unwrap_err();
    assert_eq!((v.rule, v.sequence), (Rule::RunIdentity, 3));
}

#[test]
fn a_failed_validator_stays_failed_until_cleared() {
    let evs = events(&[STARTED, T_DELTA, T_START, T_END, FINISHED]);
    let mut v = RunValidator::new(ValidatorOptions::new());
    v.push(&evs[0]).unwrap();
    let first = v.push(&evs[1]).unwrap_err();
    assert_eq!(v.push(&evs[2]).unwrap_err(), first);
    assert_eq!(v.finish().unwrap_err(), first);
    assert_eq!(v.failure(), Some(&first));
    v.clear_failure();
    for e in &evs[2..] {
        v.push(e).unwrap();
    }
    v.finish().unwrap();
}

#[test]
fn clear_failure_recovers_a_missing_start_and_a_rejected_terminal() {
    let evs = events(&[T_START, T_END, FINISHED]);
    let mut v = RunValidator::new(ValidatorOptions::new());
    assert_eq!(v.push(&evs[0]).unwrap_err().rule, Rule::RunStarted);
    v.clear_failure();
    // The run counts as started; the dropped text.started is missed.
    assert_eq!(v.push(&evs[1]).unwrap_err().rule, Rule::TextSpan);
    v.clear_failure();
    v.push(&evs[2]).unwrap();
    v.finish().unwrap();

    let evs = events(&[STARTED, T_START, FINISHED, WARN]);
    let mut v = RunValidator::new(ValidatorOptions::new());
    v.push(&evs[0]).unwrap();
    v.push(&evs[1]).unwrap();
    assert_eq!(v.push(&evs[2]).unwrap_err().rule, Rule::D5OpenText);
    v.clear_failure();
    assert!(v.is_terminated());
    assert_eq!(v.push(&evs[3]).unwrap_err().rule, Rule::AfterTerminal);
    v.clear_failure();
    v.finish().unwrap();
}

#[test]
fn messages_elide_unusual_ids() {
    let long = "x".repeat(100);
    let data = format!(r#"{{"message_id":"{long}","delta":"d"}}"#);
    let v = run(&[STARTED, ("text.delta", &[], &data)]).unwrap_err();
    assert_eq!(
        v.message,
        "text.delta for message <100 byte id> that was never started"
    );
    let v = run(&[
        STARTED,
        (
            "text.delta",
            &[],
            r#"{"message_id":"a b\u0007","delta":"d"}"#,
        ),
    ])
    .unwrap_err();
    assert_eq!(
        v.message,
        "text.delta for message <4 byte id> that was never started"
    );
}

/// A validator told the run's ids holds the first event to them too (rule
/// X), and says which id differs; the options it was given are the ones in
/// force.
#[test]
fn a_given_identity_holds_from_the_first_event() {
    let opts = ValidatorOptions::new().identity("r", "c").contiguous(true);
    let mut v = RunValidator::new(opts);
    assert_eq!(
        v.options().identity.as_ref().map(|(r, c)| (&**r, &**c)),
        Some(("r", "c"))
    );
    assert!(v.options().contiguous);
    let e = RunBuilder::new("x", "c").run_started();
    let err = v.push(&e).unwrap_err();
    assert_eq!(
        (err.rule, err.sequence, err.message.as_str()),
        (
            Rule::RunIdentity,
            0,
            "run.started has run_id `x` but the run is `r`"
        )
    );
    let mut v = RunValidator::new(ValidatorOptions::new().identity("r", "c"));
    let err = v
        .push(&RunBuilder::new("r", "d").run_started())
        .unwrap_err();
    assert_eq!(
        (err.rule, err.message.as_str()),
        (
            Rule::RunIdentity,
            "run.started has conversation_id `d` but the run's is `c`"
        )
    );
    let mut v = RunValidator::new(ValidatorOptions::new().identity("r", "c"));
    v.push(&RunBuilder::new("r", "c").run_started()).unwrap();
}

/// Rule 1 says whether a sequence repeats the last or goes back from it.
#[test]
fn rule_1_says_whether_a_sequence_repeats_or_goes_back() {
    for (seq, message) in [
        (3, "sequence 3 repeats 3"),
        (2, "sequence 2 goes back from 3"),
    ] {
        let mut r = RunBuilder::new("r", "c");
        let started = r.run_started();
        let third = r.set_sequence(3).text_started("m");
        let again = r.set_sequence(seq).text_started("n");
        let v = run_with(&[started, third, again], ValidatorOptions::new()).unwrap_err();
        assert_eq!(
            (v.rule, v.sequence, v.message.as_str()),
            (Rule::Sequence, seq, message)
        );
    }
}
