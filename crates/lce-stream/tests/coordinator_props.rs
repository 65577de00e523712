//! Property: whatever the adapter yields — valid runs, mutated runs, random
//! event soups, early ends — the coordinator's output passes the validator in
//! full mode, and every encoder turns it into well-formed SSE (our decoder
//! reads back exactly the frames written, each holding one JSON value).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;

use bytes::BytesMut;
use futures::StreamExt;
use lce_stream::{
    Coordinator, CoordinatorOptions, LifecycleStreamExt, SseDecoder, WireEncoder, WireFormat,
};
use lce_types::Event;
use lce_validate::{Mode, RunValidator, ValidatorOptions};
use proptest::prelude::*;
use tokio_util::codec::Decoder;

fn scenarios() -> &'static Vec<Vec<Event>> {
    static S: OnceLock<Vec<Vec<Event>>> = OnceLock::new();
    S.get_or_init(|| {
        lce_testkit::fixtures::scenarios()
            .into_iter()
            .map(|(_, events)| events)
            .collect()
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Drop(usize),
    Duplicate(usize),
    Swap(usize),
    Truncate(usize),
    Renumber(usize, u64),
}

fn apply(mut events: Vec<Event>, m: &Mutation) -> Vec<Event> {
    let n = events.len();
    if n == 0 {
        return events;
    }
    match *m {
        Mutation::Drop(i) => {
            events.remove(i % n);
        }
        Mutation::Duplicate(i) => {
            let e = events[i % n].clone();
            events.insert(i % n, e);
        }
        Mutation::Swap(i) => events.swap(i % n, (i + 1) % n),
        Mutation::Truncate(i) => events.truncate(i % n),
        Mutation::Renumber(i, s) => events[i % n].sequence = s,
    }
    events
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Drop),
        any::<usize>().prop_map(Mutation::Duplicate),
        any::<usize>().prop_map(Mutation::Swap),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0u64..60).prop_map(|(i, s)| Mutation::Renumber(i, s)),
    ]
}

/// An adapter's output: a scenario, possibly mutated, or a soup of events
/// taken from anywhere (ids rewritten to one run, sequences renumbered or not).
fn adapter_run() -> impl Strategy<Value = Vec<Event>> {
    let count = scenarios().len();
    let mutated = (0..count, proptest::collection::vec(mutation(), 0..4))
        .prop_map(|(s, ms)| ms.iter().fold(scenarios()[s].clone(), apply));
    let soup = (
        proptest::collection::vec((0..count, any::<usize>()), 0..40),
        any::<bool>(),
    )
        .prop_map(|(picks, renumber)| {
            let mut events: Vec<Event> = picks
                .into_iter()
                .map(|(s, i)| {
                    let run = &scenarios()[s];
                    run[i % run.len()].clone()
                })
                .collect();
            for (i, e) in events.iter_mut().enumerate() {
                e.run_id = "run-soup".into();
                e.conversation_id = "conv-soup".into();
                if renumber {
                    e.sequence = i as u64;
                }
            }
            events
        });
    prop_oneof![mutated, soup]
}

fn coordinate(events: Vec<Event>) -> Vec<Event> {
    let (run_id, conv) = events
        .first()
        .map(|e| (e.run_id.clone(), e.conversation_id.clone()))
        .unwrap_or(("run-empty".into(), "conv-empty".into()));
    let coordinator = Coordinator::new(CoordinatorOptions::new(run_id, conv));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(
        lce_stream::events(futures::stream::iter(events))
            .enforced(coordinator)
            .map(|r| r.expect("the coordinator yields events only"))
            .collect(),
    )
}

fn assert_well_formed_sse(format: WireFormat, out: &[Event]) {
    let mut encoder = WireEncoder::new(format, None);
    let mut written = BytesMut::new();
    let mut frames_written = 0usize;
    for e in out {
        let before = written.len();
        lce_stream::FrameEncoder::encode_frame(&mut encoder, e, &mut written)
            .unwrap_or_else(|err| panic!("{format}: coordinator output does not encode: {err}"));
        frames_written += written[before..]
            .windows(2)
            .filter(|w| *w == b"\n\n")
            .count();
    }
    let mut decoder = SseDecoder::new();
    let mut buf = written.clone();
    let mut frames = Vec::new();
    while let Some(f) = decoder.decode(&mut buf).unwrap() {
        frames.push(f);
    }
    assert!(
        buf.is_empty(),
        "{format}: trailing bytes after the last frame"
    );
    assert_eq!(frames.len(), frames_written, "{format}");
    for f in &frames {
        serde_json::from_str::<serde_json::Value>(&f.data)
            .unwrap_or_else(|e| panic!("{format}: frame data is not JSON: {e}"));
        if format == WireFormat::AguiV1 {
            assert!(f.event.is_none());
        } else {
            assert!(f.event.is_some());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn coordinator_output_keeps_the_contract_and_encodes(events in adapter_run()) {
        let out = coordinate(events);
        let mut v = RunValidator::new(ValidatorOptions::new().mode(Mode::Full));
        for e in &out {
            if let Err(err) = v.push(e) {
                panic!("coordinator output breaks the contract: {err}");
            }
        }
        v.finish().unwrap();
        prop_assert!(out.last().is_some_and(|e| e.event_type().is_terminal()));
        for format in WireFormat::ALL {
            assert_well_formed_sse(format, &out);
        }
    }
}
