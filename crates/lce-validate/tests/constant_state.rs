//! Millions of text deltas keep the validator's state constant: it grows with
//! spans and ids, never with deltas.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_testkit::RunBuilder;
use lce_types::{Event, Limits};
use lce_validate::{RunValidator, ValidatorOptions};

#[test]
fn five_million_text_deltas_keep_constant_state() {
    const DELTAS: u64 = 5_000_000;
    let mut limits = Limits::default();
    limits.events_per_run = u64::MAX;
    limits.bytes_per_run = u64::MAX;
    let mut v = RunValidator::new(ValidatorOptions::new().limits(limits).contiguous(true));
    let mut run = RunBuilder::new("run-5m", "conv-5m");
    run.set_step_ms(0);
    v.push(&run.run_started()).unwrap();
    v.push(&run.text_started("msg-1")).unwrap();
    // Built once; only the sequence changes.
    let mut delta = run.text_delta("msg-1", "token ");
    v.push(&delta).unwrap();
    let before = v.footprint();
    let size = delta.to_json().len() as u64;
    for seq in 3..2 + DELTAS {
        delta.sequence = seq;
        v.push(&delta).unwrap();
    }
    assert_eq!(v.footprint(), before, "state grew with deltas");
    run.set_sequence(2 + DELTAS);
    v.push(&run.text_finished("msg-1")).unwrap();
    v.push(&run.run_finished()).unwrap();
    v.finish().unwrap();
    assert_eq!(v.events(), DELTAS + 4);
    assert!(v.bytes() >= DELTAS * size);
}

#[test]
fn state_grows_with_spans_not_deltas() {
    let mut v = RunValidator::new(ValidatorOptions::new());
    let mut run = RunBuilder::new("run-5m", "conv-5m");
    v.push(&run.run_started()).unwrap();
    let empty = v.footprint();
    for i in 0..100 {
        v.push(&run.text_started(&format!("m{i}"))).unwrap();
    }
    assert!(v.footprint() > empty, "spans are state");
    let with_spans = v.footprint();
    for i in 0..10_000 {
        v.push(&run.text_delta(&format!("m{}", i % 100), "x"))
            .unwrap();
    }
    assert_eq!(v.footprint(), with_spans);
}

/// A run of `text.started` / `text.delta` / `text.finished` triples, then
/// whatever `tail` pushes; the builder numbers the sequences.
struct Runner {
    v: RunValidator,
    run: RunBuilder,
}

impl Runner {
    fn new(opts: ValidatorOptions) -> Self {
        let mut limits = Limits::default();
        limits.events_per_run = u64::MAX;
        limits.bytes_per_run = u64::MAX;
        let mut r = Runner {
            v: RunValidator::new(opts.limits(limits)),
            run: RunBuilder::new("r", "c"),
        };
        let started = r.run.run_started();
        r.v.push(&started).unwrap();
        r
    }

    /// The next event, `ty` with `data` in namespace `ns`, validated.
    fn push(&mut self, ty: &str, ns: &[&str], data: &str) -> Result<(), lce_validate::Violation> {
        let e = self.run.at(ns).event(ty, data);
        self.v.push(&e)
    }

    /// Validates each of `events`, which must pass.
    fn pass(&mut self, events: impl IntoIterator<Item = Event>) {
        for e in events {
            self.v.push(&e).unwrap();
        }
    }

    /// A text or reasoning span with one delta, in root.
    fn span(&mut self, kind: &str, id: &str) {
        let r = self.run.root();
        let events = if kind == "text" {
            [
                r.text_started(id),
                r.text_delta(id, "x"),
                r.text_finished(id),
            ]
        } else {
            [
                r.reasoning_started(id),
                r.reasoning_delta(id, "x"),
                r.reasoning_finished(id),
            ]
        };
        self.pass(events);
    }

    fn tool(&mut self, id: &str) {
        let r = self.run.root();
        let events = [
            r.tool_started(id, "t", r#"{"a":1}"#),
            r.tool_finished(id, "ok"),
        ];
        self.pass(events);
    }

    /// A delegation call with a namespace entered and exited inside it.
    fn delegation(&mut self, id: &str) {
        let r = self.run.root();
        let events = [
            r.tool_started(id, "agent", r#"{"a":1}"#),
            r.namespace_entered("sub", "Sub", id),
            r.namespace_exited("sub", id),
            r.tool_finished(id, "ok"),
        ];
        self.pass(events);
    }
}

#[test]
fn many_spans_keep_state_bounded() {
    const SPANS: usize = 100_000;
    const WINDOW: usize = 64;
    let mut r = Runner::new(ValidatorOptions::new().closed_window(WINDOW));
    // Two spans stay open all along: live state is never forgotten.
    r.push(
        "text.started",
        &[],
        r#"{"message_id":"long","role":"assistant"}"#,
    )
    .unwrap();
    r.push(
        "tool.started",
        &[],
        r#"{"tool_call_id":"slow","tool_name":"t","arguments":{"a":1}}"#,
    )
    .unwrap();
    // The largest footprint seen in spans 1,000 to 10,000, then in the
    // rest. One sample is not enough: a hash map's `capacity()` counts its
    // free buckets less its tombstones, and where the tombstones fall
    // depends on the process's random hash seed, so a single reading
    // wanders between the live entries and the table's full capacity (a
    // 10% margin on single readings failed now and then). The largest of
    // many readings is the table's capacity, the same in both ranges while
    // the state stays bounded.
    let (mut early, mut late) = (0, 0);
    for i in 0..SPANS {
        r.span("text", &format!("m{i}"));
        if i % 10 == 0 {
            r.span("reasoning", &format!("r{i}"));
            r.tool(&format!("t{i}"));
            r.delegation(&format!("d{i}"));
        }
        if i >= 1_000 && i % 10 == 5 {
            let footprint = r.v.footprint();
            if i <= 10_000 {
                early = early.max(footprint);
            } else {
                late = late.max(footprint);
            }
        }
    }
    // The window per kind (texts, reasonings, calls, namespaces), plus the
    // two open ones.
    assert_eq!(r.v.state_len(), 4 * WINDOW + 2);
    // Ids get longer (`m9999` then `m99999`): the same size within a
    // margin, not byte-exact. State that grew with the spans would be
    // several times larger after 100,000 of them than after 10,000.
    assert!(
        late <= early + early / 10,
        "state grew with spans: at most {early} up to 10,000 spans, then {late}"
    );
    // The long-lived span and call are still open and usable.
    r.push("text.delta", &[], r#"{"message_id":"long","delta":"x"}"#)
        .unwrap();
    r.push("text.finished", &[], r#"{"message_id":"long"}"#)
        .unwrap();
    r.push(
        "tool.finished",
        &[],
        r#"{"tool_call_id":"slow","result":"ok"}"#,
    )
    .unwrap();
    r.push(
        "run.finished",
        &[],
        r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"h"}}"#,
    )
    .unwrap();
    r.v.finish().unwrap();
}

#[test]
fn a_second_finish_within_the_window_is_already_finished() {
    let mut r = Runner::new(ValidatorOptions::new().closed_window(8));
    r.span("text", "m0");
    for i in 1..8 {
        r.span("text", &format!("m{i}"));
    }
    // m0 is the 8th most recent close: still remembered.
    let v = r
        .push("text.finished", &[], r#"{"message_id":"m0"}"#)
        .unwrap_err();
    assert_eq!(v.rule.id(), "5");
    assert_eq!(
        v.message,
        "text.finished for message `m0` that already finished"
    );
}

#[test]
fn a_late_delta_after_the_window_is_still_rule_5() {
    let mut r = Runner::new(ValidatorOptions::new().closed_window(8));
    for i in 0..9 {
        r.span("text", &format!("m{i}"));
    }
    // m0 closed 9 closes ago: forgotten, but not open, so still rule 5.
    let v = r
        .push("text.delta", &[], r#"{"message_id":"m0","delta":"late"}"#)
        .unwrap_err();
    assert_eq!(v.rule.id(), "5");
    assert_eq!(
        v.message,
        "text.delta for message `m0` that was never started (or finished long ago)"
    );
}

#[test]
fn forgotten_tools_and_namespaces_keep_their_rules() {
    let mut r = Runner::new(ValidatorOptions::new().closed_window(2));
    r.delegation("d0");
    for i in 1..4 {
        r.delegation(&format!("d{i}"));
    }
    let seq = r.run.next_sequence();
    let late = |r: &mut Runner, ty: &str, ns: &[&str], data: &str| {
        let v = r.push(ty, ns, data).unwrap_err();
        r.v.clear_failure();
        (v.rule.id(), v.message)
    };
    let (rule, msg) = late(
        &mut r,
        "tool.finished",
        &[],
        r#"{"tool_call_id":"d0","result":"ok"}"#,
    );
    assert_eq!(rule, "6", "{msg}");
    assert_eq!(
        msg,
        "tool.finished for call `d0` that was never started (or ended long ago)"
    );
    let (rule, msg) = late(
        &mut r,
        "tool.arguments.delta",
        &[],
        r#"{"tool_call_id":"d0","delta":"{"}"#,
    );
    assert_eq!(rule, "6", "{msg}");
    assert_eq!(
        msg,
        "tool.arguments.delta for call `d0` that was never started (or ended long ago)"
    );
    let (rule, msg) = late(&mut r, "warning", &["d0"], r#"{"code":"w","message":"m"}"#);
    assert_eq!(rule, "10", "{msg}");
    assert_eq!(
        msg,
        "warning in namespace `d0` that was never entered (or exited long ago)"
    );
    let (rule, msg) = late(
        &mut r,
        "namespace.exited",
        &[],
        r#"{"parent_tool_call_id":"d0","agent_id":"sub","outcome":"success"}"#,
    );
    assert_eq!(rule, "9", "{msg}");
    assert_eq!(
        msg,
        "namespace.exited for namespace `d0` that was never entered (or exited long ago)"
    );
    // Within the window: the precise messages.
    let (rule, msg) = late(
        &mut r,
        "tool.error",
        &[],
        r#"{"tool_call_id":"d3","code":"x","message":"m","retryable":false}"#,
    );
    assert_eq!(rule, "7", "{msg}");
    assert_eq!(msg, "tool.error for call `d3` that already finished");
    let (rule, msg) = late(
        &mut r,
        "namespace.entered",
        &[],
        r#"{"parent_tool_call_id":"d3","agent_id":"sub","agent_name":"Sub"}"#,
    );
    assert_eq!(rule, "9", "{msg}");
    assert_eq!(msg, "namespace `d3` entered again");
    assert!(r.run.next_sequence() > seq);
}

#[test]
fn exact_remembers_every_closed_id() {
    let mut r = Runner::new(ValidatorOptions::new().exact());
    for i in 0..5000 {
        r.span("text", &format!("m{i}"));
    }
    assert_eq!(r.v.state_len(), 5000);
    let v = r
        .push(
            "text.started",
            &[],
            r#"{"message_id":"m0","role":"assistant"}"#,
        )
        .unwrap_err();
    assert_eq!(
        v.message,
        "text.started for message `m0` that was already started"
    );

    // With a window, a restart of a forgotten id is the one thing accepted.
    let mut r = Runner::new(ValidatorOptions::new().closed_window(8));
    for i in 0..9 {
        r.span("text", &format!("m{i}"));
    }
    r.span("text", "m0");
}
