//! Where runs come from (`gateway.md`, harness side; `docs/upstream.md`):
//! [`Upstream`], one trait with three implementations: [`HttpUpstream`] (a
//! harness over HTTP, `lce serve --upstream URL`), [`ScenarioPlayer`] (the
//! built-in player of recorded runs, `--scenarios DIR`), and any harness
//! written in Rust that runs in-process, with no HTTP hop.
//!
//! The client's `Authorization` and `X-Request-Id` reach the upstream in
//! [`Forwarded`] and are never logged; so does the W3C trace context
//! (`traceparent`, `tracestate`, `crate::trace_context`). Nothing of an upstream's error body
//! reaches a client.

pub(crate) mod http;
mod run;
mod scenarios;

pub use http::HttpUpstream;
pub use run::{EventStream, Forwarded, RunInput, RunRequest, Upstream, UpstreamError};
pub use scenarios::{ScenarioError, ScenarioPlayer};
