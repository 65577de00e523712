//! `lce-redis`: lce's extension points on Redis, shared by every replica of
//! a gateway (`gateway.md`).
//!
//! - [`RedisRunLog`]: `lce_core::RunLog` on Redis Streams. One stream per
//!   run whose entry ids are the log positions, a hash of what the log keeps
//!   about the run, a lease key; every change that must be atomic (create,
//!   append with its owner, order and seal checks, renew, release, claim) is
//!   one Lua script over that run's keys only, so the engine decides every
//!   race. Configured with [`RedisLogOptions`].
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
//! | `lce:{R}:meta` | hash | `conversation_id`, `owner`, `sealed` (`0`/`1`), `last` (the last position), `cancel` (`1` once a cancel was requested) |
//! | `lce:{R}:lease` | string | the owner's id, expiring (`PX`) when the lease does |
//! | `lce:active` | sorted set | unsealed runs, scored by their lease deadline in ms (a hint for [`RunLog::orphans`](lce_core::RunLog::orphans)) |
//! | `lce:{conv:C}:running` | string | the id of the run last created for the conversation, while it is unsealed ([`RunLog::running_run`](lce_core::RunLog::running_run)); expires after the retention, refreshed by each renewal |
//! | `lce:{thread:C}:rev` | string | the conversation's last revision (`INCR`) |
//! | `lce:{thread:C}:last` | hash | the last commit (`commit`, `rev`), so a commit retried after a lost answer counts once |
//!
//! The braces are Redis Cluster hash tags: a run's keys (a conversation's
//! keys) share one slot, as a script that touches several keys needs.
//! `lce:active` is only ever touched outside the scripts.
//!
//! `lce:{conv:C}:running` lives in its conversation's slot, not its run's,
//! so no run script touches it: it is set (`SET PX`) after a successful
//! create, and cleared after the terminal's append by a script over that
//! key alone that deletes it only while it still names that run (a newer
//! run of the conversation may have replaced it). Those steps are not
//! atomic with the run's, so [`RunLog::running_run`](lce_core::RunLog::running_run)
//! also checks the named run's `sealed` and answers `None` (clearing the
//! key) when it is sealed or gone: a run sealed by another replica's
//! takeover whose cleanup failed is never named. A cancel request
//! ([`RunLog::request_cancel`](lce_core::RunLog::request_cancel)) is the
//! run's `cancel` field, set by a script that checks `sealed` in the same
//! step.
//!
//! # Retention and runs that never end
//!
//! The terminal's append sets `PEXPIRE` on the run's stream and hash
//! ([`RedisLogOptions::retention`], 24 h by default) and deletes its lease.
//! An unsealed run has no expiry: its size is bounded by the per-run limits
//! of D19 (`Limits::events_per_run`, `Limits::bytes_per_run`, which the
//! chain in front of the log enforces), and a run whose owner died is
//! claimed through [`RunLog::orphans`](lce_core::RunLog::orphans) and
//! [`RunLog::claim`](lce_core::RunLog::claim) once its lease expires, and
//! ended with the closure terminal (D9), which starts its retention.
//!
//! # Reads that wait
//!
//! A read finds its entries with one script (a consistent snapshot of the
//! entries, `sealed` and `owned`). When there are none yet and it may
//! wait, it waits with `XREAD BLOCK` on a connection of its own, taken from
//! a small pool of idle connections (a new one when all are busy; at most
//! 8 idle ones are kept), never on the shared multiplexed one, where a
//! blocked command would hold up every command queued behind it; then it
//! takes the snapshot again. So each read that is waiting holds one
//! connection to the engine for as long as it waits.
//!
//! # Failures
//!
//! Every operation is bounded by [`RedisLogOptions::timeout`]. The
//! connection is a `redis::aio::ConnectionManager`, which reconnects by
//! itself after the engine restarts; an operation that failed on a dropped
//! connection is tried again within that bound (the scripts recognise their
//! own earlier success, so a retried append, create, claim or commit never
//! counts twice). Appends issued in order without waiting for each other
//! (pipelined) may reach the engine out of order across such a failure;
//! an append that finds a gap before its position then waits, within the
//! bound, for the ones before it, where an undisturbed gap is refused at
//! once. What still fails is `LogError::Unavailable` (or
//! `CommitError::Failed` / `TimedOut`): an engine's error text can name
//! hosts, keys or credentials, so none of it reaches an error or a log line
//! (`tracing` records the operation and the error's kind only).
//!
//! Needs Redis 5 or later (streams; Lua scripts that call `TIME`). A
//! standalone server or a primary; not Redis Cluster's client protocol, no
//! TLS (the crate is built without them).
//!
//! May depend on: `lce-core` (the traits), `lce-types` (events), the `redis`
//! client (tokio, `ConnectionManager`, scripts), `tokio` (timers) and
//! `tracing`. Nothing above `lce-core`: the core crates never depend on this
//! one, so their users pull no Redis client.

mod engine;
mod log;
mod scripts;
mod store;

pub use log::{RedisLogOptions, RedisRunLog};
pub use store::RedisStore;
