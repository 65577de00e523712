//! `lce-stream`: composing canonical event streams, and the coordinator.
//!
//! - [`LifecycleStreamExt`]: adaptors over `futures::Stream`s of
//!   `Result<Event, LceError>` — [`sequenced`](LifecycleStreamExt::sequenced),
//!   [`drop_empty_deltas`](LifecycleStreamExt::drop_empty_deltas) (D7),
//!   [`sanitized`](LifecycleStreamExt::sanitized),
//!   [`validated`](LifecycleStreamExt::validated),
//!   [`coordinated`](LifecycleStreamExt::coordinated) and
//!   [`encoded`](LifecycleStreamExt::encoded) (SSE bytes, one chunk per
//!   frame). [`events`] lifts a stream of plain events into one. Like
//!   `futures`' adaptors, each gives access to the stream it wraps
//!   (`get_ref`, `get_mut`, `get_pin_mut`, `into_inner`; the coordinator's
//!   only while it holds the adapter), is a `FusedStream` (when its stream
//!   is, or always where it tracks its own end) and `Debug` when its stream
//!   is.
//! - [`LceError`]: the error items, payload-free; [`LceError::cause`] says
//!   what an item broke as a [`Cause`] (a [`Rule`], or the step that
//!   refused it), which audit records carry too.
//! - [`Coordinator`]: wraps any adapter stream and guarantees that its output
//!   satisfies every rule of the contract (D8-D11): see [`coordinator`].
//! - [`codec`]: tokio-util decoders for canonical JSON Lines and SSE frames,
//!   bounded like `LinesCodec`.
//!
//! May depend on: every lower lce crate (types, validate, sanitize, both
//! encoders), `futures`, `tokio-util` (codec), `tokio` (timers only),
//! `pin-project-lite`, `bytes`, `tracing`, `thiserror`. Not on any HTTP
//! stack: serving lives in the CLI.

mod audit;
mod cancel;
pub mod codec;
pub mod coordinator;
mod encoder;
mod error;
mod ext;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod store;

pub use audit::{AuditRecord, AuditSink, MemoryAudit, RunCounters, TracingAudit};
pub use cancel::CancelHandle;
pub use codec::{EventLinesDecoder, SseDecodeError, SseDecoder, SseFrame};
pub use coordinator::{Coordinated, Coordinator, CoordinatorOptions, Intervention};
pub use encoder::{FrameEncoder, WireEncoder, WireFormat};
pub use error::{Cause, LceError};
pub use ext::{
    DropEmptyDeltas, Encoded, Enforced, LifecycleStream, LifecycleStreamExt, LiftEvent, Sanitized,
    Sequenced, Source, StageCounts, Validated, events, source,
};
pub use lce_validate::Rule;
pub use lce_wire::EncodeError;
pub use store::{
    CommitError, CommitRequest, Committed, Fault, FaultyStore, MemoryStore, ThreadStore,
};
