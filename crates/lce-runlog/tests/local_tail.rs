//! `LocalTail`: reads of the entries appended through it are answered from
//! memory (the wrapped log is not read), equal to what the wrapped log
//! holds; everything it did not see acknowledged comes from the wrapped
//! log; and it passes the run log conformance suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::to_inner;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lce_runlog::{
    LOCAL_TAIL_BYTES, LocalTail, LogBatch, LogEntry, LogError, LogFuture, MemoryRunLog, Refusal,
    RunInfo, RunLog,
};
use lce_testkit::RunBuilder;

const LEASE: Duration = Duration::from_secs(60);
const RETENTION: Duration = Duration::from_secs(3600);

/// A memory log that counts the reads it answers, and fails appends at a
/// chosen position (an engine that lost the answer).
#[derive(Default)]
struct Counted {
    inner: MemoryRunLog,
    reads: AtomicUsize,
    fail_at: std::sync::Mutex<Option<u64>>,
}

impl RunLog for Counted {
    fn append_batch(&self, run: &str, by: &str, at: u64, batch: Vec<LogEntry>) -> LogFuture<()> {
        if *self.fail_at.lock().unwrap() == Some(at) {
            return Box::pin(async { Err(LogError::Unavailable) });
        }
        self.inner.append_batch(run, by, at, batch)
    }
    fn append(&self, run: &str, by: &str, at: u64, entry: LogEntry) -> LogFuture<()> {
        self.append_batch(run, by, at, vec![entry])
    }
    fn read(&self, run_id: &str, after: u64, max: usize, wait: Duration) -> LogFuture<LogBatch> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read(run_id, after, max, wait)
    }
    to_inner! {
        create(info: RunInfo, lease: Duration) -> ();
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

fn info(run_id: &str) -> RunInfo {
    RunInfo {
        run_id: run_id.to_owned(),
        conversation_id: format!("conv-{run_id}"),
        owner: "owner".to_owned(),
        nonce: "n".to_owned(),
    }
}

/// A run of `deltas` text deltas and its terminal, as log entries.
fn entries(run_id: &str, deltas: usize) -> Vec<LogEntry> {
    let mut run = RunBuilder::new(run_id, format!("conv-{run_id}"));
    let mut out = vec![LogEntry::Event(run.run_started())];
    for k in 0..deltas {
        out.push(LogEntry::Event(run.text_delta("m", &format!("d{k} ünï"))));
        if k % 7 == 0 {
            out.push(LogEntry::Idle);
        }
    }
    out.push(LogEntry::Event(run.run_finished()));
    out
}

fn wrapped() -> (Arc<Counted>, LocalTail) {
    wrapped_for(RETENTION)
}

/// [`wrapped`] with the log's `retention`.
fn wrapped_for(retention: Duration) -> (Arc<Counted>, LocalTail) {
    let counted = Arc::new(Counted::default());
    let tail = LocalTail::new(Arc::clone(&counted) as Arc<dyn RunLog>, retention);
    (counted, tail)
}

/// Every entry after `after`, read in batches of `max`, to the seal.
async fn read_all(log: &dyn RunLog, run_id: &str, mut after: u64, max: usize) -> Vec<LogEntry> {
    let mut seen = Vec::new();
    loop {
        let batch = log
            .read(run_id, after, max, Duration::from_secs(5))
            .await
            .unwrap();
        if batch.entries.is_empty() {
            assert!(batch.sealed, "an empty batch before the seal");
            return seen;
        }
        after += batch.entries.len() as u64;
        seen.extend(batch.entries);
    }
}

#[tokio::test]
async fn entries_appended_here_are_read_from_memory_and_equal_the_log() {
    let (counted, tail) = wrapped();
    tail.create(info("run-a"), LEASE).await.unwrap();
    let all = entries("run-a", 100);
    let mut at = 1;
    for chunk in all.chunks(16) {
        tail.append_batch("run-a", "owner", at, chunk.to_vec())
            .await
            .unwrap();
        at += chunk.len() as u64;
    }
    let from_memory = read_all(&tail, "run-a", 0, 10).await;
    assert_eq!(counted.reads.load(Ordering::SeqCst), 0, "the log was read");
    let from_log = read_all(counted.as_ref(), "run-a", 0, 10).await;
    assert_eq!(from_memory, from_log);
    assert_eq!(from_memory, all);
    // After any position too.
    for after in [1, 17, 50, all.len() as u64 - 1] {
        assert_eq!(
            read_all(&tail, "run-a", after, 3).await,
            read_all(counted.as_ref(), "run-a", after, 3).await,
            "after {after}"
        );
    }
}

#[tokio::test]
async fn a_waiting_read_wakes_at_an_append_here_without_the_log() {
    let (counted, tail) = wrapped();
    let tail = Arc::new(tail);
    tail.create(info("run-w"), LEASE).await.unwrap();
    let all = entries("run-w", 3);
    tail.append_batch("run-w", "owner", 1, all[..1].to_vec())
        .await
        .unwrap();
    let reader = {
        let tail = Arc::clone(&tail);
        tokio::spawn(async move { tail.read("run-w", 1, 10, Duration::from_secs(30)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    tail.append_batch("run-w", "owner", 2, all[1..3].to_vec())
        .await
        .unwrap();
    let batch = reader.await.unwrap().unwrap();
    assert_eq!(batch.entries, all[1..3]);
    // Woken by the append here, the read took the entries from memory.
    assert_eq!(counted.reads.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_run_taken_over_elsewhere_is_read_from_the_log_at_the_end_of_the_wait() {
    let (counted, tail) = wrapped();
    tail.create(info("run-t"), LEASE).await.unwrap();
    let all = entries("run-t", 3);
    tail.append_batch("run-t", "owner", 1, all[..2].to_vec())
        .await
        .unwrap();
    // Another replica (the wrapped log directly) takes the run over and
    // appends: this handle hears nothing of it.
    counted.release("run-t", "owner").await.unwrap();
    assert!(counted.claim("run-t", "other", LEASE).await.unwrap());
    counted
        .append_batch("run-t", "other", 3, all[2..].to_vec())
        .await
        .unwrap();
    let batch = tail
        .read("run-t", 2, 10, Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(batch.entries, all[2..]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 1);
    // A renewal that finds the lease gone drops the tail at once.
    tail.create(info("run-u"), LEASE).await.unwrap();
    tail.append_batch("run-u", "owner", 1, all[..1].to_vec())
        .await
        .unwrap();
    assert_eq!(tail.runs_kept(), 2);
    counted.release("run-u", "owner").await.unwrap();
    assert!(!tail.renew("run-u", "owner", LEASE).await.unwrap());
    assert_eq!(tail.runs_kept(), 1);
}

#[tokio::test]
async fn what_this_handle_did_not_append_comes_from_the_log() {
    let (counted, tail) = wrapped();
    // Appended by another handle (another replica): not in memory.
    counted.create(info("run-o"), LEASE).await.unwrap();
    let all = entries("run-o", 5);
    counted
        .append_batch("run-o", "owner", 1, all.clone())
        .await
        .unwrap();
    assert_eq!(read_all(&tail, "run-o", 0, 100).await, all);
    assert!(counted.reads.load(Ordering::SeqCst) > 0);
    // A run not appended here at all is unknown as before.
    assert_eq!(
        tail.read("run-none", 0, 10, Duration::ZERO).await.err(),
        Some(LogError::NotFound)
    );
}

#[tokio::test]
async fn a_failed_append_drops_the_tail_and_reads_go_to_the_log() {
    let (counted, tail) = wrapped();
    tail.create(info("run-f"), LEASE).await.unwrap();
    let all = entries("run-f", 4);
    tail.append_batch("run-f", "owner", 1, all[..3].to_vec())
        .await
        .unwrap();
    *counted.fail_at.lock().unwrap() = Some(4);
    assert!(
        tail.append_batch("run-f", "owner", 4, all[3..].to_vec())
            .await
            .is_err()
    );
    assert_eq!(tail.runs_kept(), 0);
    let batch = tail.read("run-f", 0, 10, Duration::ZERO).await.unwrap();
    assert_eq!(batch.entries, all[..3]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 1);
    // A refusal too.
    *counted.fail_at.lock().unwrap() = None;
    let refused = tail
        .append_batch("run-f", "intruder", 4, all[3..].to_vec())
        .await;
    assert!(matches!(
        refused,
        Err(LogError::Refused {
            refusal: Refusal::NotOwner,
            ..
        })
    ));
    assert_eq!(tail.runs_kept(), 0);
}

#[tokio::test]
async fn a_release_a_claim_or_a_new_create_drops_the_tail() {
    let (_counted, tail) = wrapped();
    tail.create(info("run-r"), LEASE).await.unwrap();
    let all = entries("run-r", 2);
    tail.append_batch("run-r", "owner", 1, all[..2].to_vec())
        .await
        .unwrap();
    assert_eq!(tail.runs_kept(), 1);
    tail.release("run-r", "owner").await.unwrap();
    assert_eq!(tail.runs_kept(), 0);
    assert!(tail.claim("run-r", "other", LEASE).await.unwrap());
    tail.append_batch("run-r", "other", 3, all[2..].to_vec())
        .await
        .unwrap();
    assert_eq!(tail.runs_kept(), 1);
    assert_eq!(read_all(&tail, "run-r", 0, 10).await, all);
}

#[tokio::test]
async fn an_ended_run_is_kept_briefly_then_read_from_the_log() {
    // Retention 4 s: an ended run's tail is kept 1 s (a margin for a
    // stalled test thread on a busy machine, both ways).
    let (counted, tail) = wrapped_for(Duration::from_secs(4));
    tail.create(info("run-s"), LEASE).await.unwrap();
    let all = entries("run-s", 2);
    tail.append_batch("run-s", "owner", 1, all.clone())
        .await
        .unwrap();
    assert_eq!(read_all(&tail, "run-s", 0, 10).await, all);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 0);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(read_all(&tail, "run-s", 0, 10).await, all);
    assert!(counted.reads.load(Ordering::SeqCst) > 0);
    assert_eq!(tail.runs_kept(), 0);
}

#[tokio::test]
async fn a_quiet_run_is_read_from_the_log_once_its_tail_went_stale() {
    // Retention 4 s: an unended run's tail is kept 1 s after its last
    // append.
    let (counted, tail) = wrapped_for(Duration::from_secs(4));
    tail.create(info("run-q"), LEASE).await.unwrap();
    let all = entries("run-q", 3);
    tail.append_batch("run-q", "owner", 1, all[..2].to_vec())
        .await
        .unwrap();
    let fresh = tail.read("run-q", 0, 10, Duration::ZERO).await.unwrap();
    assert_eq!(fresh.entries, all[..2]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 0);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let stale = tail.read("run-q", 0, 10, Duration::ZERO).await.unwrap();
    assert_eq!(stale.entries, all[..2]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 1);
    assert_eq!(tail.runs_kept(), 0);
    // The next append starts a tail again, read from memory.
    tail.append_batch("run-q", "owner", 3, all[2..].to_vec())
        .await
        .unwrap();
    let next = tail.read("run-q", 2, 10, Duration::ZERO).await.unwrap();
    assert_eq!(next.entries, all[2..]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_run_keeps_a_bounded_tail_and_older_entries_come_from_the_log() {
    let (counted, tail) = wrapped();
    tail.create(info("run-b"), LEASE).await.unwrap();
    // About 1 KiB each: the tail keeps the last ~256.
    let mut run = RunBuilder::new("run-b", "conv-run-b");
    let mut all = vec![LogEntry::Event(run.run_started())];
    for k in 0..1000 {
        all.push(LogEntry::Event(run.text_delta("m", &format!("{k:01000}"))));
    }
    let mut at = 1;
    for chunk in all.chunks(64) {
        tail.append_batch("run-b", "owner", at, chunk.to_vec())
            .await
            .unwrap();
        at += chunk.len() as u64;
    }
    // The last entries from memory.
    let last = tail
        .read("run-b", all.len() as u64 - 10, 10, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(last.entries, all[all.len() - 10..]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 0);
    // The first from the log: they are no longer in memory.
    let first = tail.read("run-b", 0, 10, Duration::ZERO).await.unwrap();
    assert_eq!(first.entries, all[..10]);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 1);
    const { assert!(LOCAL_TAIL_BYTES < 1000 * 1000) };
}

#[tokio::test]
async fn an_empty_append_keeps_nothing() {
    let (counted, tail) = wrapped();
    tail.create(info("run-e"), LEASE).await.unwrap();
    // Empty: the log takes it, and the tail has nothing to keep.
    tail.append_batch("run-e", "owner", 1, Vec::new())
        .await
        .unwrap();
    assert_eq!(tail.runs_kept(), 0);
    let all = entries("run-e", 1);
    tail.append_batch("run-e", "owner", 1, all.clone())
        .await
        .unwrap();
    assert_eq!(read_all(&tail, "run-e", 0, 10).await, all);
    assert_eq!(counted.reads.load(Ordering::SeqCst), 0);
}

/// The run log conformance suite through the wrapper.
#[tokio::test]
async fn local_tail_conforms() {
    let (_counted, tail) = wrapped();
    lce_testkit::run_log::check_run_log(&tail).await;
}
