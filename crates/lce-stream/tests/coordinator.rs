//! The coordinator's guarantees, failure path by failure path.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lce_stream::{
    CancelHandle, Cause, CommitRequest, Coordinator, CoordinatorOptions, LceError,
    LifecycleStreamExt, MemoryAudit, Rule, events,
};
use lce_testkit::{Fault, FaultyStore};
use lce_types::{CancelReason, Event, EventLines, EventType, Payload, SideEffectStatus};
use lce_validate::{Mode, RunValidator, ValidatorOptions};

fn scenario(name: &str) -> Vec<Event> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/scenarios")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    EventLines::new(&bytes[..])
        .map(|r| r.unwrap().unwrap())
        .collect()
}

fn all_scenarios() -> Vec<(String, Vec<Event>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| (n.clone(), scenario(&n)))
        .collect()
}

fn options_for(events: &[Event]) -> CoordinatorOptions {
    let first = &events[0];
    CoordinatorOptions::new(first.run_id.clone(), first.conversation_id.clone())
}

/// Runs `items` through a coordinator; returns its output and the audit.
async fn coordinate(
    items: Vec<Result<Event, LceError>>,
    coordinator: Coordinator,
) -> (Vec<Event>, Arc<MemoryAudit>) {
    let audit = Arc::new(MemoryAudit::new());
    let out: Vec<Event> = lce_stream::source(futures::stream::iter(items))
        .enforced(coordinator.audit(audit.clone()))
        .map(|r| r.expect("the coordinator yields events only"))
        .collect()
        .await;
    (out, audit)
}

/// `input` without its `text.started`, so its first delta breaks rule 5;
/// and the index the `text.started` had.
fn without_text_started(input: &[Event]) -> (Vec<Event>, usize) {
    let mut items = input.to_vec();
    let started = items
        .iter()
        .position(|e| e.event_type() == EventType::TextStarted)
        .unwrap();
    items.remove(started);
    (items, started)
}

fn assert_full_mode_valid(events: &[Event]) {
    let mut v = RunValidator::new(ValidatorOptions::new().mode(Mode::Full));
    for e in events {
        v.push(e)
            .unwrap_or_else(|err| panic!("output breaks the contract: {err}"));
    }
    v.finish().unwrap();
}

fn last(events: &[Event]) -> &Event {
    events.last().unwrap()
}

#[tokio::test]
async fn valid_scenarios_pass_through_with_committed_thread_state() {
    for (name, input) in all_scenarios() {
        let coordinator = Coordinator::new(options_for(&input));
        let (out, audit) = coordinate(input.iter().cloned().map(Ok).collect(), coordinator).await;
        assert_full_mode_valid(&out);
        assert_eq!(out.len(), input.len(), "{name}");
        for (a, b) in out.iter().zip(&input) {
            if let (Payload::RunFinished(fa), Payload::RunFinished(fb)) = (&a.payload, &b.payload) {
                assert_eq!(fa.outcome, fb.outcome);
                let ts = fa.thread_state.as_ref().unwrap();
                assert!(
                    ts.head_ref.starts_with("mem:"),
                    "{name}: commit result not used"
                );
            } else {
                // Forwarded as the sanitizer leaves it (D18 replaces some
                // characters of display text; nothing else changes).
                let clean = lce_sanitize::Sanitizer::new(lce_types::Limits::default())
                    .sanitize(b.clone())
                    .unwrap()
                    .event;
                assert_eq!(a, &clean, "{name}");
            }
        }
        let records = audit.records();
        assert_eq!(records.len(), 1, "{name}");
        assert_eq!(records[0].terminal, last(&input).event_type(), "{name}");
        assert!(!records[0].coordinator_terminal);
        assert_eq!(records[0].counters.forwarded, input.len() as u64);
    }
}

#[tokio::test]
async fn a_run_cut_short_ends_with_provider_stream_closed() {
    let input = scenario("tool-call-arguments-at-start.jsonl");
    for cut in 1..input.len() - 1 {
        let items = input[..cut].iter().cloned().map(Ok).collect();
        let (out, audit) = coordinate(items, Coordinator::new(options_for(&input))).await;
        assert_full_mode_valid(&out);
        assert_eq!(out.len(), cut + 1);
        let Payload::RunError(e) = &last(&out).payload else {
            panic!("cut {cut}: not run.error")
        };
        assert_eq!(e.code, "provider_stream_closed");
        let want = if cut > 1 {
            SideEffectStatus::Possible
        } else {
            SideEffectStatus::None
        };
        assert_eq!(e.side_effect_status, want, "cut {cut}");
        assert_eq!(
            audit.records()[0].rule,
            Some(Cause::Rule(Rule::MissingTerminal))
        );
        // The validator's words (rule 12, at the last event's sequence).
        assert_eq!(
            audit.records()[0].reason,
            Some(format!(
                "seq {}: rule 12 (missing_terminal): input ended without a run terminal",
                input[cut - 1].sequence
            )),
            "cut {cut}"
        );
    }
}

#[tokio::test]
async fn an_empty_adapter_gets_a_started_and_an_error() {
    let coordinator = Coordinator::new(CoordinatorOptions::new("run-x", "conv-x"));
    let (out, _) = coordinate(Vec::new(), coordinator).await;
    assert_full_mode_valid(&out);
    assert_eq!(
        out.iter().map(Event::event_type).collect::<Vec<_>>(),
        [EventType::RunStarted, EventType::RunError]
    );
    assert_eq!(&*out[1].run_id, "run-x");
}

#[tokio::test]
async fn a_violation_ends_the_run_and_drops_the_rest() {
    let input = scenario("plain-text-answer.jsonl");
    // Drop the text.started: its first delta breaks rule 5.
    let (items, started) = without_text_started(&input);
    let (out, audit) = coordinate(
        items.into_iter().map(Ok).collect(),
        Coordinator::new(options_for(&input)),
    )
    .await;
    assert_full_mode_valid(&out);
    assert_eq!(out.len(), started + 1);
    let Payload::RunError(e) = &last(&out).payload else {
        panic!()
    };
    assert_eq!(e.code, "harness_event_invalid");
    assert_eq!(
        e.message,
        lce_stream::coordinator::AGENT_EXECUTION_FAILED,
        "fixed safe text"
    );
    let record = &audit.records()[0];
    assert_eq!(record.rule, Some(Cause::Rule(Rule::TextSpan)));
    assert_eq!(record.rule.map(Cause::as_str), Some("5"));
    // The violating delta and everything after it; the validating stage
    // drained what followed the violation (D8).
    let sent = input.len() as u64 - 1;
    assert_eq!(record.counters.dropped, sent - started as u64);
    assert_eq!(record.counters.after_terminal, sent - started as u64 - 1);
    assert_eq!(record.counters.events_in, sent);
}

#[tokio::test]
async fn the_intervention_comes_with_the_run() {
    let input = scenario("plain-text-answer.jsonl");
    let (items, started) = without_text_started(&input);
    let mut run = Box::pin(
        lce_stream::source(futures::stream::iter(items.into_iter().map(Ok)))
            .enforced(Coordinator::new(options_for(&input))),
    );
    // Known from the moment the terminal is decided: not before.
    while let Some(item) = run.next().await {
        let event = item.unwrap();
        assert_eq!(
            run.intervention().is_some(),
            event.event_type().is_terminal(),
            "seq {}",
            event.sequence
        );
    }
    let intervention = run.intervention().expect("the coordinator stepped in");
    assert_eq!(intervention.terminal, EventType::RunError);
    assert_eq!(intervention.code.as_deref(), Some("harness_event_invalid"));
    assert_eq!(intervention.cause, Some(Cause::Rule(Rule::TextSpan)));
    assert!(intervention.coordinator_terminal);
    // The delta that lost its text.started: item `started + 1`, 1-based.
    assert_eq!(intervention.position, started as u64 + 1);
    let reason = intervention.reason.expect("the validator's words");
    assert!(
        reason.starts_with(&format!(
            "seq {}: rule 5 (text_span)",
            input[started + 1].sequence
        )),
        "{reason}"
    );
    match run.as_mut().get_mut().take_error() {
        Some(LceError::Violation(v)) => assert_eq!(v.rule, Rule::TextSpan),
        other => panic!("{other:?}"),
    }
    assert!(run.as_mut().get_mut().take_error().is_none(), "taken once");
}

#[tokio::test]
async fn a_valid_run_has_no_intervention() {
    let input = scenario("plain-text-answer.jsonl");
    let mut run = Box::pin(
        lce_stream::source(futures::stream::iter(input.clone().into_iter().map(Ok)))
            .enforced(Coordinator::new(options_for(&input))),
    );
    while run.next().await.is_some() {}
    assert!(run.intervention().is_none());
    assert!(run.as_mut().get_mut().take_error().is_none());
}

#[tokio::test]
async fn an_error_item_counts_as_a_violation() {
    let input = scenario("plain-text-answer.jsonl");
    let bad = lce_types::Event::from_json("[]").unwrap_err();
    let items = vec![Ok(input[0].clone()), Err(LceError::Parse(bad))];
    let (out, audit) = coordinate(items, Coordinator::new(options_for(&input))).await;
    assert_full_mode_valid(&out);
    let Payload::RunError(e) = &last(&out).payload else {
        panic!()
    };
    assert_eq!(
        (e.code.as_str(), e.side_effect_status),
        ("harness_event_invalid", SideEffectStatus::None)
    );
    assert_eq!(audit.records()[0].rule, Some(Cause::Parse));
}

/// `input`'s items, then two more events after its terminal.
fn with_two_after_the_terminal(input: &[Event]) -> Vec<Result<Event, LceError>> {
    let mut items: Vec<_> = input.iter().cloned().map(Ok).collect();
    let mut extra = input[1].clone();
    extra.sequence = 999;
    items.push(Ok(extra.clone()));
    items.push(Ok(extra));
    items
}

#[tokio::test]
async fn events_after_the_terminal_are_dropped_and_counted() {
    let input = scenario("plain-text-answer.jsonl");
    let items = with_two_after_the_terminal(&input);
    let (out, audit) = coordinate(items, Coordinator::new(options_for(&input))).await;
    assert_eq!(out.len(), input.len());
    let record = &audit.records()[0];
    assert_eq!(record.counters.dropped, 2);
    assert_eq!(record.counters.after_terminal, 2);
    assert!(
        !record.coordinator_terminal,
        "the adapter's terminal stands"
    );
    assert_eq!(
        record.rule,
        Some(Cause::Rule(Rule::AfterTerminal)),
        "the first extra event is named"
    );
}

/// At most `drain_limit` ready items are drained after the terminal.
#[tokio::test]
async fn no_more_than_the_drain_limit_is_drained_after_the_terminal() {
    let input = scenario("plain-text-answer.jsonl");
    for (limit, drained) in [(0, 0), (1, 1), (2, 2), (5, 2)] {
        let mut options = options_for(&input);
        options.drain_limit = limit;
        let items = with_two_after_the_terminal(&input);
        let (out, audit) = coordinate(items, Coordinator::new(options)).await;
        assert_eq!(out.len(), input.len());
        let counters = &audit.records()[0].counters;
        assert_eq!(
            (counters.after_terminal, counters.dropped),
            (drained, drained),
            "limit {limit}"
        );
    }
}

/// The coordinator's options give the validator its run: adapter mode,
/// ephemerality, limits, and the run's ids from the first event on.
#[test]
fn the_validator_gets_the_runs_options() {
    let mut limits = lce_types::Limits::default();
    limits.events_per_run = 7;
    let v = CoordinatorOptions::new("r", "c")
        .ephemeral(true)
        .limits(limits)
        .validator_options();
    assert_eq!(v.mode, Mode::Adapter);
    assert!(v.ephemeral);
    assert_eq!(v.limits.events_per_run, 7);
    assert_eq!(
        v.identity.as_ref().map(|(r, c)| (&**r, &**c)),
        Some(("r", "c"))
    );
}

/// An adapter's own `run.error` is audited with its code and side effects,
/// and the run's counters are the audited ones.
#[tokio::test]
async fn an_adapter_error_is_audited_with_its_code() {
    let mut r = lce_testkit::RunBuilder::new("run-e", "conv-e");
    let input = vec![r.run_started(), r.run_error("rate_limited", "slow down")];
    let audit = Arc::new(MemoryAudit::new());
    let mut run = Box::pin(
        lce_stream::source(futures::stream::iter(input.clone().into_iter().map(Ok)))
            .enforced(Coordinator::new(options_for(&input)).audit(audit.clone())),
    );
    let mut out = Vec::new();
    while let Some(item) = run.next().await {
        out.push(item.unwrap());
    }
    assert_eq!(out, input);
    let record = &audit.records()[0];
    assert_eq!(record.terminal, EventType::RunError);
    assert_eq!(record.code.as_deref(), Some("rate_limited"));
    let Payload::RunError(e) = &input[1].payload else {
        panic!()
    };
    assert_eq!(record.side_effect_status, Some(e.side_effect_status));
    assert!(!record.coordinator_terminal);
    assert_eq!(run.counters(), record.counters);
    assert_eq!(
        (record.counters.events_in, record.counters.forwarded),
        (2, 2)
    );
}

/// The intervention after an adapter's own terminal names the first extra
/// event's position: the item after the terminal (1-based).
#[tokio::test]
async fn the_first_event_after_the_terminal_is_where_the_rule_broke() {
    let input = scenario("plain-text-answer.jsonl");
    let items = with_two_after_the_terminal(&input);
    let mut run = Box::pin(
        lce_stream::source(futures::stream::iter(items))
            .enforced(Coordinator::new(options_for(&input))),
    );
    while run.next().await.is_some() {}
    let intervention = run
        .intervention()
        .expect("a rule broken after the terminal");
    assert_eq!(intervention.cause, Some(Cause::Rule(Rule::AfterTerminal)));
    assert!(!intervention.coordinator_terminal);
    assert_eq!(intervention.position, input.len() as u64 + 1);
}

#[tokio::test]
async fn a_failed_commit_becomes_thread_durability_uncertain_once() {
    for fault in [Fault::Fail, Fault::Hang] {
        let input = scenario("plain-text-answer.jsonl");
        let store = Arc::new(FaultyStore::new(fault));
        let coordinator =
            Coordinator::new(options_for(&input).commit_timeout(Duration::from_millis(20)))
                .store(store.clone());
        let (out, audit) = coordinate(input.iter().cloned().map(Ok).collect(), coordinator).await;
        assert_full_mode_valid(&out);
        assert_eq!(
            out.len(),
            input.len(),
            "the terminal is replaced, not added"
        );
        let Payload::RunError(e) = &last(&out).payload else {
            panic!("{fault:?}")
        };
        assert_eq!(e.code, "thread_durability_uncertain");
        assert_eq!(e.side_effect_status, SideEffectStatus::Possible);
        assert_eq!(store.calls(), 1, "never retried");
        assert_eq!(
            audit.records()[0].rule,
            Some(Cause::Rule(Rule::DurabilityUncertain))
        );
    }
}

/// The scenario `name` through a coordinator committing to a store with
/// `fault`: the output and the store.
async fn committed(name: &str, fault: Fault) -> (Vec<Event>, Arc<FaultyStore>) {
    let input = scenario(name);
    let store = Arc::new(FaultyStore::new(fault));
    let c = Coordinator::new(options_for(&input)).store(store.clone());
    let (out, _) = coordinate(input.iter().cloned().map(Ok).collect(), c).await;
    (out, store)
}

#[tokio::test]
async fn interrupts_are_committed_and_ephemeral_runs_are_not() {
    let (out, store) = committed("tool-approval-interrupt.jsonl", Fault::None).await;
    assert_eq!(last(&out).event_type(), EventType::RunInterrupted);
    assert_eq!((store.calls(), store.interrupts()), (1, 1));
    let interrupted = last(&out);
    assert_eq!(
        store.last_request(),
        Some(CommitRequest {
            run_id: interrupted.run_id.to_string(),
            conversation_id: interrupted.conversation_id.to_string(),
            sequence: interrupted.sequence,
            interrupt_id: Some("int-appr-09".to_owned()),
        })
    );
    // A finished run is a final commit.
    let (out, store) = committed("plain-text-answer.jsonl", Fault::None).await;
    assert_eq!(last(&out).event_type(), EventType::RunFinished);
    assert_eq!((store.calls(), store.interrupts()), (1, 0));
    assert_eq!(store.last_request().unwrap().interrupt_id, None);

    let input = scenario("plain-text-answer.jsonl");
    let store = Arc::new(FaultyStore::new(Fault::Fail));
    let c = Coordinator::new(options_for(&input).ephemeral(true)).store(store.clone());
    let (out, _) = coordinate(input.iter().cloned().map(Ok).collect(), c).await;
    let Payload::RunFinished(f) = &last(&out).payload else {
        panic!()
    };
    assert!(
        f.thread_state.is_none(),
        "ephemeral runs finish without thread_state"
    );
    assert_eq!(store.calls(), 0);
}

#[tokio::test]
async fn cancellation_ends_the_run_and_drops_the_adapter() {
    let input = scenario("plain-text-answer.jsonl");
    let handle = CancelHandle::new();
    let audit = Arc::new(MemoryAudit::new());
    let coordinator = Coordinator::new(options_for(&input))
        .cancel_handle(handle.clone())
        .audit(audit.clone());
    // An adapter that yields two events and then never ends.
    let adapter =
        events(futures::stream::iter(input[..2].to_vec()).chain(futures::stream::pending()));
    let mut out = Box::pin(adapter.enforced(coordinator));
    let mut got = vec![
        out.next().await.unwrap().unwrap(),
        out.next().await.unwrap().unwrap(),
    ];
    assert!(handle.cancel(CancelReason::Shutdown));
    got.push(out.next().await.unwrap().unwrap());
    assert!(out.next().await.is_none());
    assert_full_mode_valid(&got);
    let Payload::RunCancelled(c) = &last(&got).payload else {
        panic!()
    };
    assert_eq!(c.reason, CancelReason::Shutdown);
    assert_eq!(c.side_effect_status, SideEffectStatus::Possible);
    assert_eq!(audit.records()[0].code.as_deref(), Some("shutdown"));
}

#[tokio::test(start_paused = true)]
async fn the_deadline_cancels_the_run() {
    let input = scenario("plain-text-answer.jsonl");
    let coordinator = Coordinator::new(options_for(&input).deadline(Some(Duration::from_secs(30))));
    let adapter =
        events(futures::stream::iter(input[..1].to_vec()).chain(futures::stream::pending()));
    let out: Vec<Event> = adapter
        .enforced(coordinator)
        .map(|r| r.unwrap())
        .collect()
        .await;
    assert_full_mode_valid(&out);
    let Payload::RunCancelled(c) = &last(&out).payload else {
        panic!()
    };
    assert_eq!(
        (c.reason, c.side_effect_status),
        (CancelReason::Deadline, SideEffectStatus::None)
    );
}

#[tokio::test]
async fn a_dropped_stream_is_audited_as_a_disconnect() {
    let input = scenario("plain-text-answer.jsonl");
    let audit = Arc::new(MemoryAudit::new());
    let coordinator = Coordinator::new(options_for(&input)).audit(audit.clone());
    let mut out = Box::pin(events(futures::stream::iter(input.clone())).enforced(coordinator));
    out.next().await.unwrap().unwrap();
    out.next().await.unwrap().unwrap();
    drop(out);
    let records = audit.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].terminal, EventType::RunCancelled);
    assert_eq!(records[0].code.as_deref(), Some("disconnect"));
    assert!(records[0].sequence.is_none(), "no wire saw it");
}

#[tokio::test]
async fn empty_deltas_are_dropped_and_counted() {
    let input = scenario("plain-text-answer.jsonl");
    let mut items: Vec<Event> = input.clone();
    let delta = items
        .iter()
        .position(|e| e.event_type() == EventType::TextDelta)
        .unwrap();
    let mut empty = items[delta].clone();
    if let Payload::TextDelta(d) = &mut empty.payload {
        d.delta.clear();
    }
    // Give it a sequence between its neighbours' by renumbering everything.
    items.insert(delta, empty);
    for (i, e) in items.iter_mut().enumerate() {
        e.sequence = i as u64;
    }
    let (out, audit) = coordinate(
        items.into_iter().map(Ok).collect(),
        Coordinator::new(options_for(&input)),
    )
    .await;
    assert_eq!(out.len(), input.len());
    assert_eq!(audit.records()[0].counters.empty_deltas, 1);
}
