//! Millions of text deltas keep the validator's state constant: it grows with
//! spans and ids, never with deltas.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_types::{Event, Limits};
use lce_validate::{RunValidator, ValidatorOptions};

fn event(line: &str) -> Event {
    Event::from_json(line).unwrap()
}

const HEAD: &str = r#""run_id":"run-5m","conversation_id":"conv-5m","timestamp":"2026-08-17T00:00:00.000Z","namespace":[]"#;

#[test]
fn five_million_text_deltas_keep_constant_state() {
    const DELTAS: u64 = 5_000_000;
    let mut limits = Limits::default();
    limits.events_per_run = u64::MAX;
    limits.bytes_per_run = u64::MAX;
    let mut v = RunValidator::new(ValidatorOptions::new().limits(limits).contiguous(true));
    let line = |ty: &str, seq: u64, data: &str| {
        event(&format!(
            r#"{{"version":1,"type":"{ty}",{HEAD},"sequence":{seq},"data":{data}}}"#
        ))
    };
    v.push(&line(
        "run.started",
        0,
        r#"{"harness_id":"h","adapter_version":"1"}"#,
    ))
    .unwrap();
    v.push(&line(
        "text.started",
        1,
        r#"{"message_id":"msg-1","role":"assistant"}"#,
    ))
    .unwrap();
    // Built once; only the sequence changes.
    let mut delta = line(
        "text.delta",
        2,
        r#"{"message_id":"msg-1","delta":"token "}"#,
    );
    v.push(&delta).unwrap();
    let before = v.footprint();
    let size = delta.to_json().len() as u64;
    for seq in 3..2 + DELTAS {
        delta.sequence = seq;
        v.push(&delta).unwrap();
    }
    assert_eq!(v.footprint(), before, "state grew with deltas");
    let next = 2 + DELTAS;
    v.push(&line("text.finished", next, r#"{"message_id":"msg-1"}"#))
        .unwrap();
    v.push(&line(
        "run.finished",
        next + 1,
        r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"h"}}"#,
    ))
    .unwrap();
    v.finish().unwrap();
    assert_eq!(v.events(), DELTAS + 4);
    assert!(v.bytes() >= DELTAS * size);
}

#[test]
fn state_grows_with_spans_not_deltas() {
    let mut v = RunValidator::new(ValidatorOptions::new());
    let mut seq = 0;
    let mut push = |v: &mut RunValidator, ty: &str, data: String| {
        let e = event(&format!(
            r#"{{"version":1,"type":"{ty}",{HEAD},"sequence":{seq},"data":{data}}}"#
        ));
        seq += 1;
        v.push(&e).unwrap();
    };
    push(
        &mut v,
        "run.started",
        r#"{"harness_id":"h","adapter_version":"1"}"#.to_owned(),
    );
    let empty = v.footprint();
    for i in 0..100 {
        push(
            &mut v,
            "text.started",
            format!(r#"{{"message_id":"m{i}","role":"assistant"}}"#),
        );
    }
    assert!(v.footprint() > empty, "spans are state");
    let with_spans = v.footprint();
    for i in 0..10_000 {
        push(
            &mut v,
            "text.delta",
            format!(r#"{{"message_id":"m{}","delta":"x"}}"#, i % 100),
        );
    }
    assert_eq!(v.footprint(), with_spans);
}
