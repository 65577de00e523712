//! `lce-redis`: lce's extension points on Redis, shared by every replica of
//! a gateway (`gateway.md`).
//!
//! - [`RedisRunLog`]: `lce_runlog::RunLog` on Redis Streams. One stream per
//!   run whose entry ids are the log positions, a hash of what the log keeps
//!   about the run, a lease key; every change that must be atomic (create,
//!   append with its owner, order and seal checks, renew, release, claim) is
//!   one Lua script, or one transaction led by a script, over that run's
//!   keys only, so the engine decides every race. Configured with
//!   [`RedisLogOptions`].
//! - [`RedisStore`]: `lce_core::ThreadStore` whose revisions count up per
//!   conversation in Redis, so they survive restarts and every replica
//!   shares them.
//!
//! # Keys
//!
//! With the default prefix `lce`, for a run `R` and a conversation `C`:
//!
//! | key | type | what |
//! |---|---|---|
//! | `lce:{R}:log` | stream | the entries; entry id `<position>-0`, one field: `event` (canonical JSON) or `idle` |
//! | `lce:{R}:meta` | hash | `conversation_id`, `owner`, `sealed` (`0`/`1`), `last` (the last position), `cancel` (`1` once a cancel was requested), `confirmed` (with [`RedisLogOptions::with_replicas`]: the last position replicas hold, which readers see up to) |
//! | `lce:{R}:lease` | string | the owner's id, expiring (`PX`) when the lease does |
//! | `lce:{R}:fenced` | stream | the log, moved aside for the instant of a refused append's transaction; never there between operations |
//! | `lce:appended` | pub/sub channel | one server: every append publishes its run id here, to wake the reads waiting on the run; a cancel request publishes `!cancel:<run id>` |
//! | `lce:{R}:appended` | shard channel | a Cluster: the same, `SPUBLISH`ed in the run's slot |
//! | `lce:active:{0}` ... `lce:active:{15}` | sorted sets | unsealed runs, each in the part its id hashes to, scored by their lease deadline in ms (a hint for [`RunLog::orphans`](lce_runlog::RunLog::orphans)); each expires the retention after the last run recorded in it |
//! | `lce:{conv:C}:running` | string | the id of the run last created for the conversation, while it is unsealed ([`RunLog::running_run`](lce_runlog::RunLog::running_run)); expires after the retention, refreshed by each renewal |
//! | `lce:{thread:C}:rev` | string | the conversation's last revision (`INCR`); expires [`RedisLogOptions::thread_retention`] (30 days) after the last commit |
//! | `lce:{thread:C}:last` | hash | the last commit (`commit`, `rev`), so a commit retried after a lost answer counts once; expires with `rev` |
//!
//! Every key has an expiry (checked by a test that scans the engine after
//! finished, interrupted, errored, abandoned and orphaned runs).
//!
//! The braces are Redis Cluster hash tags: a run's keys (a conversation's
//! keys) share one slot, as a script that touches several keys needs.
//! The active-run index is only ever touched outside the scripts, and has
//! 16 parts so that no key is written by every run (a Cluster spreads them).
//!
//! `lce:{conv:C}:running` lives in its conversation's slot, not its run's,
//! so no run script touches it: it is set (`SET PX`) after a successful
//! create, and cleared after the terminal's append by a script over that
//! key alone that deletes it only while it still names that run (a newer
//! run of the conversation may have replaced it). Those steps are not
//! atomic with the run's, so [`RunLog::running_run`](lce_runlog::RunLog::running_run)
//! also checks the named run's `sealed` and answers `None` (clearing the
//! key) when it is sealed or gone: a run sealed by another replica's
//! takeover whose cleanup failed is never named. A cancel request
//! ([`RunLog::request_cancel`](lce_runlog::RunLog::request_cancel)) is the
//! run's `cancel` field, set by a script that checks `sealed` in the same
//! step.
//!
//! # Retention and runs that never end
//!
//! The terminal's append sets `PEXPIRE` on the run's stream and hash
//! ([`RedisLogOptions::retention`], 24 h by default) and deletes its lease.
//! An unsealed run expires too: `create` gives its hash the retention as a
//! TTL (its stream takes the hash's when the first append makes it), and
//! every renewal by the owner pushes both back to the retention. Its size
//! is bounded by the per-run limits of D19 (`Limits::events_per_run`,
//! `Limits::bytes_per_run`, which the chain in front of the log enforces).
//! A run whose owner died is claimed through
//! [`RunLog::orphans`](lce_runlog::RunLog::orphans) and
//! [`RunLog::claim`](lce_runlog::RunLog::claim) once its lease expires, and
//! ended with the closure terminal (D9), which starts its retention; if no
//! replica ever finds it (its owner died before it reached the index,
//! or no replica runs), its keys are gone the retention after the last
//! renewal. A run the gateway reserved and abandoned (the upstream gave no
//! run) is deleted at once ([`RunLog::abandon`](lce_runlog::RunLog::abandon)).
//!
//! # Appends
//!
//! An append (one entry or a batch) is one transaction (`MULTI`/`EXEC`): a
//! guard script that checks the owner's lease, `sealed` and the position,
//! records the new last position (and for a terminal seals the log, drops
//! the lease and starts the retention), then one plain
//! `XADD <log> NOMKSTREAM <position>-0 ...` per entry, then a script that
//! undoes the fence. The guard fences a refused append by moving the stream
//! aside (`RENAME` to `lce:{R}:fenced`), so the `XADD`s find no stream and
//! write nothing; the last script moves it back, all inside the one
//! transaction. The entries never pass through Lua: copying them into a
//! script and out again cost more than the `XADD`s themselves
//! (`docs/performance.md`). The scripts in a transaction are sent whole
//! (`EVAL`): an `EVALSHA` that met `NOSCRIPT` after an engine restart would
//! let the `XADD`s behind it run unguarded. A guard that fails in any other
//! way fences the stream first, then fails the transaction.
//!
//! # Reads that wait
//!
//! A read finds its entries with one transaction (`HGET sealed`, `EXISTS`
//! on the lease, `XRANGE`: a consistent snapshot of the entries, `sealed`
//! and `owned`), not a script, for the same reason. When there are none yet
//! and it may wait, it waits for a wake-up, then takes the snapshot again.
//! Every append's transaction ends with `PUBLISH lce:appended <run id>`;
//! each `RedisRunLog` handle keeps one connection subscribed to that
//! channel and wakes its reads of that run. A read registers before its
//! first snapshot, so an append that lands after the snapshot publishes
//! after the registration and is never missed. So a waiting read holds no
//! connection of its own: a replica uses five connections to the engine
//! (four for commands, one for the subscription) however many subscribers
//! it serves.
//! Pub/sub delivers at most once: while the subscription is down, waits
//! look again every 250 ms, and every waiting read is woken when it is
//! back.
//!
//! # Failures
//!
//! Every operation is bounded by [`RedisLogOptions::timeout`]. Each
//! connection is a `redis::aio::ConnectionManager`, which reconnects by
//! itself after the engine restarts, and one that leaves an attempt
//! unanswered for 2 s is replaced; an operation that failed on a dropped or
//! replaced connection is tried again within that bound (the scripts recognise their
//! own earlier success, so a retried append, create, claim or commit never
//! counts twice). Appends issued in order without waiting for each other
//! may reach the engine out of order (each is its own future, retried on
//! its own); an append that finds a gap before its position while an
//! earlier append of the same run is in flight from the same handle waits
//! for it, within the bound. Any other gap is refused at once. What still
//! fails is `LogError::Unavailable` (or
//! `CommitError::Failed` / `TimedOut`): an engine's error text can name
//! hosts, keys or credentials, so none of it reaches an error or a log line
//! (`tracing` records the operation and the error's kind only).
//!
//! # Topologies
//!
//! `redis://` is one server; `redis+sentinel://HOST:PORT[,...]/MASTER[/DB]`
//! the primary Sentinel names, asked again at every reconnection (a
//! connection that fails, or finds a replica, is replaced by one to the
//! primary named then); `redis+cluster://HOST:PORT[,...]` a Redis Cluster
//! (sharded wake-ups, see `wakeups`). With
//! [`RedisLogOptions::with_replicas`] an append, a creation and a claim
//! count only once `WAIT` confirms them, and readers see entries up to the
//! confirmed position only (`docs/gateway.md`, "Replication, failover and
//! shards").
//!
//! Needs Redis 6.2 or later (`XADD ... NOMKSTREAM`; Lua scripts that call
//! `TIME`), 7.0 on a Cluster (`SPUBLISH`). No TLS (the crate is built
//! without it).
//!
//! May depend on: `lce-core` (the thread store trait), `lce-runlog` (the
//! run log trait), `lce-types` (events), `lce-validate` (an event's
//! canonical JSON size, the room an `XADD` is built with), the `redis` client (tokio,
//! `ConnectionManager`, scripts, pub/sub, Sentinel, `cluster-async`), `tokio` (timers, channels, one
//! task per handle), `futures` (the notices' stream) and `tracing`. Nothing
//! above `lce-runlog`, and no HTTP stack: no lower crate depends on this
//! one, so their users pull no Redis client.

mod engine;
mod log;
mod scripts;
mod store;
mod topology;
mod wakeups;

pub use log::{DEFAULT_THREAD_RETENTION, RedisLogOptions, RedisRunLog};
pub use store::RedisStore;
