//! The in-memory run log: the embedded default of `lce serve` (one process,
//! nothing to install). The trait and its types are in `crate::log`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::log::{LogBatch, LogEntry, LogError, LogFuture, Refusal, RunInfo, RunLog};
use tokio::sync::Notify;

/// A run log in memory: every run's entries in a `Vec`, readers woken by a
/// [`Notify`] per run. Sealed logs are dropped `retention` after their
/// terminal (checked whenever a run is created or orphans are listed).
#[derive(Debug)]
pub struct MemoryRunLog {
    runs: Mutex<HashMap<String, Arc<MemoryRun>>>,
    /// Conversation id to the run last created for it, while that run is
    /// unsealed (its terminal takes it out). Locked after `runs` when both
    /// are held, never while a run's state is.
    running: Mutex<HashMap<String, String>>,
    retention: Duration,
}

#[derive(Debug)]
struct MemoryRun {
    state: Mutex<RunState>,
    changed: Notify,
}

#[derive(Debug)]
struct RunState {
    info: RunInfo,
    entries: Vec<LogEntry>,
    sealed_at: Option<Instant>,
    /// `None`: released.
    lease_until: Option<Instant>,
    /// A cancel was requested ([`RunLog::request_cancel`]).
    cancel_requested: bool,
}

impl RunState {
    fn owned(&self, now: Instant) -> bool {
        self.lease_until.is_some_and(|t| t > now)
    }
}

impl Default for MemoryRunLog {
    fn default() -> Self {
        Self::new()
    }
}

/// How long a sealed log is kept when no retention is given: 24 hours.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);

impl MemoryRunLog {
    /// An empty log keeping sealed runs for [`DEFAULT_RETENTION`].
    pub fn new() -> Self {
        Self::with_retention(DEFAULT_RETENTION)
    }

    /// An empty log keeping sealed runs for `retention` after their terminal.
    pub fn with_retention(retention: Duration) -> Self {
        MemoryRunLog {
            runs: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            retention,
        }
    }

    /// How many runs the log holds (sealed ones within retention included).
    pub fn len(&self) -> usize {
        self.runs.lock().map_or(0, |m| m.len())
    }

    /// Whether the log holds no run.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn run(&self, run_id: &str) -> Result<Arc<MemoryRun>, LogError> {
        let runs = self.runs.lock().map_err(|_| LogError::Unavailable)?;
        runs.get(run_id).cloned().ok_or(LogError::NotFound)
    }

    fn expire(&self, runs: &mut HashMap<String, Arc<MemoryRun>>, now: Instant) {
        let retention = self.retention;
        runs.retain(|_, run| {
            run.state.lock().map_or(true, |s| {
                s.sealed_at
                    .is_none_or(|t| now.saturating_duration_since(t) < retention)
            })
        });
    }
}

fn lock(run: &MemoryRun) -> Result<MutexGuard<'_, RunState>, LogError> {
    run.state.lock().map_err(|_| LogError::Unavailable)
}

fn ready<T: Send + 'static>(value: Result<T, LogError>) -> LogFuture<T> {
    Box::pin(std::future::ready(value))
}

impl MemoryRunLog {
    fn create_now(&self, info: RunInfo, lease: Duration) -> Result<(), LogError> {
        let now = Instant::now();
        let mut runs = self.runs.lock().map_err(|_| LogError::Unavailable)?;
        self.expire(&mut runs, now);
        if runs.contains_key(&info.run_id) {
            return Err(LogError::Exists);
        }
        let run_id = info.run_id.clone();
        let conversation_id = info.conversation_id.clone();
        let run = MemoryRun {
            state: Mutex::new(RunState {
                info,
                entries: Vec::new(),
                sealed_at: None,
                lease_until: Some(now + lease),
                cancel_requested: false,
            }),
            changed: Notify::new(),
        };
        runs.insert(run_id.clone(), Arc::new(run));
        self.running
            .lock()
            .map_err(|_| LogError::Unavailable)?
            .insert(conversation_id, run_id);
        Ok(())
    }

    fn abandon_now(&self, run_id: &str, owner: &str) -> Result<bool, LogError> {
        let mut runs = self.runs.lock().map_err(|_| LogError::Unavailable)?;
        let run = runs.get(run_id).cloned().ok_or(LogError::NotFound)?;
        let state = lock(&run)?;
        let untouched = state.entries.is_empty() && state.sealed_at.is_none();
        if !untouched || state.info.owner != owner {
            return Ok(false);
        }
        let conversation_id = state.info.conversation_id.clone();
        runs.remove(run_id);
        drop(state);
        let mut running = self.running.lock().map_err(|_| LogError::Unavailable)?;
        if running.get(&conversation_id).is_some_and(|r| r == run_id) {
            running.remove(&conversation_id);
        }
        drop(running);
        drop(runs);
        // Its readers (if any found it) see it gone.
        run.changed.notify_waiters();
        Ok(true)
    }

    fn append_now(
        &self,
        run_id: &str,
        owner: &str,
        position: u64,
        entries: Vec<LogEntry>,
    ) -> Result<(), LogError> {
        let run = self.run(run_id)?;
        let now = Instant::now();
        let sealed_conversation = {
            let mut state = lock(&run)?;
            let refused = |refusal| Err(LogError::Refused { position, refusal });
            if state.sealed_at.is_some() {
                return refused(Refusal::Sealed);
            }
            if state.info.owner != owner || !state.owned(now) {
                return refused(Refusal::NotOwner);
            }
            if position != state.entries.len() as u64 + 1 {
                return refused(Refusal::OutOfOrder);
            }
            let Some(last) = entries.last() else {
                return Ok(());
            };
            if entries[..entries.len() - 1]
                .iter()
                .any(LogEntry::is_terminal)
            {
                // Nothing may follow a terminal in one batch either.
                return refused(Refusal::Sealed);
            }
            let terminal = last.is_terminal();
            if terminal {
                state.sealed_at = Some(now);
                state.lease_until = None;
            }
            state.entries.extend(entries);
            terminal.then(|| state.info.conversation_id.clone())
        };
        run.changed.notify_waiters();
        if let Some(conversation_id) = sealed_conversation {
            // No longer the conversation's running run, unless a newer run
            // has replaced it there already.
            let mut running = self.running.lock().map_err(|_| LogError::Unavailable)?;
            if running.get(&conversation_id).map(String::as_str) == Some(run_id) {
                running.remove(&conversation_id);
            }
        }
        Ok(())
    }

    fn batch(run: &MemoryRun, after: u64, max: usize) -> Result<LogBatch, LogError> {
        let state = lock(run)?;
        let start = usize::try_from(after)
            .unwrap_or(usize::MAX)
            .min(state.entries.len());
        let end = start.saturating_add(max).min(state.entries.len());
        Ok(LogBatch {
            entries: state.entries[start..end].to_vec(),
            sealed: state.sealed_at.is_some(),
            owned: state.owned(Instant::now()),
        })
    }
}

impl RunLog for MemoryRunLog {
    fn create(&self, info: RunInfo, lease: Duration) -> LogFuture<()> {
        ready(self.create_now(info, lease))
    }

    fn append(&self, run_id: &str, owner: &str, position: u64, entry: LogEntry) -> LogFuture<()> {
        ready(self.append_now(run_id, owner, position, vec![entry]))
    }

    /// Under one lock: whole or not at all.
    fn append_batch(&self, run: &str, by: &str, at: u64, batch: Vec<LogEntry>) -> LogFuture<()> {
        ready(self.append_now(run, by, at, batch))
    }

    fn read(&self, run_id: &str, after: u64, max: usize, wait: Duration) -> LogFuture<LogBatch> {
        let run = match self.run(run_id) {
            Ok(run) => run,
            Err(e) => return ready(Err(e)),
        };
        let max = max.max(1);
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                // Register before looking, so an append between the look and
                // the wait still wakes us.
                let mut notified = std::pin::pin!(run.changed.notified());
                notified.as_mut().enable();
                let batch = Self::batch(&run, after, max)?;
                if !batch.entries.is_empty() || batch.sealed {
                    return Ok(batch);
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return Self::batch(&run, after, max);
                }
            }
        })
    }

    fn info(&self, run_id: &str) -> LogFuture<Option<RunInfo>> {
        let info = match self.run(run_id) {
            Ok(run) => lock(&run).map(|s| Some(s.info.clone())),
            Err(LogError::NotFound) => Ok(None),
            Err(e) => Err(e),
        };
        ready(info)
    }

    fn renew(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<bool> {
        let renewed = self.run(run_id).and_then(|run| {
            let mut state = lock(&run)?;
            let now = Instant::now();
            let holds = state.sealed_at.is_none() && state.info.owner == owner && state.owned(now);
            if holds {
                state.lease_until = Some(now + lease);
            }
            Ok(holds)
        });
        ready(renewed)
    }

    fn release(&self, run_id: &str, owner: &str) -> LogFuture<()> {
        let released = self.run(run_id).and_then(|run| {
            let mut state = lock(&run)?;
            if state.info.owner == owner {
                state.lease_until = None;
            }
            drop(state);
            run.changed.notify_waiters();
            Ok(())
        });
        ready(released)
    }

    fn abandon(&self, run_id: &str, owner: &str) -> LogFuture<bool> {
        ready(self.abandon_now(run_id, owner))
    }

    fn claim(&self, run_id: &str, claimant: &str, lease: Duration) -> LogFuture<bool> {
        let claimed = self.run(run_id).and_then(|run| {
            let mut state = lock(&run)?;
            let now = Instant::now();
            if state.sealed_at.is_some() || state.owned(now) {
                return Ok(false);
            }
            state.info.owner = claimant.to_owned();
            state.lease_until = Some(now + lease);
            Ok(true)
        });
        ready(claimed)
    }

    fn orphans(&self) -> LogFuture<Vec<String>> {
        let orphans = self
            .runs
            .lock()
            .map_err(|_| LogError::Unavailable)
            .map(|mut runs| {
                let now = Instant::now();
                self.expire(&mut runs, now);
                runs.iter()
                    .filter(|(_, run)| {
                        run.state
                            .lock()
                            .is_ok_and(|s| s.sealed_at.is_none() && !s.owned(now))
                    })
                    .map(|(id, _)| id.clone())
                    .collect()
            });
        ready(orphans)
    }

    fn request_cancel(&self, run_id: &str) -> LogFuture<bool> {
        let requested = self.run(run_id).and_then(|run| {
            let mut state = lock(&run)?;
            if state.sealed_at.is_some() {
                return Ok(false);
            }
            state.cancel_requested = true;
            Ok(true)
        });
        ready(requested)
    }

    fn cancel_requested(&self, run_id: &str) -> LogFuture<bool> {
        let requested = self
            .run(run_id)
            .and_then(|run| lock(&run).map(|s| s.cancel_requested));
        ready(requested)
    }

    fn running_run(&self, conversation_id: &str) -> LogFuture<Option<String>> {
        let found = self
            .running
            .lock()
            .map_err(|_| LogError::Unavailable)
            .map(|running| running.get(conversation_id).cloned());
        let running = found.and_then(|run_id| {
            let Some(run_id) = run_id else {
                return Ok(None);
            };
            // Its terminal takes it out of the map; checked again all the
            // same, as the map and the run are not locked together.
            match self.run(&run_id) {
                Ok(run) => Ok(lock(&run)?.sealed_at.is_none().then_some(run_id)),
                Err(LogError::NotFound) => Ok(None),
                Err(e) => Err(e),
            }
        });
        ready(running)
    }
}
