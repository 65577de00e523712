//! [`LocalTail`]: a [`RunLog`] that serves the entries this process just
//! appended to its readers from memory, and everything else from the log
//! it wraps.
//!
//! On a replica that owns a run, every subscriber of that run otherwise
//! reads each entry back from the engine it was just written to: a round
//! trip, the engine's reply parsed, the entry's JSON parsed again. The
//! entries of an acknowledged append are what the log holds at those
//! positions (a log is append-only: a position once written keeps its
//! entry), so a reader on the same replica may take them from memory: the
//! same entries, the same bytes on every wire, without the engine. Everything this handle did not append (other
//! replicas' runs, positions before the kept window, a run after a failed
//! append) is read from the wrapped log as before.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::log::{LogBatch, LogEntry, LogFuture, Renewal, RunInfo, RunLog};

/// How many bytes of a run's last acknowledged entries (their canonical
/// JSON) [`LocalTail`] keeps, and at least the last entry: a reader
/// further behind reads from the wrapped log.
pub const LOCAL_TAIL_BYTES: usize = 256 * 1024;

/// How many runs [`LocalTail`] keeps a tail of at once; beyond, new runs
/// are read from the wrapped log only. With [`LOCAL_TAIL_BYTES`], what a
/// replica holds is bounded (64 MiB, and one entry per run).
pub const LOCAL_TAIL_RUNS: usize = 256;

/// The longest an ended run's tail is kept (a shorter retention shortens
/// it, see [`LocalTail::new`]): its live readers read the end at once,
/// later ones from the wrapped log.
pub const SEALED_KEPT: Duration = Duration::from_secs(1);

/// The longest an unended run's tail is kept after its last append (a
/// shorter retention shortens it as for [`SEALED_KEPT`]): the tail of a
/// run whose writer went quiet, or went away without a word, makes room
/// for others; its readers read from the wrapped log meanwhile.
pub const IDLE_KEPT: Duration = Duration::from_secs(60);

/// A [`RunLog`] that keeps the last acknowledged entries of the runs
/// appended through it ([`LOCAL_TAIL_BYTES`] per run, for at most
/// [`LOCAL_TAIL_RUNS`] runs) and answers reads of them from memory; every
/// other call goes to the wrapped log unchanged. A read that would wait
/// for the live tail wakes as soon as an append through this handle is
/// acknowledged.
///
/// The bytes a subscriber receives do not change: an entry kept is the
/// entry the wrapped log acknowledged at that position. A failed append
/// (refused, or of unknown outcome) drops the run's tail, as do
/// [`RunLog::create`], [`RunLog::claim`], [`RunLog::release`] and
/// [`RunLog::abandon`]; an ended run's tail is dropped after
/// [`SEALED_KEPT`] or a quarter of the retention, whichever is shorter, so
/// that no read is answered from memory for a run its log no longer holds,
/// and an unended run's [`IDLE_KEPT`] (or that quarter) after its last
/// append.
pub struct LocalTail {
    inner: Arc<dyn RunLog>,
    state: Arc<Tails>,
}

impl std::fmt::Debug for LocalTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTail")
            .field("runs", &self.state.lock().len())
            .finish_non_exhaustive()
    }
}

/// The tails, by run id.
struct Tails {
    runs: Mutex<HashMap<String, Tail>>,
    sealed_kept: Duration,
    idle_kept: Duration,
}

/// One run's last acknowledged entries.
struct Tail {
    /// The position of `entries[0]`.
    first: u64,
    /// Each entry kept, with its size.
    entries: VecDeque<(LogEntry, usize)>,
    /// The sum of their sizes.
    bytes: usize,
    /// When the terminal was acknowledged.
    sealed_at: Option<Instant>,
    /// When the last append was acknowledged.
    appended_at: Instant,
    /// Woken at each acknowledged append.
    appended: Arc<Notify>,
}

impl Tail {
    /// The position after the last entry kept.
    fn next(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    fn fresh(&self, kept: (Duration, Duration), now: Instant) -> bool {
        let (sealed_kept, idle_kept) = kept;
        match self.sealed_at {
            Some(at) => now.duration_since(at) < sealed_kept,
            None => now.duration_since(self.appended_at) < idle_kept,
        }
    }
}

/// What a read found in memory.
enum Found {
    /// The batch to answer.
    Batch(LogBatch),
    /// The reader is at the live end: wait on this (or the wrapped log).
    Wait(Arc<Notify>),
    /// Not in memory: ask the wrapped log.
    Elsewhere,
}

impl Tails {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tail>> {
        // A panic while holding the lock leaves whole entries only.
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn kept(&self) -> (Duration, Duration) {
        (self.sealed_kept, self.idle_kept)
    }

    fn forget(&self, run_id: &str) {
        if let Some(tail) = self.lock().remove(run_id) {
            tail.appended.notify_waiters();
        }
    }

    /// Records `entries`, acknowledged at `position` on.
    fn record(&self, run_id: &str, position: u64, entries: Vec<LogEntry>) {
        if entries.is_empty() {
            // An empty append stores nothing, and says nothing of where
            // the log ends.
            return;
        }
        let now = Instant::now();
        let mut runs = self.lock();
        if !runs.contains_key(run_id) {
            runs.retain(|_, t| t.fresh(self.kept(), now));
            if runs.len() >= LOCAL_TAIL_RUNS {
                return;
            }
        }
        let tail = runs.entry(run_id.to_owned()).or_insert_with(|| Tail {
            first: position,
            entries: VecDeque::new(),
            bytes: 0,
            sealed_at: None,
            appended_at: now,
            appended: Arc::new(Notify::new()),
        });
        if tail.next() != position || tail.sealed_at.is_some() {
            // Not contiguous with what is kept (an append this handle did
            // not see acknowledged came between): start again from here.
            tail.first = position;
            tail.entries.clear();
            tail.bytes = 0;
            tail.sealed_at = None;
        }
        for entry in entries {
            if entry.is_terminal() {
                tail.sealed_at = Some(now);
            }
            let size = entry_size(&entry);
            tail.entries.push_back((entry, size));
            tail.bytes += size;
        }
        tail.appended_at = now;
        while tail.bytes > LOCAL_TAIL_BYTES && tail.entries.len() > 1 {
            if let Some((_, size)) = tail.entries.pop_front() {
                tail.bytes -= size;
                tail.first += 1;
            }
        }
        tail.appended.notify_waiters();
    }

    /// The entries after `after` (at most `max`) if memory has them.
    fn find(&self, run_id: &str, after: u64, max: usize) -> Found {
        let now = Instant::now();
        let mut runs = self.lock();
        let Some(tail) = runs.get(run_id) else {
            return Found::Elsewhere;
        };
        if !tail.fresh(self.kept(), now) {
            runs.remove(run_id);
            return Found::Elsewhere;
        }
        let next = tail.next();
        if after.saturating_add(1) < tail.first || after > next.saturating_sub(1) {
            return Found::Elsewhere;
        }
        if after + 1 == next {
            return match tail.sealed_at {
                Some(_) => Found::Batch(LogBatch {
                    entries: Vec::new(),
                    sealed: true,
                    owned: false,
                }),
                None => Found::Wait(Arc::clone(&tail.appended)),
            };
        }
        let skip = usize::try_from(after + 1 - tail.first).unwrap_or(usize::MAX);
        let entries: Vec<LogEntry> = tail
            .entries
            .iter()
            .skip(skip)
            .take(max.max(1))
            .map(|(entry, _)| entry.clone())
            .collect();
        Found::Batch(LogBatch {
            entries,
            sealed: tail.sealed_at.is_some(),
            owned: tail.sealed_at.is_none(),
        })
    }
}

/// The bytes an entry holds: its event's canonical JSON.
fn entry_size(entry: &LogEntry) -> usize {
    let json = match entry {
        LogEntry::Event(event) => lce_validate::canonical_json_len(event),
        _ => 0,
    };
    std::mem::size_of::<LogEntry>() + json
}

impl LocalTail {
    /// Wraps `inner`. `retention`: how long the wrapped log keeps an ended
    /// run (an ended run's tail is kept at most a quarter of it).
    pub fn new(inner: Arc<dyn RunLog>, retention: Duration) -> Self {
        LocalTail {
            inner,
            state: Arc::new(Tails {
                runs: Mutex::new(HashMap::new()),
                sealed_kept: SEALED_KEPT.min(retention / 4),
                idle_kept: IDLE_KEPT.min(retention / 4),
            }),
        }
    }

    /// How many runs have a tail in memory now.
    pub fn runs_kept(&self) -> usize {
        self.state.lock().len()
    }

    /// `call` (a renewal), and the run's tail dropped unless `held` says the
    /// lease is still this handle's: the run may be appended elsewhere.
    fn unless_held<T: Send + 'static>(
        &self,
        run_id: &str,
        call: LogFuture<T>,
        held: fn(&T) -> bool,
    ) -> LogFuture<T> {
        let (state, run_id) = (Arc::clone(&self.state), run_id.to_owned());
        Box::pin(async move {
            let answer = call.await;
            if !answer.as_ref().is_ok_and(held) {
                state.forget(&run_id);
            }
            answer
        })
    }

    /// `call` after the run's tail is dropped.
    fn forgetting<T: Send + 'static>(&self, run_id: &str, call: LogFuture<T>) -> LogFuture<T> {
        self.state.forget(run_id);
        let (state, run_id) = (Arc::clone(&self.state), run_id.to_owned());
        Box::pin(async move {
            let answer = call.await;
            state.forget(&run_id);
            answer
        })
    }
}

impl RunLog for LocalTail {
    fn create(&self, info: RunInfo, lease: Duration) -> LogFuture<()> {
        let run_id = info.run_id.clone();
        let call = self.inner.create(info, lease);
        self.forgetting(&run_id, call)
    }

    fn append(&self, run_id: &str, owner: &str, position: u64, entry: LogEntry) -> LogFuture<()> {
        self.append_batch(run_id, owner, position, vec![entry])
    }

    /// Appends through the wrapped log and keeps what it acknowledged.
    fn append_batch(
        &self,
        run_id: &str,
        owner: &str,
        position: u64,
        entries: Vec<LogEntry>,
    ) -> LogFuture<()> {
        let kept = entries.clone();
        let append = self.inner.append_batch(run_id, owner, position, entries);
        let (state, run_id) = (Arc::clone(&self.state), run_id.to_owned());
        Box::pin(async move {
            match append.await {
                Ok(()) => {
                    state.record(&run_id, position, kept);
                    Ok(())
                }
                Err(e) => {
                    state.forget(&run_id);
                    Err(e)
                }
            }
        })
    }

    fn read(&self, run_id: &str, after: u64, max: usize, wait: Duration) -> LogFuture<LogBatch> {
        let (inner, state, run_id) = (
            Arc::clone(&self.inner),
            Arc::clone(&self.state),
            run_id.to_owned(),
        );
        Box::pin(async move {
            let until = Instant::now().checked_add(wait);
            loop {
                let appended = match state.find(&run_id, after, max) {
                    Found::Batch(batch) => return Ok(batch),
                    Found::Elsewhere => return inner.read(&run_id, after, max, wait).await,
                    Found::Wait(appended) => appended,
                };
                // Registered before looking again, so that an append
                // acknowledged in between is not missed.
                let mut woken = std::pin::pin!(appended.notified());
                woken.as_mut().enable();
                if !matches!(state.find(&run_id, after, max), Found::Wait(_)) {
                    continue;
                }
                let left = until.map_or(wait, |u| u.saturating_duration_since(Instant::now()));
                // Woken by the next append here, or at the end of the wait
                // the wrapped log answers (whether the run is still owned;
                // entries another replica appended, if it took the run
                // over without this handle hearing of it).
                if tokio::time::timeout(left, woken).await.is_err() {
                    return inner.read(&run_id, after, max, Duration::ZERO).await;
                }
            }
        })
    }

    fn info(&self, run_id: &str) -> LogFuture<Option<RunInfo>> {
        self.inner.info(run_id)
    }

    fn renew(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<bool> {
        let call = self.inner.renew(run_id, owner, lease);
        self.unless_held(run_id, call, |held| *held)
    }

    fn renew_and_check(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<Renewal> {
        let call = self.inner.renew_and_check(run_id, owner, lease);
        self.unless_held(run_id, call, |renewal| renewal.held)
    }

    fn cancel_notice(&self, run_id: &str) -> Option<LogFuture<()>> {
        self.inner.cancel_notice(run_id)
    }

    fn release(&self, run_id: &str, owner: &str) -> LogFuture<()> {
        let call = self.inner.release(run_id, owner);
        self.forgetting(run_id, call)
    }

    fn abandon(&self, run_id: &str, owner: &str) -> LogFuture<bool> {
        let call = self.inner.abandon(run_id, owner);
        self.forgetting(run_id, call)
    }

    fn claim(&self, run_id: &str, claimant: &str, lease: Duration) -> LogFuture<bool> {
        let call = self.inner.claim(run_id, claimant, lease);
        self.forgetting(run_id, call)
    }

    fn orphans(&self) -> LogFuture<Vec<String>> {
        self.inner.orphans()
    }

    fn request_cancel(&self, run_id: &str) -> LogFuture<bool> {
        self.inner.request_cancel(run_id)
    }

    fn cancel_requested(&self, run_id: &str) -> LogFuture<bool> {
        self.inner.cancel_requested(run_id)
    }

    fn running_run(&self, conversation_id: &str) -> LogFuture<Option<String>> {
        self.inner.running_run(conversation_id)
    }

    fn durable(&self) -> bool {
        self.inner.durable()
    }
}
