//! The live path (issue 16): what the `encoded` adaptor writes when the
//! upstream goes idle between events, and what a client sees when a run
//! ends any other way between `interrupt.requested` and `run.interrupted`.
//!
//! - D13a (amended): idling never changes the arguments a client is shown.
//!   Every `tool_start` (custom), every call's `TOOL_CALL_ARGS` (agui,
//!   agui-v1) equal the uninterrupted output's, whatever the pauses.
//! - D4a: an interrupt is shown only once `run.interrupted` is accepted; a
//!   run that ends otherwise shows its own terminal and no interrupt.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use lce_stream::{
    CancelHandle, Coordinator, CoordinatorOptions, LceError, LifecycleStreamExt, SseDecoder,
    SseFrame, WireEncoder, WireFormat,
};
use lce_testkit::{Fault, FaultyStore};
use lce_types::{CancelReason, Event};
use proptest::prelude::*;
use tokio_util::codec::Decoder;

fn scenarios() -> &'static Vec<(String, Vec<Event>)> {
    static S: OnceLock<Vec<(String, Vec<Event>)>> = OnceLock::new();
    S.get_or_init(lce_testkit::fixtures::scenarios)
}

fn scenario(name: &str) -> Vec<Event> {
    scenarios()
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
        .1
        .clone()
}

/// One step of a scripted adapter.
enum Step {
    Item(Result<Event, LceError>),
    /// The upstream has nothing ready (it wakes itself at once).
    Idle,
    /// The client asks to cancel, then the upstream waits.
    Cancel(CancelHandle),
}

/// An adapter that plays its steps.
struct Adapter(std::vec::IntoIter<Step>);

impl Stream for Adapter {
    type Item = Result<Event, LceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.0.next() {
            None => Poll::Ready(None),
            Some(Step::Item(item)) => Poll::Ready(Some(item)),
            Some(Step::Idle) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Some(Step::Cancel(handle)) => {
                handle.cancel(CancelReason::ClientRequest);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

/// The adapter steps for `events`, idle before event `i` where `idle(i)`
/// (and after the last where `idle(events.len())`).
fn steps(events: &[Event], idle: impl Fn(usize) -> bool) -> Vec<Step> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if idle(i) {
            out.push(Step::Idle);
        }
        out.push(Step::Item(Ok(e.clone())));
    }
    if idle(events.len()) {
        out.push(Step::Idle);
    }
    out
}

/// The SSE frames the whole pipeline writes for `steps` in `format`.
fn pipeline(steps: Vec<Step>, format: WireFormat, coordinator: Coordinator) -> Vec<SseFrame> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let chunks: Vec<bytes::Bytes> = rt.block_on(
        lce_stream::source(Adapter(steps.into_iter()))
            .enforced(coordinator)
            .encoded(WireEncoder::new(format, None))
            .map(|r| r.expect("the coordinated stream encodes"))
            .collect(),
    );
    let mut buf = bytes::BytesMut::new();
    for c in &chunks {
        buf.extend_from_slice(c);
    }
    let mut decoder = SseDecoder::new();
    let mut frames = Vec::new();
    while let Some(f) = decoder.decode(&mut buf).unwrap() {
        frames.push(f);
    }
    assert!(buf.is_empty(), "{format}: bytes after the last frame");
    frames
}

fn coordinator_for(events: &[Event]) -> Coordinator {
    let (run, conv) = events.first().map_or_else(
        || ("run-empty".into(), "conv-empty".into()),
        |e| (e.run_id.clone(), e.conversation_id.clone()),
    );
    Coordinator::new(CoordinatorOptions::new(run, conv))
}

fn json(frame: &SseFrame) -> serde_json::Value {
    serde_json::from_str(&frame.data).unwrap()
}

/// What a client is shown of each tool call's arguments: per call id, the
/// `tool_start` frames (custom) or the `TOOL_CALL_ARGS` frames (agui,
/// agui-v1), whole, in order.
fn shown_arguments(format: WireFormat, frames: &[SseFrame]) -> BTreeMap<String, Vec<String>> {
    let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in frames {
        let v = json(f);
        let id = match format {
            WireFormat::Custom if f.event.as_deref() == Some("tool_start") => &v["tool_call_id"],
            WireFormat::Agui | WireFormat::AguiV1 if v["type"] == "TOOL_CALL_ARGS" => {
                &v["toolCallId"]
            }
            _ => continue,
        };
        calls
            .entry(id.as_str().unwrap().to_owned())
            .or_default()
            .push(f.data.clone());
    }
    calls
}

/// The ids of the calls a DA wire drops as rejected duplicates (D13): a
/// `tool.error{tool_rejected}` in a run that never shows the call otherwise.
fn rejected_calls(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            lce_types::Payload::ToolError(t) if t.code == lce_types::TOOL_REJECTED => {
                Some(t.tool_call_id.clone())
            }
            _ => None,
        })
        .collect()
}

/// Live output (idle where `idle` says) shows each call's arguments exactly
/// as the uninterrupted output does. The one difference D13a allows: a start
/// re-emitted before its `tool_rejected` error, which the uninterrupted
/// output drops, may be shown live with its arguments (the hold cannot know
/// that a rejection is coming while the upstream is idle).
fn assert_live_arguments_equal(events: &[Event], idle: impl Fn(usize) -> bool + Copy, what: &str) {
    let rejected = rejected_calls(events);
    for format in WireFormat::ALL {
        let file = pipeline(steps(events, |_| false), format, coordinator_for(events));
        let live = pipeline(steps(events, idle), format, coordinator_for(events));
        let file_args = shown_arguments(format, &file);
        let mut live_args = shown_arguments(format, &live);
        for (id, frames) in &file_args {
            assert_eq!(
                live_args.remove(id).as_ref(),
                Some(frames),
                "{what} {format}: call {id} shown with other arguments live"
            );
        }
        for id in live_args.keys() {
            assert!(
                format != WireFormat::AguiV1 && rejected.contains(id),
                "{what} {format}: call {id} shown live only"
            );
        }
    }
}

#[test]
fn idle_between_every_event_of_every_scenario_keeps_the_arguments() {
    for (name, events) in scenarios() {
        assert_live_arguments_equal(events, |_| true, name);
    }
}

#[test]
fn streamed_arguments_are_never_shown_as_the_empty_start_arguments() {
    // The defect of issue 16: `{}` released at the first idle moment.
    let events = scenario("tool-call-streamed-argument-deltas");
    let live = pipeline(
        steps(&events, |_| true),
        WireFormat::Custom,
        coordinator_for(&events),
    );
    let starts: Vec<_> = live
        .iter()
        .filter(|f| f.event.as_deref() == Some("tool_start"))
        .map(json)
        .collect();
    assert!(!starts.is_empty());
    for s in &starts {
        assert_ne!(s["args"], serde_json::json!({}), "{s}");
    }
    let agui = pipeline(
        steps(&events, |_| true),
        WireFormat::Agui,
        coordinator_for(&events),
    );
    for f in agui.iter().filter(|f| json(f)["type"] == "TOOL_CALL_ARGS") {
        assert_ne!(json(f)["delta"], "{}", "{}", f.data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any pattern of pauses, any scenario, every format.
    #[test]
    fn pauses_anywhere_keep_the_arguments(
        pick in 0..scenarios().len(),
        mask in proptest::collection::vec(any::<bool>(), 64),
    ) {
        let (name, events) = &scenarios()[pick];
        let idle = |i: usize| mask[i % mask.len()];
        assert_live_arguments_equal(events, idle, name);
    }
}

// ------------------------------------------------------------------ D4a

/// How a run may end between `interrupt.requested` and `run.interrupted`.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// The harness sends `run.interrupted` and the commit holds.
    Interrupted,
    /// A non-close event before `run.interrupted` (rule 8).
    Violation,
    /// A line that is not an event.
    JunkLine,
    /// The stream closes without a terminal (rule 12).
    Closure,
    /// The interrupt commit fails (rule 14, D10).
    CommitFails,
    /// The interrupt commit never answers (the commit timeout fires).
    CommitTimesOut,
    /// The client cancels.
    Cancelled,
}

const ENDINGS: [Ending; 7] = [
    Ending::Interrupted,
    Ending::Violation,
    Ending::JunkLine,
    Ending::Closure,
    Ending::CommitFails,
    Ending::CommitTimesOut,
    Ending::Cancelled,
];

/// The `tool-approval-interrupt` scenario, ended as `ending` says.
fn ended(ending: Ending, format: WireFormat) -> Vec<SseFrame> {
    let events = scenario("tool-approval-interrupt");
    let at = events
        .iter()
        .position(|e| e.event_type().as_str() == "interrupt.requested")
        .unwrap();
    let (before, terminal) = (&events[..=at], events[at + 1].clone());
    let mut coordinator = coordinator_for(&events);
    let mut s: Vec<Step> = before.iter().map(|e| Step::Item(Ok(e.clone()))).collect();
    match ending {
        Ending::Interrupted => s.push(Step::Item(Ok(terminal))),
        Ending::Violation => {
            let mut warning = Event::from_json(&format!(
                r#"{{"version":1,"type":"warning","run_id":"{}","conversation_id":"{}","sequence":{},"timestamp":"2026-08-17T09:00:01.100Z","namespace":[],"data":{{"code":"w","message":"late"}}}}"#,
                terminal.run_id,
                terminal.conversation_id,
                terminal.sequence
            ))
            .unwrap();
            warning.sequence = terminal.sequence;
            let mut t = terminal;
            t.sequence += 1;
            s.push(Step::Item(Ok(warning)));
            s.push(Step::Item(Ok(t)));
        }
        Ending::JunkLine => {
            let junk = Event::from_json("{not json").unwrap_err();
            s.push(Step::Item(Err(LceError::Parse(junk))));
            s.push(Step::Item(Ok(terminal)));
        }
        Ending::Closure => {}
        Ending::CommitFails => {
            coordinator = coordinator.store(Arc::new(FaultyStore::new(Fault::Fail)));
            s.push(Step::Item(Ok(terminal)));
        }
        Ending::CommitTimesOut => {
            let first = &events[0];
            coordinator = Coordinator::new(
                CoordinatorOptions::new(first.run_id.clone(), first.conversation_id.clone())
                    .commit_timeout(Duration::from_millis(20)),
            )
            .store(Arc::new(FaultyStore::new(Fault::Hang)));
            s.push(Step::Item(Ok(terminal)));
        }
        Ending::Cancelled => {
            let handle = CancelHandle::new();
            coordinator = coordinator.cancel_handle(handle.clone());
            s.push(Step::Cancel(handle));
            s.push(Step::Item(Ok(terminal)));
        }
    }
    pipeline(s, format, coordinator)
}

/// Whether `frame` asks the user for input.
fn is_interrupt(format: WireFormat, frame: &SseFrame) -> bool {
    let v = json(frame);
    match format {
        WireFormat::Custom => frame.event.as_deref() == Some("input_required"),
        WireFormat::Agui => v["type"] == "RUN_FINISHED" && v["outcome"] == "interrupt",
        _ => v["type"] == "RUN_FINISHED" && v["outcome"]["type"] == "interrupt",
    }
}

/// The name of the frame that ends the stream, if any: the SSE event name
/// (custom) or the payload's `type` (agui, agui-v1).
fn last_frame(frames: &[SseFrame]) -> Option<String> {
    let f = frames.last()?;
    Some(match &f.event {
        Some(name) if !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') => name.clone(),
        _ => json(f)["type"].as_str().unwrap().to_owned(),
    })
}

#[test]
fn d4a_an_interrupt_is_shown_only_when_run_interrupted_is_accepted() {
    for format in WireFormat::ALL {
        for ending in ENDINGS {
            let frames = ended(ending, format);
            let interrupts = frames.iter().filter(|f| is_interrupt(format, f)).count();
            let last = last_frame(&frames);
            let what = format!("{format} {ending:?}");
            match ending {
                Ending::Interrupted => {
                    assert_eq!(interrupts, 1, "{what}");
                    assert!(is_interrupt(format, frames.last().unwrap()), "{what}");
                }
                Ending::Cancelled => {
                    assert_eq!(interrupts, 0, "{what}");
                    // custom and agui close silently; agui-v1 says cancelled.
                    match format {
                        WireFormat::AguiV1 => {
                            let v = json(frames.last().unwrap());
                            assert_eq!(v["type"], "RUN_FINISHED", "{what}");
                            assert_eq!(v["outcome"]["type"], "cancelled", "{what}");
                        }
                        WireFormat::Custom => {
                            assert_eq!(last.as_deref(), Some("tool_start"), "{what}")
                        }
                        _ => assert_eq!(last.as_deref(), Some("TOOL_CALL_ARGS"), "{what}"),
                    }
                }
                _ => {
                    assert_eq!(interrupts, 0, "{what}");
                    let want = if format == WireFormat::Custom {
                        "error"
                    } else {
                        "RUN_ERROR"
                    };
                    assert_eq!(last.as_deref(), Some(want), "{what}");
                }
            }
        }
    }
}

#[test]
fn text_after_complete_streamed_arguments_ends_the_run_the_same_live_and_from_a_file() {
    // Deltas that already form one object, then a junk delta (a D6
    // violation): the validator catches it at that delta, so the start a live
    // stream released with the complete arguments is exactly the start the
    // file output shows before the coordinator's error.
    let line = |seq: u64, ty: &str, data: &str| {
        Event::from_json(&format!(
            r#"{{"version":1,"type":"{ty}","run_id":"run-j","conversation_id":"conv-j","sequence":{seq},"timestamp":"2026-08-17T00:00:0{seq}Z","namespace":[],"data":{data}}}"#
        ))
        .unwrap()
    };
    let events = vec![
        line(
            0,
            "run.started",
            r#"{"harness_id":"h","adapter_version":"1"}"#,
        ),
        line(
            1,
            "tool.started",
            r#"{"tool_call_id":"t1","tool_name":"lookup","arguments":{}}"#,
        ),
        line(
            2,
            "tool.arguments.delta",
            r#"{"tool_call_id":"t1","delta":"{\"q\": 1}"}"#,
        ),
        line(
            3,
            "tool.arguments.delta",
            r#"{"tool_call_id":"t1","delta":"x"}"#,
        ),
        line(4, "tool.finished", r#"{"tool_call_id":"t1","result":"r"}"#),
        line(5, "run.finished", r#"{"outcome":"success"}"#),
    ];
    assert_live_arguments_equal(&events, |_| true, "junk after complete arguments");
    for format in WireFormat::ALL {
        let file = pipeline(steps(&events, |_| false), format, coordinator_for(&events));
        let args = shown_arguments(format, &file);
        assert_eq!(args.len(), 1, "{format}: the complete call is shown");
        let last = json(file.last().unwrap());
        let error = if format == WireFormat::Custom {
            file.last().unwrap().event.as_deref() == Some("error")
        } else {
            last["type"] == "RUN_ERROR"
        };
        assert!(error, "{format}: the run ends with the coordinator's error");
    }
}
