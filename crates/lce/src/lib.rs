//! `lce`: Canonical Lifecycle Events v1, the facade.
//!
//! Re-exports the layers behind features, so a user can depend on just the
//! crates they need (say `lce-types` and `lce-encode-agui`) or on `lce` for
//! everything (`default = ["full"]`):
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`types`] | `lce-types` | always |
//! | [`wire`] | `lce-wire` | `wire` (on with every encoder and `sanitize`) |
//! | [`validate`] | `lce-validate` | `validate` |
//! | [`sanitize`] | `lce-sanitize` | `sanitize` |
//! | [`custom`] | `lce-encode-custom` | `encode-custom` |
//! | [`agui`] | `lce-encode-agui` | `encode-agui` |
//! | [`stream`] | `lce-stream` | `stream` |
//! | `runlog` | `lce-runlog`: a gateway's run log, its writer and subscription | `runlog` (not in `full`) |
//! | `gateway` | `lce-gateway`: the gateway as an axum `Router` to nest | `gateway` (not in `full`) |
//! | `redis` | `lce-redis`: the run log and thread store on Redis | `redis` (not in `full`) |
//! | `probe` | `lce-probe`: `lce probe`, a harness driven over the upstream protocol and checked | `probe` (not in `full`) |
//! | `telemetry` | `lce-telemetry`: a gateway process's logs, Prometheus recorder and (feature `otlp`) span export | `telemetry`, `otlp` (not in `full`) |
//!
//! May depend on: the lce crates above, nothing else.
//!
//! # From adapter to HTTP body
//!
//! An adapter yields canonical events; the coordinator makes the run obey
//! the contract whatever the adapter did (here the adapter stops early, so
//! the coordinator ends the run with `run.error{provider_stream_closed}`);
//! the encoder turns events into SSE frames; each frame is one chunk of the
//! HTTP response body (for example `axum::body::Body::from_stream`).
//!
//! ```
//! # #[cfg(feature = "stream")]
//! # fn main() {
//! use lce::prelude::*;
//! use futures::StreamExt;
//!
//! let line = |seq: u64, ty: &str, data: &str| {
//!     Event::from_json(&format!(
//!         r#"{{"version":1,"type":"{ty}","run_id":"run-1","conversation_id":"conv-1","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
//!     ))
//!     .unwrap()
//! };
//! // An adapter that starts a run, says "Hi" and then stops without a terminal.
//! let adapter = futures::stream::iter(vec![
//!     line(0, "run.started", r#"{"harness_id":"demo","adapter_version":"1.0.0"}"#),
//!     line(1, "text.started", r#"{"message_id":"m-1","role":"assistant"}"#),
//!     line(2, "text.delta", r#"{"message_id":"m-1","delta":"Hi"}"#),
//! ]);
//!
//! let coordinator = Coordinator::new(CoordinatorOptions::new("run-1", "conv-1"));
//! let body = lce::stream::events(adapter)
//!     .enforced(coordinator) // drop empty deltas, sanitize, validate, coordinate

//!     .encoded(WireEncoder::new(WireFormat::Custom, None));
//!
//! let chunks: Vec<bytes::Bytes> = futures::executor::block_on(
//!     body.map(|chunk| chunk.expect("the coordinator's output always encodes")).collect(),
//! );
//! assert_eq!(
//!     chunks,
//!     [
//!         "event: content\ndata: {\"text\": \"Hi\", \"namespace\": []}\n\n",
//!         "event: error\ndata: {\"error\": \"Agent execution failed. Check server logs for details.\"}\n\n",
//!     ]
//! );
//! # }
//! # #[cfg(not(feature = "stream"))]
//! # fn main() {}
//! ```

pub use lce_types as types;

#[cfg(feature = "encode-agui")]
pub use lce_encode_agui as agui;
#[cfg(feature = "encode-custom")]
pub use lce_encode_custom as custom;
#[cfg(feature = "gateway")]
pub use lce_gateway as gateway;
#[cfg(feature = "probe")]
pub use lce_probe as probe;
#[cfg(feature = "redis")]
pub use lce_redis as redis;
#[cfg(feature = "runlog")]
pub use lce_runlog as runlog;
#[cfg(feature = "sanitize")]
pub use lce_sanitize as sanitize;
#[cfg(feature = "stream")]
pub use lce_stream as stream;
#[cfg(feature = "telemetry")]
pub use lce_telemetry as telemetry;
#[cfg(feature = "validate")]
pub use lce_validate as validate;
#[cfg(feature = "wire")]
pub use lce_wire as wire;

/// The names most programs need, for `use lce::prelude::*`.
pub mod prelude {
    pub use lce_types::{Event, EventLines, EventType, Limits, ParseError, Payload, Timestamp};

    #[cfg(feature = "encode-agui")]
    pub use lce_encode_agui::{AguiOptions, AguiSseEncoder};
    #[cfg(feature = "encode-custom")]
    pub use lce_encode_custom::{CustomOptions, CustomSseEncoder};
    #[cfg(feature = "sanitize")]
    pub use lce_sanitize::Sanitizer;
    #[cfg(feature = "stream")]
    pub use lce_stream::{
        AuditSink, CancelHandle, Coordinator, CoordinatorOptions, LceError, LifecycleStreamExt,
        ThreadStore, WireEncoder, WireFormat,
    };
    #[cfg(feature = "validate")]
    pub use lce_validate::{RunValidator, ValidatorOptions, Violation};
}
