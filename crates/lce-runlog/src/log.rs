//! The run log (`gateway.md`): an ordered, append-only log per run of the
//! coordinator's output, from which every subscriber's bytes are encoded.
//!
//! A log is a sequence of [`LogEntry`]s at positions 1, 2, 3, ... Each is
//! either a canonical event the coordinator forwarded or an [`LogEntry::Idle`]
//! marker: the point where the upstream had nothing ready, where a live
//! encoder releases held tool starts (D13a). Encoding the entries in order
//! (an event with `encode_frame`, a marker with `on_idle`) gives the same
//! bytes on every replica, live or replayed.
//!
//! Ownership: the replica that creates a run's log owns it under a lease it
//! renews; only the owner appends. A run whose lease expired unsealed (its
//! owner died) is claimed by another replica, which appends the closure
//! terminal (D9). The first terminal appended seals the log: every later
//! append is refused, so a run has exactly one terminal whatever races.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lce_types::Event;

/// The future a [`RunLog`] returns: boxed, `Send`, owning what it needs.
pub type LogFuture<T> = Pin<Box<dyn Future<Output = Result<T, LogError>> + Send + 'static>>;

/// What a lease renewal learnt ([`RunLog::renew_and_check`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Renewal {
    /// The owner still holds the lease (as [`RunLog::renew`] answers).
    pub held: bool,
    /// A cancel of the run was requested (as [`RunLog::cancel_requested`]
    /// answers).
    pub cancel_requested: bool,
}

impl Renewal {
    /// A renewal's answer: whether the lease is held, whether a cancel was
    /// requested.
    pub fn new(held: bool, cancel_requested: bool) -> Self {
        Renewal {
            held,
            cancel_requested,
        }
    }
}

/// One entry of a run log.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum LogEntry {
    /// A canonical event, as the coordinator forwarded it.
    Event(Event),
    /// The upstream had no event ready here (D13a): encoders release what
    /// they may release while the run waits.
    Idle,
}

impl LogEntry {
    /// Whether this entry is a run terminal (it seals the log).
    pub fn is_terminal(&self) -> bool {
        matches!(self, LogEntry::Event(e) if e.event_type().is_terminal())
    }
}

/// What a log keeps about a run beside its entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunInfo {
    /// The run id (the log's key).
    pub run_id: String,
    /// The conversation the run belongs to.
    pub conversation_id: String,
    /// The replica that owns the run (appends to it) while its lease holds.
    pub owner: String,
    /// A random value the creator makes for this incarnation of the run
    /// id: read tokens cover it, so a token never opens a later run that
    /// reuses the id after this one's log expired. May be empty for a log
    /// whose creator made none.
    pub nonce: String,
}

/// What one [`RunLog::read`] returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LogBatch {
    /// The entries, in order, at positions `after + 1`, `after + 2`, ...
    pub entries: Vec<LogEntry>,
    /// The log holds a terminal: nothing follows the last entry.
    pub sealed: bool,
    /// The owner's lease holds: someone is still writing this run.
    pub owned: bool,
}

/// Why an append was refused.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The log already holds a terminal.
    Sealed,
    /// The position is not the one after the last entry.
    OutOfOrder,
    /// The writer does not hold the run's lease (another replica took over).
    NotOwner,
}

impl Refusal {
    /// A short name: `sealed`, `out_of_order` or `not_owner`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Sealed => "sealed",
            Refusal::OutOfOrder => "out_of_order",
            Refusal::NotOwner => "not_owner",
        }
    }
}

/// A run log operation that did not happen. Only the kind is kept: an
/// engine's own error text may name hosts or keys and never reaches a
/// client or a log line.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// A run with this id already has a log.
    #[error("a run with this id already has a log")]
    Exists,
    /// No log has this run id (never created, or expired).
    #[error("no run with this id")]
    NotFound,
    /// The append at `position` was refused.
    #[error("the run log refused the append at position {position} ({})", .refusal.as_str())]
    Refused {
        /// The position the writer asked for.
        position: u64,
        /// Why.
        refusal: Refusal,
    },
    /// An entry stored at `position` is not a valid entry.
    #[error("the run log entry at position {position} is not valid")]
    Corrupt {
        /// Where.
        position: u64,
    },
    /// The engine could not be reached or failed.
    #[error("the run log engine is unavailable")]
    Unavailable,
}

/// An ordered, append-only log per run (see the module documentation).
///
/// Positions are 1-based. Implementations: [`MemoryRunLog`](crate::MemoryRunLog) (this crate,
/// one process) and `RedisRunLog` (`lce-redis`, Redis Streams, shared by
/// replicas).
pub trait RunLog: Send + Sync + 'static {
    /// Creates the empty log of a new run, owned by `info.owner` for
    /// `lease`. [`LogError::Exists`] if a log with this run id exists.
    fn create(&self, info: RunInfo, lease: Duration) -> LogFuture<()>;

    /// Appends `entry` at `position` (one after the last entry) as `owner`.
    /// Resolves once the engine has acknowledged it: only then may any
    /// subscriber see it. A terminal seals the log and starts its retention.
    fn append(&self, run_id: &str, owner: &str, position: u64, entry: LogEntry) -> LogFuture<()>;

    /// Appends `entries` at `position`, `position + 1`, ... as `owner`:
    /// whole or not at all, as one acknowledgement. A writer that keeps
    /// several entries in flight sends them as one batch, not as parallel
    /// appends (which an engine may receive out of order). Nothing may
    /// follow a terminal in a batch. The default appends them one by one,
    /// each after the one before is acknowledged (not atomic: the logs lce
    /// ships override it).
    fn append_batch(
        &self,
        run_id: &str,
        owner: &str,
        position: u64,
        entries: Vec<LogEntry>,
    ) -> LogFuture<()> {
        let appends: Vec<_> = entries
            .into_iter()
            .zip(position..)
            .map(|(entry, at)| self.append(run_id, owner, at, entry))
            .collect();
        Box::pin(async move {
            for append in appends {
                append.await?;
            }
            Ok(())
        })
    }

    /// The entries after position `after` (at most `max`), waiting up to
    /// `wait` for one when there are none yet. [`LogError::NotFound`] for an
    /// unknown run.
    fn read(&self, run_id: &str, after: u64, max: usize, wait: Duration) -> LogFuture<LogBatch>;

    /// What the log keeps about the run, if it exists.
    fn info(&self, run_id: &str) -> LogFuture<Option<RunInfo>>;

    /// Extends `owner`'s lease by `lease`; `false` if `owner` no longer holds
    /// it (the run was sealed or claimed by another replica).
    fn renew(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<bool>;

    /// [`RunLog::renew`], and whether a cancel was requested, in one step
    /// where the log can (the Redis log's renewal script answers both).
    /// By default, a renewal then [`RunLog::cancel_requested`].
    fn renew_and_check(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<Renewal> {
        let renew = self.renew(run_id, owner, lease);
        let cancel = self.cancel_requested(run_id);
        Box::pin(async move {
            let held = renew.await?;
            let cancel_requested = cancel.await.unwrap_or(false);
            Ok(Renewal::new(held, cancel_requested))
        })
    }

    /// A future that resolves once a cancel of `run_id` has been requested
    /// ([`RunLog::request_cancel`], on any replica), as soon as this handle
    /// hears of it, for a log that announces cancels: the run's owner waits
    /// on it instead of asking [`RunLog::cancel_requested`] every second.
    /// `None` (the default) when the log does not announce them. The Redis
    /// log asks the engine once at the start and again only after its
    /// subscription came back (a notice may have been lost meanwhile).
    fn cancel_notice(&self, run_id: &str) -> Option<LogFuture<()>> {
        let _ = run_id;
        None
    }

    /// Gives up `owner`'s lease at once (a replica shutting down), so that
    /// another replica may claim the run.
    fn release(&self, run_id: &str, owner: &str) -> LogFuture<()>;

    /// Takes back a log `owner` created and never appended to, as if it
    /// had never been created: the run id is free again, and the
    /// conversation's running run no longer names it. A gateway reserves a
    /// run id with [`RunLog::create`] before it calls the upstream, and
    /// abandons it when the upstream gives no run. `false` (nothing done)
    /// when the log holds an entry, is sealed, or is owned by another
    /// replica; [`LogError::NotFound`] for an unknown run.
    fn abandon(&self, run_id: &str, owner: &str) -> LogFuture<bool>;

    /// Takes the lease of an unsealed run whose lease has expired; `true` if
    /// `claimant` now owns it (and must end it).
    fn claim(&self, run_id: &str, claimant: &str, lease: Duration) -> LogFuture<bool>;

    /// Run ids whose lease may have expired while unsealed: candidates for
    /// [`RunLog::claim`] (a hint; `claim` decides).
    fn orphans(&self) -> LogFuture<Vec<String>>;

    /// Records a request that the owner of `run_id` cancel it (the explicit
    /// cancel route, which may run on any replica; the owner learns of it
    /// through [`RunLog::cancel_requested`]). `true` if the run is unsealed:
    /// the request is recorded (idempotent: a request for a run already
    /// asked to cancel is `true` again); `false` if the log already holds a
    /// terminal (nothing is recorded). Appends nothing to the log.
    /// [`LogError::NotFound`] for an unknown run.
    fn request_cancel(&self, run_id: &str) -> LogFuture<bool>;

    /// Whether a cancel was ever requested for `run_id` by
    /// [`RunLog::request_cancel`] (its owner polls this while the run goes
    /// on; the answer stays `true` once the run is sealed).
    /// [`LogError::NotFound`] for an unknown run.
    fn cancel_requested(&self, run_id: &str) -> LogFuture<bool>;

    /// The run of `conversation_id` that was created last, while it is
    /// unsealed: what the cancel route cancels. `None` when that run is
    /// sealed (whoever appended its terminal, a takeover included), when no
    /// run of the conversation is known, or when its log is gone. A newer
    /// run of the same conversation replaces an older one, which is not
    /// named again even while it is unsealed.
    fn running_run(&self, conversation_id: &str) -> LogFuture<Option<String>>;

    /// Whether the log outlives this process (an engine other replicas
    /// share): a replica shutting down then releases its runs for another
    /// to end, instead of ending them itself. The default (`false`) suits a
    /// log in this process's memory.
    fn durable(&self) -> bool {
        false
    }
}
