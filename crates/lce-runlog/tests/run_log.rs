//! The run log in the chain: a run written through `logged` and read back by
//! a `Subscription` gives the bytes the direct chain gives, for every
//! scenario and format; frame ids resume exactly; bad ids are refused; an
//! orphaned run gets exactly one closure terminal; an idle upstream is
//! marked where it waited (D13a).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{info, replay, to_inner};

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::FusedFuture;
use lce_runlog::{
    FrameId, LogEntry, LogWriter, LoggedRun, MemoryRunLog, RunInfo, RunLog, RunLogStreamExt,
    SubscribeError, Subscription, Takeover, end_orphan,
};
use lce_stream::{
    Coordinator, CoordinatorOptions, LifecycleStreamExt, WireEncoder, WireFormat, source,
};
use lce_types::{Event, EventType};

const FORMATS: [WireFormat; 3] = [WireFormat::Custom, WireFormat::Agui, WireFormat::AguiV1];
const LEASE: Duration = Duration::from_secs(30);

fn coordinator(events: &[Event]) -> Coordinator {
    let first = events.first().cloned().map(Ok);
    Coordinator::new(CoordinatorOptions::for_first_item(first.as_ref()))
}

/// The bytes of the direct chain: `source.enforced.encoded`.
async fn direct(events: &[Event], format: WireFormat) -> Vec<u8> {
    let chain = source(futures::stream::iter(events.iter().cloned().map(Ok)))
        .enforced(coordinator(events))
        .encoded(WireEncoder::new(format, None));
    let chunks: Vec<_> = chain.collect().await;
    chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect()
}

/// Logs `events` through the chain into `log` under their own run id.
async fn log_run(log: &Arc<dyn RunLog>, events: &[Event]) -> String {
    let run_id = events[0].run_id.to_string();
    let conversation = events[0].conversation_id.to_string();
    let writer = LogWriter::create(log.clone(), info(&run_id, &conversation), LEASE)
        .await
        .unwrap();
    let written = source(futures::stream::iter(events.iter().cloned().map(Ok)))
        .enforced(coordinator(events))
        .logged(writer)
        .await
        .unwrap();
    assert!(written.terminal.is_some_and(EventType::is_terminal));
    run_id
}

/// The scenario `name`'s events, its run id, and a writer of a new log of
/// that run in `log`.
async fn scenario_log(log: &Arc<dyn RunLog>, name: &str) -> (Vec<Event>, String, LogWriter) {
    let (_, events) = lce_testkit::fixtures::scenarios()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap();
    let run_id = events[0].run_id.to_string();
    let conversation = events[0].conversation_id.to_string();
    let writer = LogWriter::create(log.clone(), info(&run_id, &conversation), LEASE)
        .await
        .unwrap();
    (events, run_id, writer)
}

/// The frame ids of an SSE text with `id:` lines, in order, with the byte
/// offset where each frame ends.
fn ids_and_ends(text: &str) -> Vec<(FrameId, usize)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for frame in text.split_inclusive("\n\n") {
        offset += frame.len();
        let first = frame.lines().next().unwrap();
        let id = first
            .strip_prefix("id: ")
            .expect("every frame starts with its id");
        out.push((id.parse().unwrap(), offset));
    }
    out
}

fn strip_ids(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|l| !l.starts_with("id: "))
        .collect()
}

#[tokio::test]
async fn a_logged_run_reads_back_as_the_direct_chain_encodes_it() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let mut checked = 0;
    for (name, events) in lce_testkit::fixtures::scenarios() {
        let run_id = log_run(&log, &events).await;
        for format in FORMATS {
            let want = direct(&events, format).await;
            let got = replay(&log, &run_id, format, None, false).await;
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want.clone()).unwrap(),
                "{name} {format:?}"
            );
            let with_ids =
                String::from_utf8(replay(&log, &run_id, format, None, true).await).unwrap();
            assert_eq!(
                strip_ids(&with_ids).as_bytes(),
                &want[..],
                "{name} {format:?} with ids"
            );
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} scenario x format pairs");
}

#[tokio::test]
async fn resuming_after_any_frame_yields_exactly_what_followed_it() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    for (name, events) in lce_testkit::fixtures::scenarios() {
        let run_id = log_run(&log, &events).await;
        for format in FORMATS {
            let full = String::from_utf8(replay(&log, &run_id, format, None, true).await).unwrap();
            let frames = ids_and_ends(&full);
            let mut last = None;
            for (id, end) in &frames {
                assert!(last < Some(*id), "{name}: ids grow ({last:?} then {id})");
                last = Some(*id);
                let rest = replay(&log, &run_id, format, Some(*id), true).await;
                assert_eq!(
                    String::from_utf8(rest).unwrap(),
                    full[*end..],
                    "{name} {format:?} after {id}"
                );
            }
        }
    }
}

#[tokio::test]
async fn ids_that_name_no_frame_are_refused_before_any_byte() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let (_, events) = lce_testkit::fixtures::scenarios().swap_remove(0);
    let run_id = log_run(&log, &events).await;
    for bad in [
        "", "1", "0.0", "01.0", "1.01", "+1.0", "1.-1", "a.b", "1.0.0", " 1.0", "1.0 ",
    ] {
        assert!(
            matches!(bad.parse::<FrameId>(), Err(lce_runlog::MalformedFrameId)),
            "{bad:?} parses"
        );
    }
    let entries = log
        .read(&run_id, 0, 10_000, Duration::ZERO)
        .await
        .unwrap()
        .entries
        .len() as u64;
    for unknown in [
        FrameId {
            position: entries + 1,
            index: 0,
        },
        FrameId {
            position: 1,
            index: 50,
        },
    ] {
        let opened = Subscription::open(
            log.clone(),
            &run_id,
            WireEncoder::new(WireFormat::Custom, None),
            Some(unknown),
            true,
        )
        .await;
        assert!(
            matches!(opened, Err(SubscribeError::UnknownId)),
            "{unknown}"
        );
    }
    let missing = Subscription::open(
        log.clone(),
        "no-such-run",
        WireEncoder::new(WireFormat::Custom, None),
        None,
        true,
    )
    .await;
    assert!(matches!(missing, Err(SubscribeError::NotFound)));
}

#[tokio::test]
async fn an_orphaned_run_gets_exactly_one_closure_terminal() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let (events, run_id, writer) = scenario_log(&log, "plain-text-answer").await;
    // The first three events, then the owner dies (releases, as a replica
    // shutting down does, or as an expired lease looks) before its chain
    // gets to a terminal: the log is left unsealed.
    for (i, e) in events.iter().take(3).enumerate() {
        log.append(
            &run_id,
            "replica-a",
            i as u64 + 1,
            LogEntry::Event(e.clone()),
        )
        .await
        .unwrap();
    }
    assert!(
        !log.read(&run_id, 0, 100, Duration::ZERO)
            .await
            .unwrap()
            .sealed
    );
    writer.release().await.unwrap();
    assert!(!writer.renew(LEASE).await.unwrap());
    let takeover = |who: &str| Takeover {
        claimant: who.to_owned(),
        lease: LEASE,
    };
    let sub = Subscription::open(
        log.clone(),
        &run_id,
        WireEncoder::new(WireFormat::AguiV1, None),
        None,
        true,
    )
    .await
    .unwrap()
    .take_over(takeover("replica-b"));
    let text: Vec<_> = sub.into_stream().collect().await;
    let text: String = text
        .into_iter()
        .map(|c| String::from_utf8(c.unwrap().to_vec()).unwrap())
        .collect();
    assert_eq!(text.matches("RUN_ERROR").count(), 1, "{text}");
    assert!(text.contains("provider_stream_closed"), "{text}");
    // Sealed: nobody can end it again or append after it.
    assert!(
        !end_orphan(&log, &run_id, &takeover("replica-c"))
            .await
            .unwrap()
    );
    let batch = log.read(&run_id, 0, 100, Duration::ZERO).await.unwrap();
    assert!(batch.sealed);
    // The three events as written, then the closure terminal right after.
    assert_eq!(batch.entries.len(), 4);
    for (entry, e) in batch.entries.iter().zip(&events[..3]) {
        assert_eq!(entry, &LogEntry::Event(e.clone()));
    }
    let LogEntry::Event(terminal) = &batch.entries[3] else {
        panic!("{:?}", batch.entries[3])
    };
    let lce_types::Payload::RunError(error) = &terminal.payload else {
        panic!("{terminal:?}")
    };
    assert_eq!(error.code, "provider_stream_closed");
    assert_eq!(terminal.sequence, events[2].sequence + 1);
    // The released owner cannot go on: the log is sealed.
    let late = log
        .append(&run_id, "replica-a", 5, LogEntry::Idle)
        .await
        .unwrap_err();
    assert_eq!(
        late,
        lce_runlog::LogError::Refused {
            position: 5,
            refusal: lce_runlog::Refusal::Sealed
        }
    );
}

#[tokio::test]
async fn an_idle_upstream_is_marked_where_it_waited() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let (events, run_id, writer) = scenario_log(&log, "tool-call-arguments-at-start").await;
    // The upstream waits after its tool.started, as a live tool does.
    let started = events
        .iter()
        .position(|e| e.event_type() == lce_types::EventType::ToolStarted)
        .unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded();
    for e in &events[..=started] {
        tx.unbounded_send(Ok(e.clone())).unwrap();
    }
    let logged = source(rx).enforced(coordinator(&events)).logged(writer);
    let task = tokio::spawn(logged);
    // Wait until the idle marker is in the log.
    let mut marked = false;
    for _ in 0..200 {
        let batch = log
            .read(&run_id, 0, 1000, Duration::from_millis(10))
            .await
            .unwrap();
        if batch.entries.last() == Some(&LogEntry::Idle) {
            assert_eq!(
                batch.entries.len(),
                started + 2,
                "the marker follows the tool start"
            );
            marked = true;
            break;
        }
    }
    assert!(marked, "no idle marker while the upstream waited");
    for e in &events[started + 1..] {
        tx.unbounded_send(Ok(e.clone())).unwrap();
    }
    drop(tx);
    let written = task.await.unwrap().unwrap();
    assert_eq!(written.terminal, Some(events.last().unwrap().event_type()));
    assert_eq!(written.entries, written.events + 1, "one idle marker");
    let entries = log
        .read(&run_id, 0, 1000, Duration::ZERO)
        .await
        .unwrap()
        .entries;
    assert_eq!(entries.iter().filter(|e| **e == LogEntry::Idle).count(), 1);
    // A live read of the same run released the tool start at the wait:
    // replaying the log gives the same frames in the same order as the
    // direct chain whose upstream waited at the same point.
    let replayed = replay(&log, &run_id, WireFormat::Custom, None, false).await;
    assert_eq!(replayed, direct(&events, WireFormat::Custom).await);
    // With frame ids, the frame released at the wait carries the idle
    // marker's position: the replay encoded the marker where it stands.
    let with_ids = replay(&log, &run_id, WireFormat::Custom, None, true).await;
    let with_ids = String::from_utf8(with_ids).unwrap();
    assert!(
        with_ids.contains(&format!("id: {}.0\nevent: tool_start\n", started + 2)),
        "{with_ids}"
    );
}

/// `Logged` resolves to what it wrote: every event, the terminal, the last
/// position; `upstream_ended` turns true once the chain's terminal is
/// taken, and `written` counts only what the log acknowledged.
#[tokio::test]
async fn logged_says_what_it_wrote_and_knows_when_the_upstream_ended() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let (events, run_id, writer) = scenario_log(&log, "plain-text-answer").await;
    let mut logged = Box::pin(
        source(futures::stream::iter(events.iter().cloned().map(Ok)))
            .enforced(coordinator(&events))
            .logged(writer),
    );
    assert!(!logged.upstream_ended());
    assert_eq!(logged.written(), LoggedRun::default());
    let written = logged.as_mut().await.unwrap();
    assert!(logged.upstream_ended());
    assert_eq!(written, logged.written());
    assert_eq!(written.events, events.len() as u64);
    assert_eq!(
        written.entries,
        events.len() as u64,
        "a ready run has no idle marker"
    );
    assert_eq!(written.terminal, Some(EventType::RunFinished));
    let batch = log.read(&run_id, 0, 1000, Duration::ZERO).await.unwrap();
    assert_eq!(batch.entries.len(), events.len());
    assert!(batch.sealed);
}

/// A read that finds nothing waits (up to its `wait`) for the next append,
/// and returns it.
#[tokio::test]
async fn a_waiting_read_returns_the_next_append() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    log.create(info("run-w", "conv-w"), LEASE).await.unwrap();
    let reader = {
        let log = log.clone();
        tokio::spawn(async move {
            log.read("run-w", 0, 10, Duration::from_secs(60))
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    log.append("run-w", "replica-a", 1, LogEntry::Idle)
        .await
        .unwrap();
    let batch = reader.await.unwrap();
    assert_eq!(batch.entries, [LogEntry::Idle]);
    assert!(!batch.sealed);
}

/// A memory log that records the size of every batch appended to it, and
/// how many entries each read returned with the bytes of their events.
#[derive(Default)]
struct Recorded {
    inner: MemoryRunLog,
    sizes: std::sync::Mutex<Vec<usize>>,
    reads: Arc<std::sync::Mutex<Vec<(usize, usize)>>>,
}

impl RunLog for Recorded {
    fn append_batch(
        &self,
        run: &str,
        by: &str,
        at: u64,
        batch: Vec<LogEntry>,
    ) -> lce_runlog::LogFuture<()> {
        self.sizes.lock().unwrap().push(batch.len());
        self.inner.append_batch(run, by, at, batch)
    }
    fn read(
        &self,
        run_id: &str,
        after: u64,
        max: usize,
        wait: Duration,
    ) -> lce_runlog::LogFuture<lce_runlog::LogBatch> {
        let read = self.inner.read(run_id, after, max, wait);
        let reads = self.reads.clone();
        Box::pin(async move {
            let batch = read.await?;
            let bytes = batch
                .entries
                .iter()
                .map(|e| match e {
                    LogEntry::Event(event) => event.to_json().len(),
                    _ => 0,
                })
                .sum();
            reads.lock().unwrap().push((batch.entries.len(), bytes));
            Ok(batch)
        })
    }
    to_inner! {
        create(info: RunInfo, lease: Duration) -> ();
        append(run_id: &str, owner: &str, position: u64, entry: LogEntry) -> ();
        info(run_id: &str) -> Option<RunInfo>;
        renew(run_id: &str, owner: &str, lease: Duration) -> bool;
        release(run_id: &str, owner: &str) -> ();
        abandon(run_id: &str, owner: &str) -> bool;
        claim(run_id: &str, claimant: &str, lease: Duration) -> bool;
        orphans() -> Vec<String>;
        request_cancel(run_id: &str) -> bool;
        cancel_requested(run_id: &str) -> bool;
        running_run(conversation_id: &str) -> Option<String>;
    }
}

/// What the upstream has ready is appended in batches of `MAX_BATCH`
/// entries at most, in order, and nothing is written twice.
#[tokio::test]
async fn ready_events_are_appended_in_batches_of_at_most_max_batch() {
    let mut r = lce_testkit::RunBuilder::new("run-batches", "conv-batches");
    let mut events = vec![r.run_started(), r.text_started("m")];
    for k in 0..2 * lce_runlog::MAX_BATCH {
        events.push(r.text_delta("m", &k.to_string()));
    }
    events.push(r.text_finished("m"));
    events.push(r.run_finished());
    let counting = Arc::new(Recorded::default());
    let log: Arc<dyn RunLog> = counting.clone();
    let writer = LogWriter::create(log.clone(), info("run-batches", "conv-batches"), LEASE)
        .await
        .unwrap();
    let written = source(futures::stream::iter(events.iter().cloned().map(Ok)))
        .enforced(coordinator(&events))
        .logged(writer)
        .await
        .unwrap();
    assert_eq!(written.events, events.len() as u64);
    let sizes = counting.sizes.lock().unwrap().clone();
    assert_eq!(
        sizes,
        [
            lce_runlog::MAX_BATCH,
            lce_runlog::MAX_BATCH,
            events.len() - 2 * lce_runlog::MAX_BATCH
        ]
    );
    let batch = log
        .read("run-batches", 0, 1000, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(batch.entries.len(), events.len());
}

/// The memory log counts its runs, and keeps sealed ones a day by default;
/// a writer knows the position its next entry takes, and `Logged` shows
/// its state, not its events.
#[tokio::test]
async fn the_memory_log_counts_runs_and_writers_their_positions() {
    assert_eq!(lce_runlog::DEFAULT_RETENTION, Duration::from_secs(86_400));
    let log = Arc::new(MemoryRunLog::new());
    assert!(log.is_empty());
    assert_eq!(log.len(), 0);
    let shared: Arc<dyn RunLog> = log.clone();
    let (events, _, writer) = scenario_log(&shared, "plain-text-answer").await;
    assert!(!log.is_empty());
    assert_eq!(log.len(), 1);
    assert_eq!(writer.next_position(), 1);
    let mut logged = Box::pin(
        source(futures::stream::iter(events.iter().cloned().map(Ok)))
            .enforced(coordinator(&events))
            .logged(writer),
    );
    assert!(!logged.is_terminated());
    let debug = format!("{logged:?}");
    assert!(debug.starts_with("Logged { inner: "), "{debug}");
    assert!(debug.ends_with("gathered: 0, done: false, .. }"), "{debug}");
    logged.as_mut().await.unwrap();
    assert!(logged.is_terminated());
    assert_eq!(logged.writer().next_position(), events.len() as u64 + 1);
}

/// The run log conformance suite (`lce_testkit::run_log`) against
/// `MemoryRunLog` (the Redis one runs it in `crates/lce-redis/tests`).
#[tokio::test]
async fn memory_run_log_conforms() {
    let log = MemoryRunLog::new();
    lce_testkit::run_log::check_run_log(&log).await;
    // Again on the same log: the suite's runs never collide.
    lce_testkit::run_log::check_run_log(&log).await;
}

/// What one subscriber holds is bounded in bytes, not only in entries: on
/// a run of large entries each read asks for about `SUBSCRIBER_BYTES` of
/// them and each chunk is at most that plus one entry's frames; on small
/// entries reads grow to the full batch. The bytes are those of a read
/// whole.
#[tokio::test]
async fn a_subscriber_holds_a_bounded_number_of_bytes() {
    let recorded = Arc::new(Recorded::default());
    let reads = recorded.reads.clone();
    let log: Arc<dyn RunLog> = recorded;
    let big = 64 * 1024;
    let mut run = lce_testkit::RunBuilder::new("run-big", "conv-big");
    let mut events = vec![run.run_started(), run.text_started("m")];
    for _ in 0..300 {
        events.push(run.text_delta("m", &"x".repeat(big)));
    }
    for _ in 0..2000 {
        events.push(run.text_delta("m", "y"));
    }
    events.push(run.text_finished("m"));
    events.push(run.run_finished());
    let info = RunInfo {
        run_id: "run-big".to_owned(),
        conversation_id: "conv-big".to_owned(),
        owner: "owner".to_owned(),
        nonce: "nonce-1".to_owned(),
    };
    log.create(info, LEASE).await.unwrap();
    let entries: Vec<LogEntry> = events.iter().cloned().map(LogEntry::Event).collect();
    for (position, chunk) in (1..).step_by(100).zip(entries.chunks(100)) {
        log.append_batch("run-big", "owner", position, chunk.to_vec())
            .await
            .unwrap();
    }
    let sub = Subscription::open(
        log.clone(),
        "run-big",
        WireEncoder::new(WireFormat::Custom, None),
        None,
        false,
    )
    .await
    .unwrap();
    let chunks: Vec<Bytes> = sub.into_stream().map(Result::unwrap).collect().await;
    let whole: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
    assert_eq!(
        whole,
        replay(&log, "run-big", WireFormat::Custom, None, false).await,
        "chunking changed the bytes"
    );
    let one_entry = big + 1024;
    for chunk in &chunks {
        assert!(
            chunk.len() <= lce_runlog::SUBSCRIBER_BYTES + one_entry,
            "a chunk of {} bytes",
            chunk.len()
        );
    }
    let reads = reads.lock().unwrap().clone();
    let largest = reads.iter().map(|&(_, bytes)| bytes).max().unwrap();
    assert!(
        largest <= 2 * lce_runlog::SUBSCRIBER_BYTES,
        "a read of {largest} bytes: {reads:?}"
    );
    assert!(
        reads.iter().any(|&(n, _)| n == 256),
        "small entries are read a full batch at a time: {reads:?}"
    );
}

/// A takeover reads the run a batch at a time (not whole): a run of many
/// batches whose tool call started in the first one and never finished
/// ends right after its last entry, with the closure terminal that knows
/// of the tool call (`side_effect_status` from the whole run).
#[tokio::test]
async fn a_long_orphan_is_ended_from_its_whole_log() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let mut run = lce_testkit::RunBuilder::new("run-long-orphan", "conv-long");
    let mut events = vec![
        run.run_started(),
        run.tool_started("call-1", "search", "{}"),
        run.text_started("m1"),
    ];
    for k in 0..700 {
        events.push(run.text_delta("m1", &format!("delta {k} ")));
    }
    let writer = LogWriter::create(log.clone(), info("run-long-orphan", "conv-long"), LEASE)
        .await
        .unwrap();
    for (i, e) in events.iter().enumerate() {
        log.append(
            "run-long-orphan",
            "replica-a",
            i as u64 + 1,
            LogEntry::Event(e.clone()),
        )
        .await
        .unwrap();
    }
    writer.release().await.unwrap();
    let takeover = Takeover {
        claimant: "replica-b".to_owned(),
        lease: LEASE,
    };
    assert!(
        end_orphan(&log, "run-long-orphan", &takeover)
            .await
            .unwrap()
    );
    let mut entries = Vec::new();
    loop {
        let batch = log
            .read("run-long-orphan", entries.len() as u64, 500, Duration::ZERO)
            .await
            .unwrap();
        if batch.entries.is_empty() {
            assert!(batch.sealed);
            break;
        }
        entries.extend(batch.entries);
    }
    assert_eq!(entries.len(), events.len() + 1, "the closure right after");
    let Some(LogEntry::Event(terminal)) = entries.last() else {
        panic!("no terminal")
    };
    let lce_types::Payload::RunError(error) = &terminal.payload else {
        panic!("{terminal:?}")
    };
    assert_eq!(error.code, "provider_stream_closed");
    // The tool call started in the first batch: its side effects may have
    // happened (D9), which only a reader of the whole run knows.
    let json = terminal.to_json();
    assert!(
        json.contains("\"side_effect_status\":\"possible\""),
        "{json}"
    );
}
