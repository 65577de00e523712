//! What an upstream is: [`Upstream`], the request it opens a run from,
//! the events it answers, the headers it gets, and why it may give no run.

use std::pin::Pin;

use axum::http::{HeaderMap, HeaderValue, header};
use futures::Stream;
use futures::future::BoxFuture;
use lce_stream::LceError;
use lce_types::Event;

use crate::trace_context::TraceContext;

/// A run's events as an upstream produces them (an error item ends the run
/// as any adapter's would: the coordinator's terminal, D8).
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, LceError>> + Send + 'static>>;

/// What a start, a resume, an AG-UI request or an invoke asks an upstream
/// for.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// lce's run id (random) or the AG-UI client's. The upstream's events
    /// must carry it (the coordinator refuses others, rule 1).
    pub run_id: String,
    /// The conversation (DA's `conversation_id`, AG-UI's `threadId`).
    pub conversation_id: String,
    /// The agent the client named.
    pub agent_id: String,
    /// A start's message or a resume's data.
    pub input: RunInput,
    /// The client's `client_context` (AG-UI: `forwardedProps`), as given.
    pub client_context: Option<serde_json::Value>,
    /// The client's `Authorization` and `X-Request-Id`, forwarded unchanged,
    /// and the trace the request continues ([`Forwarded::trace_context`]).
    pub forwarded: Forwarded,
}

impl RunRequest {
    /// A request for a new run (the gateway builds these; a test or an
    /// in-process caller may too).
    pub fn new(
        run_id: impl Into<String>,
        conversation_id: impl Into<String>,
        agent_id: impl Into<String>,
        input: RunInput,
    ) -> Self {
        RunRequest {
            run_id: run_id.into(),
            conversation_id: conversation_id.into(),
            agent_id: agent_id.into(),
            input,
            client_context: None,
            forwarded: Forwarded::default(),
        }
    }

    /// The W3C trace this request belongs to (the client's `traceparent`
    /// continued, or a new trace) and lce's span in it, for an in-process
    /// harness to continue: its spans are children of
    /// [`TraceContext::span_id`]. `None` for a request built without one.
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.forwarded.trace_context()
    }

    /// The `tracing` span of this request on `route`
    /// ([`TraceContext::span`]); a disabled span without a trace context.
    pub(crate) fn span(&self, route: &'static str) -> tracing::Span {
        match self.trace_context() {
            Some(cx) => cx.span(route, &self.run_id, &self.conversation_id),
            None => tracing::Span::none(),
        }
    }
}

/// A start's message or a resume's data.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunInput {
    /// The user's message.
    Message(String),
    /// DA's `resume_data`: the JSON string exactly as the client sent it.
    Resume(String),
}

/// The client headers an upstream gets (never logged: `Debug` hides them),
/// and the trace context it continues (`traceparent`, `tracestate`).
#[derive(Clone, Default)]
pub struct Forwarded {
    authorization: Option<HeaderValue>,
    request_id: Option<HeaderValue>,
    trace: Option<TraceContext>,
}

impl std::fmt::Debug for Forwarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Forwarded(..)")
    }
}

impl Forwarded {
    /// The headers to forward from a client's request, and its trace: the
    /// client's `traceparent` continued with a new span id of lce's, or a
    /// new trace ([`TraceContext::from_headers`]).
    pub fn from_headers(headers: &HeaderMap) -> Forwarded {
        Forwarded {
            authorization: headers.get(header::AUTHORIZATION).cloned(),
            request_id: headers.get("x-request-id").cloned(),
            trace: Some(TraceContext::from_headers(headers)),
        }
    }

    /// These headers with `trace` as the trace context (a caller that
    /// builds its [`RunRequest`] itself).
    pub fn with_trace_context(mut self, trace: TraceContext) -> Forwarded {
        self.trace = Some(trace);
        self
    }

    /// The trace context the upstream continues.
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }

    /// The client's `Authorization`, for an in-process upstream that
    /// decides who may start a run.
    pub fn authorization(&self) -> Option<&HeaderValue> {
        self.authorization.as_ref()
    }

    /// The client's `X-Request-Id`.
    pub fn request_id(&self) -> Option<&HeaderValue> {
        self.request_id.as_ref()
    }

    /// Sets the forwarded headers on an outgoing request.
    pub fn apply(&self, headers: &mut HeaderMap) {
        if let Some(v) = &self.authorization {
            headers.insert(header::AUTHORIZATION, v.clone());
        }
        if let Some(v) = &self.request_id {
            headers.insert("x-request-id", v.clone());
        }
        if let Some(trace) = &self.trace {
            trace.apply(headers);
        }
    }
}

/// Why an upstream gave no run. The client gets an [`ApiError`]
/// (`crate::ApiError`) naming the kind only; the kind is logged, never
/// the upstream's words.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// It could not be reached.
    #[error("the upstream could not be reached")]
    Unreachable,
    /// It did not answer in time.
    #[error("the upstream did not answer in time")]
    TimedOut,
    /// It answered a status that is not 2xx.
    #[error("the upstream answered status {0}")]
    Status(u16),
    /// It answered a content type that is neither JSON Lines nor SSE (or a
    /// compressed body).
    #[error("the upstream answered a content type that is neither JSON Lines nor SSE")]
    ContentType,
    /// No agent of this id (the scenario player: no such scenario; a 404
    /// for the client).
    #[error("no scenario for this agent")]
    UnknownAgent,
    /// Nothing to resume for this agent (a 404 for the client).
    #[error("nothing to resume for this agent")]
    NoResume,
}

/// A source of runs: opens a run from a request, cancels a run.
///
/// Implement it to run a harness written in Rust in-process (see the
/// `rust_harness` example of the facade); the gateway drives what
/// [`Upstream::open`] returns through the coordinator and the run log like
/// any other run.
pub trait Upstream: Send + Sync + 'static {
    /// Opens the run `request` asks for: its events, as they arrive. Errors
    /// come before any event (the client gets a 4xx/502 before any stream).
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>>;

    /// Asks the upstream to cancel `run_id` (the client's cancel);
    /// `true` when it accepted. The gateway ends the run with
    /// `run.cancelled{client_request}` unless the upstream's own terminal
    /// comes first.
    fn cancel<'a>(&'a self, run_id: &'a str, forwarded: &'a Forwarded) -> BoxFuture<'a, bool>;
}

/// A shared upstream is one: the host may keep a handle to its harness.
impl<U: Upstream> Upstream for std::sync::Arc<U> {
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        (**self).open(request)
    }

    fn cancel<'a>(&'a self, run_id: &'a str, forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        (**self).cancel(run_id, forwarded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_headers_are_copied_and_hidden() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer s3cret"),
        );
        headers.insert("x-request-id", HeaderValue::from_static("req-1"));
        headers.insert("cookie", HeaderValue::from_static("c"));
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        let forwarded = Forwarded::from_headers(&headers);
        assert_eq!(format!("{forwarded:?}"), "Forwarded(..)");
        assert_eq!(forwarded.authorization().unwrap(), "Bearer s3cret");
        assert_eq!(forwarded.request_id().unwrap(), "req-1");
        let trace = forwarded.trace_context().unwrap().clone();
        let mut out = HeaderMap::new();
        forwarded.apply(&mut out);
        assert_eq!(out.len(), 3);
        assert!(out.get("cookie").is_none());
        assert_eq!(
            out.get("traceparent").unwrap(),
            trace.traceparent().as_str()
        );
        assert!(
            out.get("traceparent")
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
        );
    }
}
