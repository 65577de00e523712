//! What the gateway counts, through the `metrics` facade (`gateway.md`,
//! "Operating it"): every name starts with `lce_`, no label holds an id, a
//! token or a payload. A host installs the recorder it wants; `lce serve`
//! installs a Prometheus one and serves its text on `GET /metrics`
//! ([`GatewayBuilder::metrics_endpoint`](crate::GatewayBuilder::metrics_endpoint),
//! [`metrics_router`]). The run log counts its own (`lce_log_*`,
//! `lce_takeovers_total`).
//!
//! The run counters come from the audit records the coordinator makes
//! ([`CountingAudit`]); the gateway adds open runs and subscribers,
//! requests, starts, resumes, upstream outcomes and refusals.

use std::sync::Arc;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use lce_core::{AuditRecord, AuditSink};
use lce_types::EventType;
use metrics::{counter, gauge};

/// What renders the metrics' text for `GET /metrics` (e.g. a Prometheus
/// recorder handle's `render`).
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

/// The content type of the Prometheus text format.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4";

/// A router with only `GET /metrics`, answering what `render` gives: for
/// a listener of its own (`lce serve --metrics-addr`).
pub fn metrics_router<S>(render: MetricsRender) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let render = render.clone();
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static(PROMETHEUS_TEXT),
                    )],
                    render(),
                )
                    .into_response()
            }
        }),
    )
}

/// `lce_build_info{version}`: 1.
pub(crate) fn build_info() {
    gauge!("lce_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
}

/// Middleware: `lce_http_requests_total{route, status}`, the route being
/// the matched route's pattern (`/api/v1/runs/{run_id}/stream`, never a
/// path with an id in it), `unmatched` when none matched.
pub(crate) async fn count_request(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    counter!("lce_http_requests_total", "route" => route, "status" => status).increment(1);
    response
}

/// `lce_runs_started_total{route}`.
pub(crate) fn run_started(route: &'static str) {
    counter!("lce_runs_started_total", "route" => route).increment(1);
}

/// `lce_runs_open` moves by `delta` (a run admitted, or given back).
pub(crate) fn runs_open(delta: f64) {
    gauge!("lce_runs_open").increment(delta);
}

/// `lce_subscribers_open` moves by `delta`.
pub(crate) fn subscribers_open(delta: f64) {
    gauge!("lce_subscribers_open").increment(delta);
}

/// `lce_resumes_total{outcome}`: `resumed`, `malformed_id`, `unknown_id`
/// or `failed`.
pub(crate) fn resume(outcome: &'static str) {
    counter!("lce_resumes_total", "outcome" => outcome).increment(1);
}

/// `lce_upstream_requests_total{outcome}`: `ok`, `unknown_agent`,
/// `nothing_to_resume` or `unavailable`.
pub(crate) fn upstream_request(outcome: &'static str) {
    counter!("lce_upstream_requests_total", "outcome" => outcome).increment(1);
}

/// `lce_refusals_total{code}`: a request refused with an error code.
pub(crate) fn refusal(code: &'static str) {
    counter!("lce_refusals_total", "code" => code).increment(1);
}

/// `lce_connections_closed_total{reason}`: a connection the accept loop
/// closed (`per_ip_limit`, `write_timeout`).
pub(crate) fn connection_closed(reason: &'static str) {
    counter!("lce_connections_closed_total", "reason" => reason).increment(1);
}

/// An audit sink that counts every record (`lce_runs_ended_total{terminal,
/// by}`, `lce_violations_total{rule}`, `lce_events_total{direction}`),
/// then hands it on.
pub(crate) struct CountingAudit(pub(crate) Arc<dyn AuditSink>);

impl AuditSink for CountingAudit {
    fn record(&self, record: &AuditRecord) {
        let terminal = match record.terminal {
            EventType::RunFinished => "finished",
            EventType::RunInterrupted => "interrupted",
            EventType::RunError => "error",
            EventType::RunCancelled => "cancelled",
            _ => "other",
        };
        let by = if record.coordinator_terminal {
            "coordinator"
        } else {
            "harness"
        };
        counter!("lce_runs_ended_total", "terminal" => terminal, "by" => by).increment(1);
        if let Some(cause) = record.rule {
            counter!("lce_violations_total", "rule" => cause.as_str()).increment(1);
        }
        let counters = record.counters;
        counter!("lce_events_total", "direction" => "in").increment(counters.events_in);
        counter!("lce_events_total", "direction" => "out").increment(counters.forwarded);
        self.0.record(record);
    }
}
