//! `lce-stream`: composing canonical event streams, and the coordinator.
//!
//! - [`LifecycleStreamExt`]: adaptors over `futures::Stream`s of
//!   `Result<Event, LceError>` — [`sequenced`](LifecycleStreamExt::sequenced),
//!   [`drop_empty_deltas`](LifecycleStreamExt::drop_empty_deltas) (D7),
//!   [`sanitized`](LifecycleStreamExt::sanitized),
//!   [`validated`](LifecycleStreamExt::validated),
//!   [`coordinated`](LifecycleStreamExt::coordinated) and
//!   [`encoded`](LifecycleStreamExt::encoded) (SSE bytes, one chunk per
//!   event: its whole frames), and [`enforced`](LifecycleStreamExt::enforced),
//!   the chain lce builds in one call; [`encode_chain`] is the whole of
//!   `lce encode` (items in, frames out) for every caller. [`events`] (a stream of plain events)
//!   and [`source`] (a stream of `Result<Event, LceError>`) start a chain: a
//!   [`LifecycleStream`], which says what its stages dropped. Like
//!   `futures`' adaptors, each gives access to the stream it wraps
//!   (`get_ref`, `get_mut`, `get_pin_mut`, `into_inner`; the coordinator's
//!   only while it holds the adapter), is a `FusedStream` (when its stream
//!   is, or always where it tracks its own end) and `Debug` when its stream
//!   is.
//! - [`LceError`]: the error items a stage yields in place of what it
//!   refuses, payload-free; [`LceError::cause`] says what an item broke as a
//!   [`Cause`] (a [`Rule`], or the step that refused it), which audit
//!   records carry too.
//! - [`Coordinator`]: the last stage; turns error items and closure into the
//!   contract's terminals, commits, cancels and audits (D8-D11): see
//!   [`coordinator`]. Over the enforced chain its output satisfies every
//!   rule of the contract.
//! - The extension points ([`ThreadStore`], [`AuditSink`], [`FrameEncoder`])
//!   and the shared [`Rule`], [`Cause`], [`WireFormat`] are `lce-core`'s,
//!   re-exported here.
//! - The run log of a gateway (writing a run to it, reading it back) is a
//!   layer above: `lce-runlog`.
//! - [`codec`]: tokio-util decoders for canonical JSON Lines and SSE frames,
//!   bounded like `LinesCodec`.
//!
//! Timers: the coordinator bounds a commit (`commit_timeout`) and a run
//! (`deadline`) with `tokio::time::sleep`, so a coordinated chain must be
//! polled inside a tokio runtime with the time driver enabled (any other
//! stage runs on any executor).
//!
//! May depend on: every lower lce crate (types, core, validate, sanitize,
//! both encoders), `futures`, `tokio-util` (codec), `tokio` (timers only),
//! `pin-project-lite`, `bytes`, `tracing`, `thiserror`. Not on any HTTP
//! stack: serving lives in the CLI.

mod audit;
mod cancel;
mod chain;
pub mod codec;
pub mod coordinator;
mod encoder;
mod error;
mod ext;
mod stage;
mod store;

pub use audit::{MemoryAudit, TracingAudit};
pub use cancel::CancelHandle;
pub use chain::{EncodeChain, EncodeOptions, encode_chain};
pub use codec::{EventLinesDecoder, SseDecodeError, SseDecoder, SseFrame};
pub use coordinator::{Coordinated, Coordinator, CoordinatorOptions, Intervention};
pub use encoder::WireEncoder;
pub use error::LceError;
pub use ext::{
    DropEmptyDeltas, Encoded, Enforced, LifecycleStreamExt, LiftEvent, Sanitized, Sequenced,
    Source, Validated, events, source,
};
/// The extension points (`lce-core`), re-exported where the chain uses them.
pub use lce_core::{
    AuditRecord, AuditSink, Cause, CommitError, CommitFuture, CommitRequest, Committed,
    FrameEncoder, Rule, RunCounters, ThreadStore, WireFormat,
};
pub use lce_wire::EncodeError;
pub use stage::{LifecycleStream, StageCounts};
pub use store::MemoryStore;
