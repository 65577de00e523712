//! The stream adaptors one by one: what each does to a stream, that errors
//! pass through, and that `encoded` never waits for more input before
//! yielding what it has (D13a live release).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::task::Poll;

use futures::{Stream, StreamExt};
use lce_stream::{LceError, LifecycleStreamExt, WireEncoder, WireFormat, events};
use lce_types::{Event, EventType};
use lce_validate::ValidatorOptions;

fn ev(seq: u64, ty: &str, data: &str) -> Event {
    Event::from_json(&format!(
        r#"{{"version":1,"type":"{ty}","run_id":"r","conversation_id":"c","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
    ))
    .unwrap()
}

fn run() -> Vec<Event> {
    vec![
        ev(
            0,
            "run.started",
            r#"{"harness_id":"h","adapter_version":"1"}"#,
        ),
        ev(
            1,
            "text.started",
            r#"{"message_id":"m","role":"assistant"}"#,
        ),
        ev(2, "text.delta", r#"{"message_id":"m","delta":"Hi"}"#),
        ev(3, "text.delta", r#"{"message_id":"m","delta":""}"#),
        ev(4, "text.finished", r#"{"message_id":"m"}"#),
        ev(
            5,
            "run.finished",
            r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"h"}}"#,
        ),
    ]
}

#[test]
fn sequenced_stamps_zero_upwards() {
    let mut input = run();
    for e in &mut input {
        e.sequence = 7;
    }
    let out: Vec<Event> = futures::executor::block_on(
        events(futures::stream::iter(input))
            .sequenced()
            .map(Result::unwrap)
            .collect(),
    );
    let seqs: Vec<u64> = out.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn drop_empty_deltas_drops_and_counts() {
    let mut s = Box::pin(events(futures::stream::iter(run())).drop_empty_deltas());
    let mut types = Vec::new();
    while let Some(e) = futures::executor::block_on(s.next()) {
        types.push(e.unwrap().event_type());
    }
    assert_eq!(types.len(), 5);
    assert_eq!(
        types.iter().filter(|t| **t == EventType::TextDelta).count(),
        1
    );
    assert_eq!(s.dropped(), 1);
}

#[test]
fn validated_yields_the_first_violation_and_ends() {
    let mut input = run();
    input.remove(1); // a delta before its text.started: rule 5
    let out: Vec<Result<Event, LceError>> = futures::executor::block_on(
        events(futures::stream::iter(input))
            .validated(ValidatorOptions::new())
            .collect(),
    );
    assert_eq!(
        out.len(),
        2,
        "run.started, then the violation, then nothing"
    );
    assert!(out[0].is_ok());
    match &out[1] {
        Err(LceError::Violation(v)) => assert_eq!((v.rule.id(), v.sequence), ("5", 2)),
        other => panic!("{other:?}"),
    }
    // Rule 12 at the end of a run without a terminal.
    let mut cut = run();
    cut.truncate(3);
    let out: Vec<Result<Event, LceError>> = futures::executor::block_on(
        events(futures::stream::iter(cut))
            .validated(ValidatorOptions::new())
            .collect(),
    );
    match out.last().unwrap() {
        Err(LceError::Violation(v)) => assert_eq!(v.rule.id(), "12"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_pass_through_the_other_adaptors() {
    let bad = Event::from_json("[]").unwrap_err();
    let items = vec![Ok(run()[0].clone()), Err(LceError::Parse(bad))];
    let out: Vec<Result<Event, LceError>> = futures::executor::block_on(
        futures::stream::iter(items)
            .sequenced()
            .drop_empty_deltas()
            .sanitized(lce_sanitize::Sanitizer::new(lce_types::Limits::default()))
            .collect(),
    );
    assert!(out[0].is_ok());
    assert!(matches!(out[1], Err(LceError::Parse(_))));
}

#[test]
fn encoded_yields_one_chunk_per_frame() {
    let chunks: Vec<bytes::Bytes> = futures::executor::block_on(
        events(futures::stream::iter(run()))
            .drop_empty_deltas()
            .encoded(WireEncoder::new(WireFormat::Agui, None))
            .map(Result::unwrap)
            .collect(),
    );
    assert!(chunks.len() >= 5);
    for c in &chunks {
        let text = std::str::from_utf8(c).unwrap();
        assert!(
            text.ends_with("\n\n") && text.matches("\n\n").count() == 1,
            "{text:?}"
        );
    }
}

#[test]
fn encoded_releases_held_tool_starts_when_the_upstream_would_wait() {
    // A tool starts and then runs for a while: the live stream must show the
    // start before its result arrives (D13a), in DA's `custom` format.
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Event, LceError>>();
    let mut frames = Box::pin(rx.encoded(WireEncoder::new(WireFormat::Custom, None)));
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    tx.unbounded_send(Ok(run()[0].clone())).unwrap();
    tx.unbounded_send(Ok(ev(
        1,
        "tool.started",
        r#"{"tool_call_id":"t","tool_name":"search","arguments":{"q":"x"}}"#,
    )))
    .unwrap();
    match frames.as_mut().poll_next(&mut cx) {
        Poll::Ready(Some(Ok(frame))) => {
            let text = std::str::from_utf8(&frame).unwrap();
            assert!(text.starts_with("event: tool_start\n"), "{text}");
        }
        other => panic!("the held start was not released while idle: {other:?}"),
    }
    assert!(frames.as_mut().poll_next(&mut cx).is_pending());
}
