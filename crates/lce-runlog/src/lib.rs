//! `lce-runlog`: the run log of a gateway (`gateway.md`), the layer between
//! the chain (`lce-stream`) and the gateway (`lce-gateway`).
//!
//! - [`RunLog`]: the durable, ordered log of each run's coordinated events,
//!   with leases, cancel requests and a conversation index, and its
//!   vocabulary ([`LogEntry`], [`RunInfo`], [`LogBatch`],
//!   [`LogError`], [`Refusal`], [`LogFuture`]). [`MemoryRunLog`] is the
//!   embedded implementation (one process); `lce-redis` implements it on
//!   Redis Streams for replicas.
//! - [`Logged`] (built by [`RunLogStreamExt::logged`]): the future that
//!   writes a coordinated run to the log, entry batches in order, each
//!   acknowledged before anything reads it (write before send), and
//!   resolves to the run's [`LoggedRun`].
//! - [`Subscription`]: reads a run back from the log and encodes it with
//!   SSE ids ([`FrameId`]), from its start or after any frame, then follows
//!   the live tail; [`end_orphan`] ends a run whose owner died (D9).
//! - [`LocalTail`]: a log wrapper that answers a replica's readers from
//!   memory with the entries it just appended (acknowledged), the rest
//!   from the wrapped log: subscribers of a run owned here skip the engine.
//! - [`Fanout`]: one shared reader per run and encoding on a replica, so
//!   that an entry is read and encoded once whatever the number of
//!   subscribers (guarantee 8), each subscriber's bytes those of a lone
//!   [`Subscription`].
//!
//! May depend on: `lce-types`, `lce-core`, `lce-wire`, `lce-stream` (the
//! coordinator's closure terminal, the chain's items), `lce-validate` (an
//! event's canonical JSON size, for the local tail's bound), `futures`, `tokio`
//! (timers, `Notify`, and the spawn of a shared reader's task), `bytes`,
//! `memchr`, `pin-project-lite`,
//! `thiserror`, `tracing`, `metrics` (the facade: `lce_log_append_seconds`,
//! `lce_log_errors_total{kind}`, `lce_takeovers_total`; a host's recorder
//! gets them). Not on any HTTP stack or engine client: the Redis
//! log lives in `lce-redis`, serving in `lce-gateway`.

mod fanout;
mod local_tail;
mod log;
mod logged;
mod memory;
mod subscription;

pub use fanout::{Fanout, FrameStream, KEPT_BYTES, TAIL_BYTES, WINDOW_BYTES};
pub use local_tail::{IDLE_KEPT, LOCAL_TAIL_BYTES, LOCAL_TAIL_RUNS, LocalTail, SEALED_KEPT};
pub use log::{LogBatch, LogEntry, LogError, LogFuture, Refusal, Renewal, RunInfo, RunLog};
pub use logged::{LogWriter, Logged, LoggedRun, MAX_BATCH, RunLogStreamExt, WriteError};
pub use memory::{DEFAULT_RETENTION, MemoryRunLog};
pub use subscription::{
    FrameId, MalformedFrameId, SUBSCRIBER_BYTES, SubscribeError, Subscription, Takeover, end_orphan,
};
