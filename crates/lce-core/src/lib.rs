//! `lce-core`: the extension points of lce, small and stable.
//!
//! What a program plugs into the chain (like `tower-service` or `axum-core`,
//! it pulls in nothing heavy, so an implementation does not depend on the
//! validator, the encoders or an async runtime):
//!
//! - [`ThreadStore`]: where the coordinator commits thread state before it
//!   forwards `run.finished` / `run.interrupted` (D10, rules 13-15), with
//!   [`CommitRequest`], [`Committed`], [`CommitError`] and [`CommitFuture`].
//! - [`AuditSink`]: receives every run's [`AuditRecord`] (with its
//!   [`RunCounters`]), terminals no wire shows included (D11).
//! - [`FrameEncoder`]: an SSE encoder the chain's `encoded` stage drives.
//!
//! And the vocabulary they share: [`Rule`] (what a run can break: the
//! contract's 15 rules and the decisions' checks), [`Cause`] (a rule, or the
//! step that refused an item) and [`WireFormat`] (the one name of each wire
//! format).
//!
//! The implementations lce ships live above: `MemoryStore`, `TracingAudit`,
//! `MemoryAudit` and the coordinator in `lce-stream`, `RedisStore` in
//! `lce-redis`, the encoders in `lce-encode-custom` and `lce-encode-agui`.
//! The run log, gateway machinery rather than a small extension point,
//! is `lce-runlog`'s.
//!
//! May depend on: `lce-types` (events), `lce-wire` (its `EncodeError`),
//! `bytes`, `thiserror`, std. Nothing else: no async runtime, no `futures`
//! (a commit is a boxed std `Future`).

mod audit;
mod cause;
mod encoder;
mod format;
mod rule;
mod store;

pub use audit::{AuditRecord, AuditSink, RunCounters};
pub use cause::Cause;
pub use encoder::FrameEncoder;
pub use format::WireFormat;
pub use rule::Rule;
pub use store::{CommitError, CommitFuture, CommitRequest, Committed, ThreadStore};
