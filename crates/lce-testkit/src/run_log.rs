//! The conformance suite of `lce_runlog::RunLog`: every promise of the trait's
//! documentation, asserted against any implementation.
//!
//! [`check_run_log`] runs every check; each check is public too, so a test
//! can run one alone. They panic (assert) on the first broken promise, with
//! the check and what differed. Each check makes runs of its own with fresh
//! ids, so the suite can run against a log that holds other runs (a shared
//! Redis), and many times against the same one.
//!
//! Timing: the waits are short (a few hundred milliseconds, a lease of
//! 150 ms that must expire) and the bounds generous (seconds), so a loaded
//! machine slows the suite down without failing it.
//!
//! ```no_run
//! # async fn demo(log: &dyn lce_runlog::RunLog) {
//! lce_testkit::run_log::check_run_log(log).await;
//! # }
//! ```

// A conformance suite reports a broken promise by panicking, as a test does.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lce_runlog::{LogBatch, LogEntry, LogError, Refusal, RunInfo, RunLog};
use lce_types::Event;

use crate::RunBuilder;

/// A lease no check outlives.
const LONG: Duration = Duration::from_secs(120);

/// Runs every check of the suite against `log`, one after the other.
pub async fn check_run_log(log: &dyn RunLog) {
    create_refuses_an_existing_run(log).await;
    appends_in_order_only(log).await;
    batches_append_whole_or_not_at_all(log).await;
    appends_by_the_owner_only(log).await;
    a_terminal_seals(log).await;
    reads_from_anywhere(log).await;
    reads_wait_for_entries(log).await;
    unknown_runs_are_not_found(log).await;
    leases_renew_release_and_claim(log).await;
    an_expired_lease_can_be_claimed(log).await;
    orphans_are_the_unowned_unsealed_runs(log).await;
    entries_round_trip(log).await;
    cancel_requests_are_recorded_until_the_terminal(log).await;
    running_run_is_the_newest_unsealed_run(log).await;
    abandon_takes_back_an_untouched_run(log).await;
}

/// A run id no other run of this process (or an earlier one) has.
pub fn fresh_run_id(label: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("conformance-{label}-{}-{nanos}-{n}", std::process::id())
}

/// Creates a fresh run owned by `owner` for `lease`; its info and a
/// builder of its events.
async fn new_run(
    log: &dyn RunLog,
    label: &str,
    owner: &str,
    lease: Duration,
) -> (RunInfo, RunBuilder) {
    let run_id = fresh_run_id(label);
    let conversation_id = format!("conv-{run_id}");
    new_run_in(log, run_id, &conversation_id, owner, lease).await
}

/// Creates the run `run_id` of `conversation_id`, owned by `owner` for
/// `lease`; its info and a builder of its events.
async fn new_run_in(
    log: &dyn RunLog,
    run_id: String,
    conversation_id: &str,
    owner: &str,
    lease: Duration,
) -> (RunInfo, RunBuilder) {
    let label = run_id.clone();
    let info = RunInfo {
        conversation_id: conversation_id.to_owned(),
        run_id,
        owner: owner.to_owned(),
        nonce: format!("nonce-of-{label}"),
    };
    log.create(info.clone(), lease)
        .await
        .unwrap_or_else(|e| panic!("{label}: create: {e:?}"));
    let builder = RunBuilder::new(info.run_id.as_str(), info.conversation_id.as_str());
    (info, builder)
}

/// The refusal of an append, panicking on anything else.
#[track_caller]
fn refusal(check: &str, position: u64, result: Result<(), LogError>) -> Refusal {
    match result {
        Err(LogError::Refused {
            position: p,
            refusal,
        }) => {
            assert_eq!(p, position, "{check}: the refusal names another position");
            refusal
        }
        other => panic!("{check}: the append at {position} was not refused: {other:?}"),
    }
}

/// Reads everything after `after` without waiting.
async fn read_now(log: &dyn RunLog, run_id: &str, after: u64) -> LogBatch {
    log.read(run_id, after, 10_000, Duration::ZERO)
        .await
        .unwrap_or_else(|e| panic!("read {run_id} after {after}: {e:?}"))
}

/// Runs two futures concurrently in the calling task, like
/// `futures::join!` (kept here so the testkit needs no `futures`).
async fn join2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let mut out_a = None;
    let mut out_b = None;
    poll_fn(move |cx| {
        if out_a.is_none()
            && let Poll::Ready(v) = a.as_mut().poll(cx)
        {
            out_a = Some(v);
        }
        if out_b.is_none()
            && let Poll::Ready(v) = b.as_mut().poll(cx)
        {
            out_b = Some(v);
        }
        if out_a.is_some() && out_b.is_some() {
            Poll::Ready((out_a.take().unwrap(), out_b.take().unwrap()))
        } else {
            Poll::Pending
        }
    })
    .await
}

/// `create` makes an empty, owned log and its info; a second `create` of
/// the same run id is [`LogError::Exists`], whoever asks.
pub async fn create_refuses_an_existing_run(log: &dyn RunLog) {
    let check = "create_refuses_an_existing_run";
    let (info, _) = new_run(log, "create", "replica-a", LONG).await;
    assert_eq!(
        log.info(&info.run_id).await,
        Ok(Some(info.clone())),
        "{check}: info"
    );
    let batch = read_now(log, &info.run_id, 0).await;
    assert_eq!(
        batch,
        LogBatch {
            entries: Vec::new(),
            sealed: false,
            owned: true
        },
        "{check}: a new log"
    );
    assert_eq!(
        log.create(info.clone(), LONG).await,
        Err(LogError::Exists),
        "{check}: the same create again"
    );
    let other = RunInfo {
        owner: "replica-b".to_owned(),
        nonce: "another-nonce".to_owned(),
        conversation_id: "another-conversation".to_owned(),
        ..info.clone()
    };
    assert_eq!(
        log.create(other, LONG).await,
        Err(LogError::Exists),
        "{check}: another replica's create"
    );
    assert_eq!(
        log.info(&info.run_id).await,
        Ok(Some(info)),
        "{check}: info kept"
    );
}

/// Positions are 1, 2, 3, ...: position 0, a gap, a duplicate (the same
/// entry or another) are [`Refusal::OutOfOrder`] and change nothing.
pub async fn appends_in_order_only(log: &dyn RunLog) {
    let check = "appends_in_order_only";
    let (info, mut run) = new_run(log, "order", "owner", LONG).await;
    let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
    let first = LogEntry::Event(run.run_started());
    let second = LogEntry::Event(run.text_started("m"));
    let third = LogEntry::Idle;
    let append = |position: u64, entry: &LogEntry| log.append(id, owner, position, entry.clone());

    assert_eq!(
        refusal(check, 0, append(0, &first).await),
        Refusal::OutOfOrder
    );
    assert_eq!(
        refusal(check, 2, append(2, &first).await),
        Refusal::OutOfOrder
    );
    assert_eq!(append(1, &first).await, Ok(()), "{check}: position 1");
    assert_eq!(
        refusal(check, 1, append(1, &first).await),
        Refusal::OutOfOrder,
        "{check}: the same entry again"
    );
    assert_eq!(
        refusal(check, 1, append(1, &second).await),
        Refusal::OutOfOrder,
        "{check}: another entry at 1"
    );
    assert_eq!(
        refusal(check, 3, append(3, &second).await),
        Refusal::OutOfOrder,
        "{check}: a gap"
    );
    assert_eq!(append(2, &second).await, Ok(()), "{check}: position 2");
    assert_eq!(
        refusal(check, 2, append(2, &third).await),
        Refusal::OutOfOrder
    );
    assert_eq!(
        refusal(check, 1, append(1, &third).await),
        Refusal::OutOfOrder,
        "{check}: going back"
    );
    assert_eq!(
        refusal(check, 9, append(9, &third).await),
        Refusal::OutOfOrder
    );
    assert_eq!(append(3, &third).await, Ok(()), "{check}: position 3");
    let batch = read_now(log, id, 0).await;
    assert_eq!(
        batch.entries,
        [first, second, third],
        "{check}: the log holds exactly the accepted appends"
    );
    assert!(!batch.sealed && batch.owned, "{check}: {batch:?}");
}

/// A batch takes consecutive positions from the next one, whole or not at
/// all: a batch at a wrong position, by another writer, or with an entry
/// after its terminal leaves the log as it was; a batch ending in a
/// terminal seals the log.
pub async fn batches_append_whole_or_not_at_all(log: &dyn RunLog) {
    let check = "batches_append_whole_or_not_at_all";
    let (info, mut run) = new_run(log, "batch", "owner", LONG).await;
    let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
    let head = vec![
        LogEntry::Event(run.run_started()),
        LogEntry::Event(run.text_started("m")),
        LogEntry::Idle,
    ];
    assert_eq!(
        refusal(check, 2, log.append_batch(id, owner, 2, head.clone()).await),
        Refusal::OutOfOrder
    );
    assert_eq!(
        refusal(
            check,
            1,
            log.append_batch(id, "intruder", 1, head.clone()).await
        ),
        Refusal::NotOwner
    );
    assert!(
        read_now(log, id, 0).await.entries.is_empty(),
        "{check}: nothing of a refused batch"
    );
    assert_eq!(
        log.append_batch(id, owner, 1, head.clone()).await,
        Ok(()),
        "{check}: 1..=3"
    );
    assert_eq!(
        log.append_batch(id, owner, 4, Vec::new()).await,
        Ok(()),
        "{check}: empty"
    );
    let delta = LogEntry::Event(run.text_delta("m", "x"));
    let finished = LogEntry::Event(run.text_finished("m"));
    let terminal = LogEntry::Event(run.run_finished());
    let after = LogEntry::Idle;
    assert_eq!(
        refusal(
            check,
            4,
            log.append_batch(id, owner, 4, vec![delta.clone(), terminal.clone(), after])
                .await
        ),
        Refusal::Sealed,
        "{check}: an entry after the terminal"
    );
    let batch = read_now(log, id, 0).await;
    assert_eq!(batch.entries, head, "{check}: nothing of the refused batch");
    assert!(!batch.sealed, "{check}");
    let tail = vec![delta, finished, terminal];
    assert_eq!(
        log.append_batch(id, owner, 4, tail.clone()).await,
        Ok(()),
        "{check}: 4..=6"
    );
    let batch = read_now(log, id, 0).await;
    let mut all = head;
    all.extend(tail);
    assert_eq!(batch.entries, all, "{check}");
    assert!(batch.sealed, "{check}: the terminal sealed it");
}

/// Only the lease holder appends: anyone else is [`Refusal::NotOwner`].
pub async fn appends_by_the_owner_only(log: &dyn RunLog) {
    let check = "appends_by_the_owner_only";
    let (info, mut run) = new_run(log, "owner", "replica-a", LONG).await;
    let id = info.run_id.as_str();
    let entry = LogEntry::Event(run.run_started());
    assert_eq!(
        refusal(
            check,
            1,
            log.append(id, "replica-b", 1, entry.clone()).await
        ),
        Refusal::NotOwner
    );
    assert_eq!(
        refusal(check, 1, log.append(id, "", 1, entry.clone()).await),
        Refusal::NotOwner,
        "{check}: an empty owner"
    );
    assert!(
        read_now(log, id, 0).await.entries.is_empty(),
        "{check}: nothing written"
    );
    assert_eq!(log.append(id, "replica-a", 1, entry.clone()).await, Ok(()));
    // A terminal from someone else is refused as well, and does not seal.
    let terminal = LogEntry::Event(run.run_cancelled());
    assert_eq!(
        refusal(check, 2, log.append(id, "replica-b", 2, terminal).await),
        Refusal::NotOwner
    );
    let batch = read_now(log, id, 0).await;
    assert_eq!(batch.entries, [entry], "{check}");
    assert!(!batch.sealed, "{check}: a refused terminal sealed the log");
}

/// Each of the four terminals seals the log: every later append is
/// [`Refusal::Sealed`], the lease ends (`owned` false, `renew` false, no
/// `claim`, not an orphan), and a read that would wait returns at once.
pub async fn a_terminal_seals(log: &dyn RunLog) {
    let check = "a_terminal_seals";
    let terminals: [fn(&mut RunBuilder) -> Event; 4] = [
        RunBuilder::run_finished,
        |run| run.run_error("provider_error", "The provider failed."),
        RunBuilder::run_cancelled,
        |run| {
            run.event(
                "run.interrupted",
                r#"{"interrupt_id":"int-1","reason":"tool_approval"}"#,
            )
        },
    ];
    for make_terminal in terminals {
        let (info, mut run) = new_run(log, "seal", "owner", LONG).await;
        let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
        let started = LogEntry::Event(run.run_started());
        let terminal = LogEntry::Event(make_terminal(&mut run));
        assert!(terminal.is_terminal());
        assert_eq!(log.append(id, owner, 1, started.clone()).await, Ok(()));
        assert_eq!(log.append(id, owner, 2, LogEntry::Idle).await, Ok(()));
        assert_eq!(
            log.append(id, owner, 3, terminal.clone()).await,
            Ok(()),
            "{check}: the terminal"
        );
        let batch = read_now(log, id, 0).await;
        assert_eq!(
            batch.entries,
            [started, LogEntry::Idle, terminal.clone()],
            "{check}"
        );
        assert!(batch.sealed, "{check}: not sealed after {terminal:?}");
        assert!(!batch.owned, "{check}: still owned after the terminal");

        let later = LogEntry::Event(run.text_started("m"));
        assert_eq!(
            refusal(check, 4, log.append(id, owner, 4, later).await),
            Refusal::Sealed
        );
        let second_terminal = LogEntry::Event(run.run_cancelled());
        assert_eq!(
            refusal(
                check,
                4,
                log.append(id, owner, 4, second_terminal.clone()).await
            ),
            Refusal::Sealed,
            "{check}: a second terminal"
        );
        assert!(
            matches!(
                log.append(id, owner, 3, second_terminal).await,
                Err(LogError::Refused { position: 3, .. })
            ),
            "{check}: a terminal in the terminal's place"
        );
        assert_eq!(
            refusal(check, 4, log.append(id, owner, 4, LogEntry::Idle).await),
            Refusal::Sealed
        );
        assert_eq!(
            log.renew(id, owner, LONG).await,
            Ok(false),
            "{check}: renew after the terminal"
        );
        assert_eq!(
            log.claim(id, "replica-b", LONG).await,
            Ok(false),
            "{check}: claim after the terminal"
        );
        assert!(
            !log.orphans().await.unwrap().contains(&info.run_id),
            "{check}: a sealed run is no orphan"
        );

        let start = Instant::now();
        let batch = log.read(id, 3, 10, Duration::from_secs(10)).await.unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{check}: a read after the terminal waited {:?}",
            start.elapsed()
        );
        assert!(
            batch.entries.is_empty() && batch.sealed,
            "{check}: {batch:?}"
        );
        assert_eq!(
            read_now(log, id, 0).await.entries.len(),
            3,
            "{check}: one terminal, last"
        );
    }
}

/// `read(after, max)` returns the entries at `after + 1`, ... (at most
/// `max`), from the start, from the middle, and nothing past the end.
pub async fn reads_from_anywhere(log: &dyn RunLog) {
    let check = "reads_from_anywhere";
    let (info, mut run) = new_run(log, "read", "owner", LONG).await;
    let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
    let mut entries = vec![LogEntry::Event(run.run_started())];
    entries.push(LogEntry::Event(run.text_started("m")));
    for k in 0..6 {
        entries.push(LogEntry::Event(run.text_delta("m", &format!("part {k}"))));
        if k % 2 == 0 {
            entries.push(LogEntry::Idle);
        }
    }
    entries.push(LogEntry::Event(run.text_finished("m")));
    for (k, entry) in entries.iter().enumerate() {
        assert_eq!(
            log.append(id, owner, k as u64 + 1, entry.clone()).await,
            Ok(())
        );
    }
    let n = entries.len() as u64;
    let read = |after: u64, max: usize| log.read(id, after, max, Duration::ZERO);

    let all = read(0, 1000).await.unwrap();
    assert_eq!(all.entries, entries, "{check}: from the start");
    assert!(!all.sealed && all.owned, "{check}: {all:?}");
    let middle = read(4, 1000).await.unwrap();
    assert_eq!(middle.entries, entries[4..], "{check}: after 4");
    let some = read(4, 3).await.unwrap();
    assert_eq!(some.entries, entries[4..7], "{check}: after 4, at most 3");
    let one = read(n - 1, 1000).await.unwrap();
    assert_eq!(
        one.entries,
        entries[entries.len() - 1..],
        "{check}: the last"
    );
    assert!(
        read(n, 1000).await.unwrap().entries.is_empty(),
        "{check}: at the end"
    );
    assert!(
        read(n + 5, 1000).await.unwrap().entries.is_empty(),
        "{check}: past the end"
    );
    // Reading in pages gives the whole log once.
    let mut paged = Vec::new();
    let mut after = 0;
    loop {
        let page = read(after, 4).await.unwrap();
        if page.entries.is_empty() {
            break;
        }
        assert!(
            page.entries.len() <= 4,
            "{check}: a page of {}",
            page.entries.len()
        );
        after += page.entries.len() as u64;
        paged.extend(page.entries);
    }
    assert_eq!(paged, entries, "{check}: paged");
}

/// A read with a wait returns as soon as an entry arrives (appended
/// concurrently), and empty once the wait has passed without one.
pub async fn reads_wait_for_entries(log: &dyn RunLog) {
    let check = "reads_wait_for_entries";
    let (info, mut run) = new_run(log, "wait", "owner", LONG).await;
    let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
    let first = LogEntry::Event(run.run_started());
    assert_eq!(log.append(id, owner, 1, first.clone()).await, Ok(()));

    // Nothing comes: empty after the wait.
    let wait = Duration::from_millis(300);
    let start = Instant::now();
    let batch = log.read(id, 1, 10, wait).await.unwrap();
    let waited = start.elapsed();
    assert!(
        batch.entries.is_empty() && !batch.sealed && batch.owned,
        "{check}: {batch:?}"
    );
    assert!(
        waited >= wait.mul_f64(0.9),
        "{check}: returned after {waited:?}, before the wait of {wait:?}"
    );
    assert!(
        waited < wait + Duration::from_secs(5),
        "{check}: returned after {waited:?}"
    );

    // An entry is there already: no waiting.
    let start = Instant::now();
    let batch = log.read(id, 0, 10, Duration::from_secs(10)).await.unwrap();
    assert_eq!(batch.entries, [first], "{check}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{check}: waited with an entry there"
    );

    // An entry arrives while the read waits: the read returns with it.
    let second = LogEntry::Event(run.text_started("m"));
    let delay = Duration::from_millis(200);
    let start = Instant::now();
    let reading = log.read(id, 1, 10, Duration::from_secs(20));
    let writing = async {
        tokio::time::sleep(delay).await;
        let appended = log.append(id, owner, 2, second.clone()).await;
        (appended, start.elapsed())
    };
    let (batch, (appended, appended_at)) = join2(reading, writing).await;
    let returned_at = start.elapsed();
    assert_eq!(appended, Ok(()), "{check}");
    let batch = batch.unwrap();
    assert_eq!(
        batch.entries,
        [second],
        "{check}: the waiting read got the new entry"
    );
    assert!(returned_at >= delay, "{check}: returned before the append");
    assert!(
        returned_at < appended_at + Duration::from_secs(3),
        "{check}: returned {:?} after the append",
        returned_at - appended_at
    );

    // A terminal arriving while it waits ends the wait too.
    let terminal = LogEntry::Event(run.run_finished());
    let start = Instant::now();
    let reading = log.read(id, 2, 10, Duration::from_secs(20));
    let writing = async {
        tokio::time::sleep(delay).await;
        log.append(id, owner, 3, terminal.clone()).await
    };
    let (batch, appended) = join2(reading, writing).await;
    assert_eq!(appended, Ok(()), "{check}");
    let batch = batch.unwrap();
    assert_eq!(batch.entries, [terminal], "{check}");
    assert!(batch.sealed, "{check}: {batch:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{check}: {:?}",
        start.elapsed()
    );
}

/// A run id without a log: [`LogError::NotFound`] from every operation on
/// it, `None` from `info`, whether or not the read would wait.
pub async fn unknown_runs_are_not_found(log: &dyn RunLog) {
    let check = "unknown_runs_are_not_found";
    let id = fresh_run_id("unknown");
    let mut run = RunBuilder::new(id.as_str(), "c");
    assert_eq!(
        log.read(&id, 0, 10, Duration::ZERO).await,
        Err(LogError::NotFound),
        "{check}: read"
    );
    let start = Instant::now();
    assert_eq!(
        log.read(&id, 0, 10, Duration::from_secs(10)).await,
        Err(LogError::NotFound),
        "{check}: a waiting read"
    );
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{check}: a read of no run waited"
    );
    assert_eq!(
        log.append(&id, "owner", 1, LogEntry::Event(run.run_started()))
            .await,
        Err(LogError::NotFound),
        "{check}: append"
    );
    assert_eq!(log.info(&id).await, Ok(None), "{check}: info");
    assert_eq!(
        log.renew(&id, "owner", LONG).await,
        Err(LogError::NotFound),
        "{check}: renew"
    );
    assert_eq!(
        log.release(&id, "owner").await,
        Err(LogError::NotFound),
        "{check}: release"
    );
    assert_eq!(
        log.claim(&id, "owner", LONG).await,
        Err(LogError::NotFound),
        "{check}: claim"
    );
    assert!(
        !log.orphans().await.unwrap().contains(&id),
        "{check}: orphans"
    );
    assert_eq!(
        log.request_cancel(&id).await,
        Err(LogError::NotFound),
        "{check}: request_cancel"
    );
    assert_eq!(
        log.cancel_requested(&id).await,
        Err(LogError::NotFound),
        "{check}: cancel_requested"
    );
    assert_eq!(
        log.running_run(&format!("conv-{id}")).await,
        Ok(None),
        "{check}: running_run of a conversation without runs"
    );
    // Appending did not create it.
    assert_eq!(
        log.info(&id).await,
        Ok(None),
        "{check}: info after the append"
    );
}

/// `renew` is the holder's only; `claim` fails while the lease holds and
/// succeeds after `release`; the old owner's appends are then
/// [`Refusal::NotOwner`] and its `renew` false; two racing claims: one
/// wins.
pub async fn leases_renew_release_and_claim(log: &dyn RunLog) {
    let check = "leases_renew_release_and_claim";
    let (info, mut run) = new_run(log, "lease", "replica-a", LONG).await;
    let id = info.run_id.as_str();
    assert_eq!(
        log.append(id, "replica-a", 1, LogEntry::Event(run.run_started()))
            .await,
        Ok(())
    );
    assert_eq!(
        log.renew(id, "replica-a", LONG).await,
        Ok(true),
        "{check}: the holder renews"
    );
    assert_eq!(
        log.renew(id, "replica-b", LONG).await,
        Ok(false),
        "{check}: another renews"
    );
    assert_eq!(
        log.claim(id, "replica-b", LONG).await,
        Ok(false),
        "{check}: claim while it holds"
    );
    assert_eq!(
        log.release(id, "replica-b").await,
        Ok(()),
        "{check}: another releases"
    );
    assert_eq!(
        log.claim(id, "replica-c", LONG).await,
        Ok(false),
        "{check}: still held after another's release"
    );
    assert_eq!(log.info(id).await.unwrap().unwrap().owner, "replica-a");
    assert!(read_now(log, id, 0).await.owned, "{check}: owned");

    assert_eq!(
        log.release(id, "replica-a").await,
        Ok(()),
        "{check}: the holder releases"
    );
    assert!(
        !read_now(log, id, 0).await.owned,
        "{check}: owned after the release"
    );
    assert_eq!(
        log.renew(id, "replica-a", LONG).await,
        Ok(false),
        "{check}: renew after the release"
    );
    assert_eq!(
        log.claim(id, "replica-b", LONG).await,
        Ok(true),
        "{check}: claim after the release"
    );
    assert_eq!(
        log.info(id).await.unwrap().unwrap().owner,
        "replica-b",
        "{check}: the new owner"
    );
    assert!(
        read_now(log, id, 0).await.owned,
        "{check}: owned after the claim"
    );
    assert_eq!(
        log.claim(id, "replica-c", LONG).await,
        Ok(false),
        "{check}: claim of a claimed run"
    );

    let next = LogEntry::Event(run.text_started("m"));
    assert_eq!(
        refusal(check, 2, log.append(id, "replica-a", 2, next.clone()).await),
        Refusal::NotOwner,
        "{check}: the old owner appends"
    );
    assert_eq!(
        log.renew(id, "replica-a", LONG).await,
        Ok(false),
        "{check}: the old owner renews"
    );
    assert_eq!(
        log.append(id, "replica-b", 2, next).await,
        Ok(()),
        "{check}: the new owner appends"
    );
    assert_eq!(
        log.renew(id, "replica-b", LONG).await,
        Ok(true),
        "{check}: the new owner renews"
    );

    // Two replicas claim the same released run at once: exactly one wins.
    assert_eq!(log.release(id, "replica-b").await, Ok(()));
    let (c, d) = join2(
        log.claim(id, "replica-c", LONG),
        log.claim(id, "replica-d", LONG),
    )
    .await;
    let (c, d) = (c.unwrap(), d.unwrap());
    assert!(c ^ d, "{check}: racing claims: {c} and {d}");
    let winner = if c { "replica-c" } else { "replica-d" };
    assert_eq!(
        log.info(id).await.unwrap().unwrap().owner,
        winner,
        "{check}: the winner owns it"
    );
}

/// A lease that is not renewed expires: the run is an orphan, the old
/// owner can neither renew nor append, and a claim takes it.
pub async fn an_expired_lease_can_be_claimed(log: &dyn RunLog) {
    let check = "an_expired_lease_can_be_claimed";
    let (info, mut run) = new_run(log, "expiry", "replica-a", Duration::from_millis(150)).await;
    let id = info.run_id.as_str();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let batch = read_now(log, id, 0).await;
    assert!(!batch.owned && !batch.sealed, "{check}: {batch:?}");
    assert!(
        log.orphans().await.unwrap().contains(&info.run_id),
        "{check}: an orphan"
    );
    assert_eq!(
        log.renew(id, "replica-a", LONG).await,
        Ok(false),
        "{check}: renew of an expired lease"
    );
    let entry = LogEntry::Event(run.run_started());
    assert_eq!(
        refusal(
            check,
            1,
            log.append(id, "replica-a", 1, entry.clone()).await
        ),
        Refusal::NotOwner,
        "{check}: an append under an expired lease"
    );
    assert_eq!(
        log.claim(id, "replica-b", LONG).await,
        Ok(true),
        "{check}: claim"
    );
    assert!(
        !log.orphans().await.unwrap().contains(&info.run_id),
        "{check}: claimed, no orphan"
    );
    assert_eq!(
        log.append(id, "replica-b", 1, entry).await,
        Ok(()),
        "{check}: the claimant appends"
    );
    let closure =
        LogEntry::Event(run.run_error("run_incomplete", "The run ended without a terminal."));
    assert_eq!(
        log.append(id, "replica-b", 2, closure).await,
        Ok(()),
        "{check}: and ends it"
    );
    assert!(read_now(log, id, 0).await.sealed, "{check}");
}

/// `orphans` lists the unsealed runs without a lease (released here), and
/// neither owned nor sealed ones.
pub async fn orphans_are_the_unowned_unsealed_runs(log: &dyn RunLog) {
    let check = "orphans_are_the_unowned_unsealed_runs";
    let (released, _) = new_run(log, "orphan", "replica-a", LONG).await;
    let (owned, _) = new_run(log, "owned", "replica-a", LONG).await;
    let (sealed, mut run) = new_run(log, "sealed", "replica-a", LONG).await;
    let terminal = LogEntry::Event(run.run_cancelled());
    assert_eq!(
        log.append(&sealed.run_id, "replica-a", 1, terminal).await,
        Ok(())
    );
    assert_eq!(log.release(&released.run_id, "replica-a").await, Ok(()));
    // Releasing a sealed run changes nothing.
    assert_eq!(log.release(&sealed.run_id, "replica-a").await, Ok(()));

    let orphans = log.orphans().await.unwrap();
    assert!(
        orphans.contains(&released.run_id),
        "{check}: the released run"
    );
    assert!(!orphans.contains(&owned.run_id), "{check}: an owned run");
    assert!(!orphans.contains(&sealed.run_id), "{check}: a sealed run");

    assert_eq!(
        log.claim(&released.run_id, "replica-b", LONG).await,
        Ok(true)
    );
    assert!(
        !log.orphans().await.unwrap().contains(&released.run_id),
        "{check}: claimed"
    );
}

/// Entries come back exactly as appended: events equal and byte-identical
/// as canonical JSON (escapes, non-ASCII text, namespaces), idle markers as
/// idle markers.
pub async fn entries_round_trip(log: &dyn RunLog) {
    let check = "entries_round_trip";
    let (info, mut run) = new_run(log, "round-trip", "owner", LONG).await;
    let (id, owner) = (info.run_id.as_str(), info.owner.as_str());
    let nasty = "q\"uote\\ back\nnew\ttab\u{1}ctl é 東京 🚀 \u{2028} </script>";
    let events = vec![
        run.run_started(),
        run.reasoning_started("rsn-1"),
        run.reasoning_delta("rsn-1", nasty),
        run.reasoning_finished("rsn-1"),
        run.tool_started(
            "call_task",
            "task",
            r#"{"subagent_type":"coder","n":1.50,"deep":{"a":[1,2,{"b":null}]}}"#,
        ),
        run.namespace_entered("coder", "Coding agent", "call_task"),
        run.at(["call_task"])
            .tool_started("call_2", "read_file", "{}"),
        run.tool_arguments_delta("call_2", "{\"path\":\"/tmp/"),
        run.tool_arguments_delta("call_2", "a\"}"),
        run.tool_finished("call_2", nasty),
        run.root().namespace_exited("coder", "call_task"),
        run.tool_finished("call_task", "done"),
        run.text_started("msg-1"),
        run.text_delta("msg-1", nasty),
        run.text_delta("msg-1", ""),
        run.text_finished("msg-1"),
        run.warning("context_truncated", "Older messages were left out."),
        run.usage_updated(10, 2),
        run.run_finished(),
    ];
    let mut entries = Vec::new();
    for (k, event) in events.iter().enumerate() {
        entries.push(LogEntry::Event(event.clone()));
        if k % 3 == 1 {
            entries.push(LogEntry::Idle);
            entries.push(LogEntry::Idle);
        }
    }
    // The terminal last.
    let terminal = entries.iter().rposition(LogEntry::is_terminal).unwrap();
    let terminal = entries.remove(terminal);
    entries.push(terminal);
    for (k, entry) in entries.iter().enumerate() {
        assert_eq!(
            log.append(id, owner, k as u64 + 1, entry.clone()).await,
            Ok(()),
            "{check}: {k}"
        );
    }
    let batch = read_now(log, id, 0).await;
    assert!(batch.sealed, "{check}");
    assert_eq!(batch.entries.len(), entries.len(), "{check}");
    for (k, (got, sent)) in batch.entries.iter().zip(&entries).enumerate() {
        assert_eq!(got, sent, "{check}: entry {}", k + 1);
        if let (LogEntry::Event(got), LogEntry::Event(sent)) = (got, sent) {
            assert_eq!(
                got.to_json(),
                sent.to_json(),
                "{check}: entry {} as JSON",
                k + 1
            );
        }
    }
}

/// `request_cancel` on an unsealed run records the request (`true`, and
/// `true` again when repeated) without touching the log, and
/// `cancel_requested` says so from then on, the run's terminal included;
/// on a sealed run it is `false` and records nothing. Requests do not leak
/// to other runs.
pub async fn cancel_requests_are_recorded_until_the_terminal(log: &dyn RunLog) {
    let check = "cancel_requests_are_recorded_until_the_terminal";
    let (info, mut run) = new_run(log, "cancel", "replica-a", LONG).await;
    let (other, _) = new_run(log, "cancel-other", "replica-a", LONG).await;
    let id = info.run_id.as_str();
    let first = LogEntry::Event(run.run_started());
    assert_eq!(log.append(id, "replica-a", 1, first.clone()).await, Ok(()));
    assert_eq!(
        log.cancel_requested(id).await,
        Ok(false),
        "{check}: before any request"
    );
    assert_eq!(
        log.request_cancel(id).await,
        Ok(true),
        "{check}: a request on an unsealed run"
    );
    assert_eq!(
        log.cancel_requested(id).await,
        Ok(true),
        "{check}: after the request"
    );
    assert_eq!(
        log.request_cancel(id).await,
        Ok(true),
        "{check}: the same request again"
    );
    assert_eq!(log.cancel_requested(id).await, Ok(true), "{check}: again");
    assert_eq!(
        log.cancel_requested(&other.run_id).await,
        Ok(false),
        "{check}: another run was not asked"
    );
    // The request appends nothing and leaves the owner in charge.
    let batch = read_now(log, id, 0).await;
    assert_eq!(batch.entries, [first], "{check}: the log after the request");
    assert!(batch.owned && !batch.sealed, "{check}: {batch:?}");
    assert_eq!(
        log.renew(id, "replica-a", LONG).await,
        Ok(true),
        "{check}: the owner renews after the request"
    );
    assert_eq!(
        log.append(id, "replica-a", 2, LogEntry::Event(run.run_cancelled()))
            .await,
        Ok(()),
        "{check}: the owner ends the run"
    );
    assert_eq!(
        log.request_cancel(id).await,
        Ok(false),
        "{check}: a request on the sealed run"
    );
    assert_eq!(
        log.cancel_requested(id).await,
        Ok(true),
        "{check}: the request is still known after the terminal"
    );

    // Sealed without a request: refused, and nothing recorded.
    let (sealed, mut run) = new_run(log, "cancel-sealed", "replica-a", LONG).await;
    let terminal = LogEntry::Event(run.run_finished());
    assert_eq!(
        log.append(&sealed.run_id, "replica-a", 1, terminal).await,
        Ok(())
    );
    assert_eq!(
        log.request_cancel(&sealed.run_id).await,
        Ok(false),
        "{check}: a request on a run sealed before"
    );
    assert_eq!(
        log.cancel_requested(&sealed.run_id).await,
        Ok(false),
        "{check}: a refused request is not recorded"
    );
    assert_eq!(
        log.cancel_requested(&other.run_id).await,
        Ok(false),
        "{check}: still not the other run"
    );
}

/// `running_run` names the run last created for a conversation while it is
/// unsealed: `None` before any run and after its terminal (its owner's or a
/// claimant's), a second run replaces the first (whose later terminal does
/// not clear the second), and conversations do not mix.
pub async fn running_run_is_the_newest_unsealed_run(log: &dyn RunLog) {
    let check = "running_run_is_the_newest_unsealed_run";
    let conversation = fresh_run_id("conversation");
    let elsewhere = fresh_run_id("elsewhere");
    let start = async |label: &str, conversation: &str, owner: &str| {
        new_run_in(log, fresh_run_id(label), conversation, owner, LONG).await
    };
    // `running_run` of `conversation` names `expected`'s run (none for `None`).
    let running = async |conversation: &str, expected: Option<&RunInfo>, what: &str| {
        assert_eq!(
            log.running_run(conversation).await.unwrap().as_deref(),
            expected.map(|info| info.run_id.as_str()),
            "{check}: {what}"
        );
    };
    let append = async |info: &RunInfo, owner: &str, position: u64, event: Event| {
        let appended = log.append(&info.run_id, owner, position, LogEntry::Event(event));
        assert_eq!(appended.await, Ok(()), "{check}: {owner} at {position}");
    };
    running(&conversation, None, "no run yet").await;

    let (a, mut run_a) = start("running-a", &conversation, "replica-a").await;
    running(&conversation, Some(&a), "the new run").await;
    let (x, mut run_x) = start("running-x", &elsewhere, "replica-b").await;
    running(&elsewhere, Some(&x), "the other conversation's run").await;
    running(
        &conversation,
        Some(&a),
        "the first conversation keeps its run",
    )
    .await;
    append(&a, "replica-a", 1, run_a.run_started()).await;
    running(&conversation, Some(&a), "after an entry").await;

    // A second run of the conversation replaces the first; the first's
    // terminal then leaves the second in place.
    let (b, mut run_b) = start("running-b", &conversation, "replica-b").await;
    running(&conversation, Some(&b), "the second run replaces the first").await;
    append(&a, "replica-a", 2, run_a.run_finished()).await;
    running(&conversation, Some(&b), "the first run's terminal").await;
    append(&b, "replica-b", 1, run_b.run_cancelled()).await;
    running(&conversation, None, "after the second run's terminal").await;
    running(
        &elsewhere,
        Some(&x),
        "the other conversation's run after the first's ended",
    )
    .await;

    // Ended by a claimant (a takeover): none either.
    let (c, mut run_c) = start("running-c", &conversation, "replica-a").await;
    running(&conversation, Some(&c), "a third run").await;
    assert_eq!(log.release(&c.run_id, "replica-a").await, Ok(()));
    assert_eq!(log.claim(&c.run_id, "replica-b", LONG).await, Ok(true));
    running(&conversation, Some(&c), "claimed, not yet ended").await;
    let closure = run_c.run_error("run_incomplete", "The run ended without a terminal.");
    append(&c, "replica-b", 1, closure).await;
    running(&conversation, None, "after the claimant's terminal").await;

    append(&x, "replica-b", 1, run_x.run_finished()).await;
    running(
        &elsewhere,
        None,
        "the other conversation after its terminal",
    )
    .await;
}

/// `abandon` takes back a run its owner created and never appended to: the
/// run id is free for a new `create`, reads find no run, and the
/// conversation's running run no longer names it. A run with an entry, a
/// sealed run, or one asked for by another replica is left as it is
/// (`false`); an unknown run is [`LogError::NotFound`].
pub async fn abandon_takes_back_an_untouched_run(log: &dyn RunLog) {
    let check = "abandon_takes_back_an_untouched_run";
    let (info, _) = new_run(log, "abandon", "replica-a", LONG).await;
    let run_id = info.run_id.as_str();
    assert_eq!(
        log.abandon(run_id, "replica-b").await,
        Ok(false),
        "{check}: another replica's abandon"
    );
    assert_eq!(
        log.running_run(&info.conversation_id).await,
        Ok(Some(info.run_id.clone())),
        "{check}: still running after a refused abandon"
    );
    assert_eq!(
        log.abandon(run_id, "replica-a").await,
        Ok(true),
        "{check}: the owner's abandon"
    );
    assert_eq!(log.info(run_id).await, Ok(None), "{check}: info after");
    assert_eq!(
        log.read(run_id, 0, 10, Duration::ZERO).await,
        Err(LogError::NotFound),
        "{check}: read after"
    );
    assert_eq!(
        log.running_run(&info.conversation_id).await,
        Ok(None),
        "{check}: running run after"
    );
    assert_eq!(
        log.abandon(run_id, "replica-a").await,
        Err(LogError::NotFound),
        "{check}: abandoned twice"
    );
    // The id is free again: a new incarnation starts empty.
    log.create(info.clone(), LONG)
        .await
        .unwrap_or_else(|e| panic!("{check}: create after abandon: {e:?}"));
    let mut run = RunBuilder::new(run_id, info.conversation_id.as_str());
    assert_eq!(
        read_now(log, run_id, 0).await.entries,
        Vec::new(),
        "{check}: reborn empty"
    );

    // An entry, then a terminal: never abandoned.
    let started = log.append(run_id, "replica-a", 1, LogEntry::Event(run.run_started()));
    assert_eq!(started.await, Ok(()), "{check}: append");
    assert_eq!(
        log.abandon(run_id, "replica-a").await,
        Ok(false),
        "{check}: with an entry"
    );
    let finished = log.append(run_id, "replica-a", 2, LogEntry::Event(run.run_finished()));
    assert_eq!(finished.await, Ok(()), "{check}: terminal");
    assert_eq!(
        log.abandon(run_id, "replica-a").await,
        Ok(false),
        "{check}: sealed"
    );
    assert_eq!(
        read_now(log, run_id, 0).await.entries.len(),
        2,
        "{check}: kept whole"
    );
}
