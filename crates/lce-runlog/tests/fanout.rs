//! Fan-out (guarantee 8): a [`Fanout`] encodes each log entry once per
//! protocol whatever the number of subscribers, and every subscriber's
//! bytes are those of a lone [`Subscription`] (today's replay) for every
//! scenario, format, ids or not, resume point; a slow subscriber does not
//! hold a fast one back; the shared reader stops with its last subscriber.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{info, replay};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use lce_core::FrameEncoder;
use lce_runlog::{
    Fanout, FrameId, FrameStream, LogEntry, LogWriter, MemoryRunLog, RunLog, RunLogStreamExt,
    SubscribeError,
};
use lce_stream::{
    Coordinator, CoordinatorOptions, LifecycleStreamExt, WireEncoder, WireFormat, source,
};
use lce_types::Event;

const FORMATS: [WireFormat; 3] = [WireFormat::Custom, WireFormat::Agui, WireFormat::AguiV1];
const LEASE: Duration = Duration::from_secs(30);
/// A bound on waits that only a hang reaches (never a speed assertion).
const HANG: Duration = Duration::from_secs(120);

/// A [`WireEncoder`] that counts the entries it encodes.
struct Counting {
    inner: WireEncoder,
    count: Arc<AtomicUsize>,
}

impl FrameEncoder for Counting {
    type Error = <WireEncoder as FrameEncoder>::Error;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), Self::Error> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.inner.encode_frame(event, dst)
    }

    fn on_idle(&mut self, dst: &mut BytesMut) -> Result<(), Self::Error> {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.inner.on_idle(dst)
    }
}

/// Logs `events` through the chain into `log`; returns the run id.
async fn log_run(log: &Arc<dyn RunLog>, events: &[Event]) -> String {
    let run_id = events[0].run_id.to_string();
    create(log, events).await;
    write(log, events).await;
    run_id
}

async fn create(log: &Arc<dyn RunLog>, events: &[Event]) {
    let (run_id, conversation) = (
        &events[0].run_id.to_string(),
        &events[0].conversation_id.to_string(),
    );
    log.create(info(run_id, conversation), LEASE).await.unwrap();
}

async fn write(log: &Arc<dyn RunLog>, events: &[Event]) {
    let first = events.first().cloned().map(Ok);
    let coordinator = Coordinator::new(CoordinatorOptions::for_first_item(first.as_ref()));
    let writer = LogWriter::resume(log.clone(), events[0].run_id.as_ref(), "replica-a", 1);
    let written = source(futures::stream::iter(events.iter().cloned().map(Ok)))
        .enforced(coordinator)
        .logged(writer)
        .await
        .unwrap();
    assert!(written.terminal.is_some());
}

/// How many entries the run's log holds.
async fn entries(log: &Arc<dyn RunLog>, run_id: &str) -> usize {
    let batch = log.read(run_id, 0, 100_000, Duration::ZERO).await.unwrap();
    assert!(batch.sealed);
    batch.entries.len()
}

async fn collect(frames: FrameStream) -> Vec<u8> {
    let chunks: Vec<Result<Bytes, _>> = frames.collect().await;
    chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect()
}

async fn shared(
    fanout: &Fanout<WireFormat>,
    run_id: &str,
    format: WireFormat,
    after: Option<FrameId>,
    ids: bool,
) -> Result<FrameStream, SubscribeError> {
    fanout
        .open(
            run_id,
            format,
            ids,
            move || WireEncoder::new(format, None),
            after,
        )
        .await
}

/// Waits until no shared reader is left (a reader's task may hold its
/// state for a moment after the last subscriber has gone).
async fn no_readers(fanout: &Fanout<WireFormat>) {
    let deadline = tokio::time::Instant::now() + HANG;
    while fanout.readers() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a reader outlives its subscribers"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// 100 subscribers of a run in each of two protocols, open before the run
/// starts (following it live) and after it ended (a replay): one encode
/// per entry per protocol, and each subscriber's bytes are a lone one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_subscribers_cost_one_encode_per_entry_per_protocol() {
    let (_, events) = lce_testkit::fixtures::scenarios()
        .into_iter()
        .max_by_key(|(_, e)| e.len())
        .unwrap();
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let run_id = events[0].run_id.to_string();
    create(&log, &events).await;
    for phase in ["live", "replay"] {
        // A replica each (the live one's readers may still be ending).
        let fanout = Fanout::<WireFormat>::new(log.clone());
        let counts = [Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))];
        let formats = [WireFormat::Custom, WireFormat::AguiV1];
        let mut opened = Vec::new();
        for (format, count) in formats.into_iter().zip(&counts) {
            for _ in 0..100 {
                let count = count.clone();
                let make = move || Counting {
                    inner: WireEncoder::new(format, None),
                    count: count.clone(),
                };
                let frames = fanout
                    .open(&run_id, format, false, make, None)
                    .await
                    .unwrap();
                opened.push((format, frames));
            }
        }
        // All 200 open before any is read: a replay read as soon as it
        // opens could end, and its reader with it, before the next opens.
        assert_eq!(fanout.readers(), 2, "{phase}: one reader per protocol");
        let readers: Vec<_> = opened
            .into_iter()
            .map(|(format, frames)| (format, tokio::spawn(collect(frames))))
            .collect();
        if phase == "live" {
            write(&log, &events).await;
        }
        let want = [
            replay(&log, &run_id, formats[0], None, false).await,
            replay(&log, &run_id, formats[1], None, false).await,
        ];
        for (format, reader) in readers {
            let got = tokio::time::timeout(HANG, reader).await.unwrap().unwrap();
            let want = &want[usize::from(format != formats[0])];
            assert_eq!(&got, want, "{phase} {format:?}");
        }
        let n = entries(&log, &run_id).await;
        assert!(n > 10, "a run of {n} entries");
        for (format, count) in formats.iter().zip(&counts) {
            assert_eq!(
                count.load(Ordering::SeqCst),
                n,
                "{phase} {format:?}: encodes for {n} entries"
            );
        }
    }
}

/// For every scenario, format and ids or not, three subscribers sharing a
/// reader each get the bytes of a lone subscription.
#[tokio::test]
async fn shared_bytes_are_a_lone_subscriptions_for_every_scenario() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let fanout = Fanout::<WireFormat>::new(log.clone());
    let mut checked = 0;
    for (name, events) in lce_testkit::fixtures::scenarios() {
        let run_id = log_run(&log, &events).await;
        for format in FORMATS {
            for ids in [false, true] {
                let want = replay(&log, &run_id, format, None, ids).await;
                let mut opened = Vec::new();
                for _ in 0..3 {
                    opened.push(shared(&fanout, &run_id, format, None, ids).await.unwrap());
                }
                for frames in opened {
                    let got = collect(frames).await;
                    assert_eq!(
                        String::from_utf8(got).unwrap(),
                        String::from_utf8(want.clone()).unwrap(),
                        "{name} {format:?} ids {ids}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 60,
        "only {checked} scenario x format x ids cases"
    );
    no_readers(&fanout).await;
}

/// A resume after every frame id, while another subscriber holds the
/// shared reader, yields exactly what a lone resume does; ids that name no
/// frame are refused before any byte, as a lone subscription refuses them.
#[tokio::test]
async fn resuming_after_any_frame_is_exact() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let fanout = Fanout::<WireFormat>::new(log.clone());
    for (name, events) in lce_testkit::fixtures::scenarios() {
        let run_id = log_run(&log, &events).await;
        for format in FORMATS {
            let full = String::from_utf8(replay(&log, &run_id, format, None, true).await).unwrap();
            // Holds the reader, so that resumes find it mid-way or done.
            let holder = shared(&fanout, &run_id, format, None, true).await.unwrap();
            let mut ids = Vec::new();
            let mut offset = 0;
            for frame in full.split_inclusive("\n\n") {
                offset += frame.len();
                let id = frame.lines().next().unwrap().strip_prefix("id: ").unwrap();
                ids.push((id.parse::<FrameId>().unwrap(), offset));
            }
            for (id, end) in &ids {
                let rest = collect(
                    shared(&fanout, &run_id, format, Some(*id), true)
                        .await
                        .unwrap(),
                )
                .await;
                assert_eq!(
                    String::from_utf8(rest).unwrap(),
                    full[*end..],
                    "{name} {format:?} after {id}"
                );
            }
            let (last, _) = ids.last().copied().unwrap();
            for bad in [
                FrameId {
                    position: last.position,
                    index: last.index + 1,
                },
                FrameId {
                    position: last.position + 1,
                    index: 0,
                },
            ] {
                let opened = shared(&fanout, &run_id, format, Some(bad), true).await;
                assert!(
                    matches!(opened, Err(SubscribeError::UnknownId)),
                    "{name} {format:?} {bad}"
                );
            }
            assert_eq!(
                collect(holder).await,
                full.as_bytes(),
                "{name} {format:?} holder"
            );
        }
    }
    let missing = shared(&fanout, "no-such-run", WireFormat::Custom, None, false).await;
    assert!(matches!(missing, Err(SubscribeError::NotFound)));
}

/// A run of large entries, longer than the window.
async fn big_run(log: &Arc<dyn RunLog>, run_id: &str, entries: usize) {
    let mut run = lce_testkit::RunBuilder::new(run_id, "conv-big");
    let mut events = vec![run.run_started(), run.text_started("m")];
    for i in 0..entries {
        events.push(run.text_delta("m", &format!("{i:06}").repeat(10_000)));
    }
    events.push(run.text_finished("m"));
    events.push(run.run_finished());
    log_run(log, &events).await;
}

/// A subscriber that stops reading does not hold back another one, which
/// reads the whole run (more than the window) past it; the slow one then
/// goes on alone from where it stopped (its entries re-encoded) and its
/// bytes are still exact; the shared reader stops when both are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscriber_does_not_hold_a_fast_one_back() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    big_run(&log, "run-big", 400).await;
    let n = entries(&log, "run-big").await;
    const { assert!(400 * 60_000 > 2 * lce_runlog::WINDOW_BYTES) };
    let baseline = Arc::strong_count(&log);
    let fanout = Fanout::<WireFormat>::new(log.clone());
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    let make = move || Counting {
        inner: WireEncoder::new(WireFormat::Custom, None),
        count: counted.clone(),
    };
    let want = replay(&log, "run-big", WireFormat::Custom, None, true).await;
    let open = || fanout.open("run-big", WireFormat::Custom, true, make.clone(), None);
    let mut slow = open().await.unwrap();
    let first = slow.next().await.unwrap().unwrap();
    let fast = open().await.unwrap();
    let fast = tokio::time::timeout(HANG, collect(fast))
        .await
        .expect("the fast subscriber finished");
    assert_eq!(fast, want);
    assert_eq!(
        count.load(Ordering::SeqCst),
        n,
        "one encode per entry so far"
    );
    let mut got = first.to_vec();
    got.extend(tokio::time::timeout(HANG, collect(slow)).await.unwrap());
    assert_eq!(got, want, "the slow subscriber's bytes");
    assert!(
        count.load(Ordering::SeqCst) > n,
        "the slow subscriber went on alone"
    );
    no_readers(&fanout).await;
    drop(fanout);
    let deadline = tokio::time::Instant::now() + HANG;
    while Arc::strong_count(&log) > baseline {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a reader task still holds the log"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The shared reader of a live run stops when its last subscriber leaves
/// (before the terminal); a new subscriber then gets a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reader_stops_when_its_last_subscriber_leaves() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    log.create(info("run-live", "conv-live"), LEASE)
        .await
        .unwrap();
    log.append("run-live", "replica-a", 1, LogEntry::Idle)
        .await
        .unwrap();
    let fanout = Fanout::<WireFormat>::new(log.clone());
    let baseline = Arc::strong_count(&log);
    let a = shared(&fanout, "run-live", WireFormat::AguiV1, None, false)
        .await
        .unwrap();
    let b = shared(&fanout, "run-live", WireFormat::AguiV1, None, false)
        .await
        .unwrap();
    assert_eq!(fanout.readers(), 1);
    // Both wait at the live tail, the reader with them.
    let waiting = tokio::spawn(collect(a));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(Arc::strong_count(&log) > baseline);
    waiting.abort();
    let _ = waiting.await;
    assert_eq!(fanout.readers(), 1, "b still reads");
    drop(b);
    no_readers(&fanout).await;
    let deadline = tokio::time::Instant::now() + HANG;
    while Arc::strong_count(&log) > baseline {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reader task did not stop"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let c = shared(&fanout, "run-live", WireFormat::AguiV1, None, false)
        .await
        .unwrap();
    assert_eq!(fanout.readers(), 1);
    drop(c);
}

/// Outside a Tokio runtime there is no task to share: a lone subscription,
/// with the same bytes.
#[test]
fn outside_a_runtime_a_subscriber_reads_alone() {
    let (_, events) = lce_testkit::fixtures::scenarios()
        .into_iter()
        .next()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    let run_id = rt.block_on(log_run(&log, &events));
    let want = rt.block_on(replay(&log, &run_id, WireFormat::Agui, None, true));
    let fanout = Fanout::<WireFormat>::new(log.clone());
    let frames =
        futures::executor::block_on(shared(&fanout, &run_id, WireFormat::Agui, None, true))
            .unwrap();
    assert_eq!(fanout.readers(), 0);
    assert_eq!(futures::executor::block_on(collect(frames)), want);
}

/// A subscriber that joins a live run once its first entries have left the
/// window (the run is longer than [`lce_runlog::WINDOW_BYTES`]) reads them
/// alone (re-encoding them), then joins the shared reader: what is
/// appended after it joined is encoded once for both, and both get a lone
/// subscription's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_subscriber_catches_up_alone_then_shares() {
    let log: Arc<dyn RunLog> = Arc::new(MemoryRunLog::new());
    log.create(info("run-late", "conv-late"), LEASE)
        .await
        .unwrap();
    let mut run = lce_testkit::RunBuilder::new("run-late", "conv-late");
    let mut events = vec![run.run_started(), run.text_started("m")];
    for i in 0..158 {
        events.push(run.text_delta("m", &format!("{i:06}").repeat(5_000)));
    }
    for _ in 0..100 {
        events.push(run.text_delta("m", "y"));
    }
    events.push(run.text_finished("m"));
    events.push(run.run_finished());
    let entries: Vec<LogEntry> = events.into_iter().map(LogEntry::Event).collect();
    let (early, late) = entries.split_at(160);
    log.append_batch("run-late", "replica-a", 1, early.to_vec())
        .await
        .unwrap();
    let fanout = Fanout::<WireFormat>::new(log.clone());
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    let make = move || Counting {
        inner: WireEncoder::new(WireFormat::Agui, None),
        count: counted.clone(),
    };
    let open = || fanout.open("run-late", WireFormat::Agui, true, make.clone(), None);
    // Reads until the frames of entry 160 (the last one so far).
    async fn to_160(frames: &mut FrameStream, out: &mut Vec<u8>) {
        while !out.windows(10).any(|w| w == b"id: 160.0\n") {
            out.extend(frames.next().await.unwrap().unwrap());
        }
    }
    // The first subscriber reads the 160 entries (about 4.7 MB, more than
    // the window keeps).
    const { assert!(158 * 30_000 > lce_runlog::WINDOW_BYTES) };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut first = open().await.unwrap();
    to_160(&mut first, &mut a).await;
    assert_eq!(count.load(Ordering::SeqCst), 160);
    let mut second = open().await.unwrap();
    to_160(&mut second, &mut b).await;
    let caught_up = count.load(Ordering::SeqCst);
    assert!(
        caught_up > 160 && caught_up < 320,
        "{caught_up} encodes: the late one re-encoded some of the first 160 entries, not all"
    );
    let rest_a = tokio::spawn(collect(first));
    let rest_b = tokio::spawn(collect(second));
    log.append_batch("run-late", "replica-a", 161, late.to_vec())
        .await
        .unwrap();
    a.extend(tokio::time::timeout(HANG, rest_a).await.unwrap().unwrap());
    b.extend(tokio::time::timeout(HANG, rest_b).await.unwrap().unwrap());
    let want = replay(&log, "run-late", WireFormat::Agui, None, true).await;
    assert_eq!(a, want);
    assert_eq!(b, want);
    assert_eq!(
        count.load(Ordering::SeqCst),
        caught_up + late.len(),
        "each entry appended after the late one joined is encoded once"
    );
}
