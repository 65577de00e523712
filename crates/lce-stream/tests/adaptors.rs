//! The stream adaptors one by one: what each does to a stream, that errors
//! pass through, that `encoded` never waits for more input before yielding
//! what it has (D13a live release) and yields encoder errors typed; and what
//! every adaptor offers like `futures`' own: access to the underlying stream
//! (`get_ref`, `get_mut`, `get_pin_mut`, `into_inner`), `FusedStream` and
//! `Debug`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::stream::FusedStream;
use futures::{Stream, StreamExt};
use lce_stream::{
    Cause, Coordinator, CoordinatorOptions, EncodeError, FrameEncoder, LceError, LifecycleStream,
    LifecycleStreamExt, MemoryAudit, WireEncoder, WireFormat, events,
};
use lce_types::{Event, EventType, Payload};
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

/// A lifecycle stream that counts its polls and knows when it has ended
/// (a `FusedStream`), so tests can see it through an adaptor.
#[derive(Debug)]
struct Source {
    items: VecDeque<Result<Event, LceError>>,
    polls: usize,
    ended: bool,
}

impl Source {
    fn new(events: Vec<Event>) -> Self {
        Source {
            items: events.into_iter().map(Ok).collect(),
            polls: 0,
            ended: false,
        }
    }
}

/// A stream of one's own can start a chain too: nothing dropped or changed.
impl lce_stream::LifecycleStream for Source {
    fn stage_counts(&self) -> lce_stream::StageCounts {
        lce_stream::StageCounts::default()
    }
}

impl Stream for Source {
    type Item = Result<Event, LceError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.polls += 1;
        let next = self.items.pop_front();
        if next.is_none() {
            self.ended = true;
        }
        Poll::Ready(next)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.items.len(), Some(self.items.len()))
    }
}

impl FusedStream for Source {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

/// Checks `get_ref`, `get_mut`, `get_pin_mut` and `into_inner` of the
/// adaptor `$make` builds around a [`Source`] of `run()`.
macro_rules! check_access {
    ($name:literal, $make:expr) => {{
        let mut adaptor = $make(Source::new(run()));
        assert_eq!(adaptor.get_ref().polls, 0, "{}: get_ref", $name);
        assert_eq!(adaptor.get_ref().items.len(), 6, "{}: get_ref", $name);
        // get_mut reaches the very stream the adaptor polls: take the
        // first event away behind the adaptor's back.
        let taken = adaptor.get_mut().items.pop_front().unwrap().unwrap();
        assert_eq!(taken.event_type(), EventType::RunStarted, "{}", $name);
        assert_eq!(adaptor.get_ref().items.len(), 5, "{}: get_mut", $name);
        let mut pinned = Box::pin(adaptor);
        assert!(
            futures::executor::block_on(pinned.next()).is_some(),
            "{}",
            $name
        );
        let polls = pinned.as_mut().get_pin_mut().polls;
        assert!(polls >= 1, "{}: get_pin_mut sees the polls", $name);
        // get_pin_mut can drive the underlying stream too.
        let skipped = pinned.as_mut().get_pin_mut().items.pop_front();
        assert!(skipped.is_some(), "{}", $name);
        let left = pinned.get_ref().items.len();
        let source = Pin::into_inner(pinned).into_inner();
        assert_eq!(
            (source.polls, source.items.len()),
            (polls, left),
            "{}: into_inner gives back the same stream",
            $name
        );
    }};
}

#[test]
fn every_adaptor_gives_access_to_its_stream() {
    check_access!("sequenced", |s: Source| s.sequenced());
    check_access!("drop_empty_deltas", |s: Source| s.drop_empty_deltas());
    check_access!("sanitized", |s: Source| s
        .sanitized(lce_sanitize::Sanitizer::new(lce_types::Limits::default())));
    check_access!("validated", |s: Source| s
        .validated(ValidatorOptions::new()));
    check_access!("encoded", |s: Source| s
        .encoded(WireEncoder::new(WireFormat::AguiV1, None)));
}

fn coordinator(audit: &Arc<MemoryAudit>) -> Coordinator {
    Coordinator::new(CoordinatorOptions::new("r", "c")).audit(audit.clone())
}

#[tokio::test]
async fn coordinated_gives_access_to_the_adapter_while_it_holds_it() {
    let audit = Arc::new(MemoryAudit::new());
    // Unpin (so is `Source`): no box needed.
    let mut run = Source::new(run()).coordinated(coordinator(&audit));
    assert_eq!(run.get_ref().map(|s| s.polls), Some(0));
    assert_eq!(run.get_mut().map(|s| s.items.len()), Some(6));
    assert!(run.next().await.unwrap().is_ok());
    assert_eq!(Pin::new(&mut run).get_pin_mut().map(|s| s.polls), Some(1));
    // To the end: the coordinator lets the adapter go, then there is none.
    let rest: Vec<_> = (&mut run).collect().await;
    let last = rest.last().unwrap().as_ref().unwrap();
    assert_eq!(last.event_type(), EventType::RunFinished);
    assert!(run.get_ref().is_none());
    assert!(run.get_mut().is_none());
    assert!(Pin::new(&mut run).get_pin_mut().is_none());
    assert!(run.into_inner().is_none());
    let records = audit.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].terminal, EventType::RunFinished);
}

#[tokio::test]
async fn coordinated_into_inner_mid_run_is_a_disconnect() {
    let audit = Arc::new(MemoryAudit::new());
    let mut run = Source::new(run()).coordinated(coordinator(&audit));
    assert!(run.next().await.unwrap().is_ok());
    assert!(audit.records().is_empty());
    let source = run.into_inner().expect("the adapter, still held");
    assert_eq!((source.polls, source.items.len()), (1, 5));
    // The coordinator is gone: its record says the consumer left.
    let records = audit.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].terminal, EventType::RunCancelled);
    assert_eq!(records[0].code.as_deref(), Some("disconnect"));
    assert!(records[0].coordinator_terminal);
}

/// Polls `stream` to its end, checking `is_terminated` before every item
/// (false) and after the end (true).
fn drain_fused<S: FusedStream + Unpin>(name: &str, mut stream: S) -> usize {
    let mut items = 0;
    loop {
        assert!(!stream.is_terminated(), "{name}: terminated before the end");
        match futures::executor::block_on(stream.next()) {
            Some(_) => items += 1,
            None => break,
        }
    }
    assert!(
        stream.is_terminated(),
        "{name}: not terminated after the end"
    );
    items
}

#[test]
fn adaptors_over_a_fused_stream_are_fused() {
    assert_eq!(drain_fused("sequenced", Source::new(run()).sequenced()), 6);
    assert_eq!(
        drain_fused("drop_empty_deltas", Source::new(run()).drop_empty_deltas()),
        5
    );
    assert_eq!(
        drain_fused(
            "sanitized",
            Source::new(run())
                .sanitized(lce_sanitize::Sanitizer::new(lce_types::Limits::default()))
        ),
        6
    );
    let two = Source::new(run()).sequenced().drop_empty_deltas();
    assert_eq!(drain_fused("sequenced + drop_empty_deltas", two), 5);
}

#[test]
fn validated_is_fused_over_any_stream() {
    // Not a FusedStream underneath: `validated` tracks its own end.
    let valid = events(futures::stream::iter(run())).validated(ValidatorOptions::new());
    assert_eq!(drain_fused("validated", valid), 6);
    // Ended by a violation: nothing follows it, and what the stream still
    // sends is drained and counted (D8); terminated with the stream.
    let mut input = run();
    input.remove(1);
    let mut invalid = events(futures::stream::iter(input)).validated(ValidatorOptions::new());
    assert!(futures::executor::block_on(invalid.next()).unwrap().is_ok());
    assert!(!invalid.is_terminated());
    assert!(
        futures::executor::block_on(invalid.next())
            .unwrap()
            .is_err()
    );
    assert!(!invalid.is_terminated(), "the rest is still to drain");
    assert_eq!(
        invalid.size_hint(),
        (0, Some(0)),
        "no item follows the violation"
    );
    assert!(futures::executor::block_on(invalid.next()).is_none());
    assert!(invalid.is_terminated());
    assert_eq!(
        invalid.discarded(),
        3,
        "the three events after the violation"
    );
    assert_eq!(invalid.stage_counts().discarded, 3);
    // Rule 12 is yielded once the upstream has ended, as the last item.
    let mut cut = run();
    cut.truncate(3);
    let mut cut = events(futures::stream::iter(cut)).validated(ValidatorOptions::new());
    for _ in 0..3 {
        assert!(!cut.is_terminated());
        assert!(futures::executor::block_on(cut.next()).unwrap().is_ok());
    }
    assert!(!cut.is_terminated());
    match futures::executor::block_on(cut.next()) {
        Some(Err(e)) => assert_eq!(e.cause(), Cause::Rule(lce_stream::Rule::MissingTerminal)),
        other => panic!("{other:?}"),
    }
    assert!(cut.is_terminated(), "nothing follows rule 12");
    assert!(futures::executor::block_on(cut.next()).is_none());
}

#[test]
fn encoded_is_fused_over_any_stream() {
    let frames = events(futures::stream::iter(run()))
        .drop_empty_deltas()
        .encoded(WireEncoder::new(WireFormat::Agui, None));
    assert!(drain_fused("encoded", frames) >= 5);
}

#[tokio::test]
async fn coordinated_is_fused() {
    let audit = Arc::new(MemoryAudit::new());
    let mut run = Box::pin(events(futures::stream::iter(run())).enforced(coordinator(&audit)));
    let mut items = 0;
    while !run.is_terminated() {
        match run.next().await {
            Some(_) => items += 1,
            None => break,
        }
    }
    assert_eq!(items, 5, "the empty delta is dropped");
    assert!(run.is_terminated());
    assert!(run.next().await.is_none());
}

#[test]
fn every_adaptor_debugs_its_stream() {
    let limits = lce_types::Limits::default;
    let debug = [
        format!("{:?}", Source::new(run()).sequenced()),
        format!("{:?}", Source::new(run()).drop_empty_deltas()),
        format!(
            "{:?}",
            Source::new(run()).sanitized(lce_sanitize::Sanitizer::new(limits()))
        ),
        format!(
            "{:?}",
            Source::new(vec![]).validated(ValidatorOptions::new())
        ),
        format!(
            "{:?}",
            Source::new(vec![]).encoded(WireEncoder::new(WireFormat::Custom, None))
        ),
        format!(
            "{:?}",
            Source::new(vec![]).coordinated(Coordinator::new(CoordinatorOptions::new("r", "c")))
        ),
    ];
    for (d, name) in debug.iter().zip([
        "Sequenced",
        "DropEmptyDeltas",
        "Sanitized",
        "Validated",
        "Encoded",
        "Coordinated",
    ]) {
        assert!(d.starts_with(name) && d.contains("Source {"), "{d}");
    }
    assert!(debug[5].contains("run_id: \"r\"") && debug[5].contains("state: \"running\""));
}

#[test]
fn encoded_debug_never_shows_the_bytes() {
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Event, LceError>>();
    let mut frames = Box::pin(rx.encoded(WireEncoder::new(WireFormat::Agui, None)));
    for e in run().into_iter().take(3) {
        tx.unbounded_send(Ok(e)).unwrap();
    }
    let waker = futures::task::noop_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(matches!(
        frames.as_mut().poll_next(&mut cx),
        Poll::Ready(Some(Ok(_)))
    ));
    let debug = format!("{frames:?}");
    assert!(debug.contains("done: false"), "{debug}");
    assert!(!debug.contains("Hi"), "payload in Debug: {debug}");
}

/// An encoder that refuses every event, as an encoder meeting an event kind
/// it does not know would.
#[derive(Debug)]
struct Refusing;

impl FrameEncoder for Refusing {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, _: &mut BytesMut) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported {
            sequence: event.sequence,
        })
    }
}

#[test]
fn encoded_yields_encoder_errors_typed() {
    let mut frames = Box::pin(events(futures::stream::iter(run())).encoded(Refusing));
    let err = futures::executor::block_on(frames.next())
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            err,
            LceError::Encode(EncodeError::Unsupported { sequence: 0 })
        ),
        "{err:?}"
    );
    assert_eq!(err.cause(), Cause::Encode);
    assert_eq!(
        err.to_string(),
        "encode error: unsupported event kind (event sequence 0)"
    );
}

/// An encoder that writes two frames per event, and nothing for deltas.
#[derive(Debug)]
struct TwoFrames;

impl FrameEncoder for TwoFrames {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        if event.event_type() != EventType::TextDelta {
            let seq = event.sequence;
            dst.extend_from_slice(format!("data: {seq}a\n\ndata: {seq}b\n\n").as_bytes());
        }
        Ok(())
    }
}

#[test]
fn encoded_yields_one_chunk_per_event_with_its_whole_frames() {
    let chunks: Vec<Bytes> = futures::executor::block_on(
        events(futures::stream::iter(run()))
            .encoded(TwoFrames)
            .map(Result::unwrap)
            .collect(),
    );
    let deltas = run()
        .iter()
        .filter(|e| e.event_type() == EventType::TextDelta)
        .count();
    assert_eq!(
        chunks.len(),
        run().len() - deltas,
        "no chunk for an event without frames"
    );
    for (chunk, event) in chunks.iter().zip(
        run()
            .iter()
            .filter(|e| e.event_type() != EventType::TextDelta),
    ) {
        let seq = event.sequence;
        assert_eq!(
            &chunk[..],
            format!("data: {seq}a\n\ndata: {seq}b\n\n").as_bytes()
        );
    }
}

/// Each adaptor's `size_hint` over a stream of six events says what it can
/// promise: numbering and cleaning keep the count; dropping empty deltas
/// may yield fewer; validating may yield fewer and one violation (rule 12)
/// more; encoding knows nothing; coordinating adds at most its own
/// `run.started` and terminal, and promises nothing once done.
#[tokio::test]
async fn every_adaptor_says_what_it_can_promise_in_size_hint() {
    let limits = lce_types::Limits::default;
    assert_eq!(
        events(futures::stream::iter(run())).size_hint(),
        (6, Some(6))
    );
    assert_eq!(Source::new(run()).sequenced().size_hint(), (6, Some(6)));
    assert_eq!(
        Source::new(run()).drop_empty_deltas().size_hint(),
        (0, Some(6))
    );
    assert_eq!(
        Source::new(run())
            .sanitized(lce_sanitize::Sanitizer::new(limits()))
            .size_hint(),
        (6, Some(6))
    );
    assert_eq!(
        Source::new(run())
            .validated(ValidatorOptions::new())
            .size_hint(),
        (0, Some(7))
    );
    assert_eq!(
        Source::new(run())
            .encoded(WireEncoder::new(WireFormat::Custom, None))
            .size_hint(),
        (0, None)
    );
    let mut run =
        Box::pin(Source::new(run()).coordinated(coordinator(&Arc::new(MemoryAudit::new()))));
    assert_eq!(run.size_hint(), (0, Some(8)));
    let mut n = 0;
    while run.next().await.is_some() {
        n += 1;
    }
    assert_eq!(n, 6);
    assert_eq!(run.size_hint(), (0, Some(0)));
}

/// Once the adapter is gone and the coordinator's terminal is out, the
/// coordinator promises nothing more; before, its own events count.
#[tokio::test]
async fn a_released_coordinator_counts_only_what_it_still_owes() {
    let cut: Vec<_> = run().into_iter().take(3).collect();
    let mut c = Box::pin(Source::new(cut).coordinated(coordinator(&Arc::new(MemoryAudit::new()))));
    let mut hints = Vec::new();
    while let Some(item) = c.next().await {
        hints.push((item.unwrap().event_type(), c.size_hint()));
        assert!(!c.is_terminated(), "{hints:?}");
    }
    assert!(c.is_terminated());
    assert_eq!(
        hints,
        [
            (EventType::RunStarted, (0, Some(4))),
            (EventType::TextStarted, (0, Some(3))),
            (EventType::TextDelta, (0, Some(2))),
            (EventType::RunError, (0, Some(0))),
        ]
    );
    assert_eq!(c.size_hint(), (0, Some(0)));
}

/// `cleaned` counts the events the sanitizer changed, and only those.
#[tokio::test]
async fn sanitized_counts_the_events_it_changed() {
    let mut events = run();
    // D18: a bidi control in display text is replaced.
    for e in &mut events[2..4] {
        let Payload::TextDelta(d) = &mut e.payload else {
            panic!("{e:?}")
        };
        d.delta = "a\u{202e}b".to_owned();
    }
    let mut s = Box::pin(
        Source::new(events.clone())
            .sanitized(lce_sanitize::Sanitizer::new(lce_types::Limits::default())),
    );
    let mut out = Vec::new();
    while let Some(item) = s.next().await {
        out.push(item.unwrap());
    }
    assert_eq!(out.len(), events.len());
    assert_ne!(out[2], events[2]);
    assert_ne!(out[3], events[3]);
    assert_eq!(out[4], events[4]);
    assert_eq!(s.cleaned(), 2);
}
