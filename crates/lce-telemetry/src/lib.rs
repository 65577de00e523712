//! `lce-telemetry`: what a gateway process reports (`gateway.md`,
//! "Operating it"), for `lce serve` or a host that wants the same.
//!
//! - [`logs::init`]: the `tracing` subscriber: logs on stderr as text or
//!   JSON ([`LogFormat`]), filtered by `RUST_LOG`; with an OTLP endpoint
//!   (feature `otlp`) the run spans are exported too ([`SpanExport`]).
//! - [`install_prometheus`]: the process's `metrics` recorder, rendered in
//!   the Prometheus text format for the gateway's `GET /metrics`.
//!
//! May depend on: `lce-gateway` (the names and W3C ids of its run spans),
//! `tracing`, `tracing-subscriber`, `metrics`,
//! `metrics-exporter-prometheus` (no listener of its own), `tokio`,
//! `thiserror`, and with `otlp` the OpenTelemetry SDK and its OTLP/HTTP
//! exporter. Nothing below the gateway depends on it.

use std::sync::Arc;
use std::time::Duration;

pub mod logs;
#[cfg(feature = "otlp")]
mod otlp;

pub use logs::{LogFormat, RunningExport, SpanExport};

/// Telemetry that could not be set up; the message names the option or
/// the part, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TelemetryError(pub String);

/// The buckets of `lce_log_append_seconds`, in seconds.
const APPEND_BUCKETS: [f64; 12] = [
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Installs the process's Prometheus recorder (what the gateway and the run
/// log count through the `metrics` facade) and returns what renders it,
/// for `GatewayBuilder::metrics_endpoint`; its histograms are drained
/// every few seconds by a task on the current runtime.
///
/// # Errors
///
/// When a recorder is installed already, or the buckets are refused.
pub fn install_prometheus() -> Result<Arc<dyn Fn() -> String + Send + Sync>, TelemetryError> {
    use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
    let failed =
        |e: &dyn std::fmt::Display| TelemetryError(format!("cannot set up the metrics: {e}"));
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("lce_log_append_seconds".to_owned()),
            &APPEND_BUCKETS,
        )
        .map_err(|e| failed(&e))?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|e| failed(&e))?;
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(Arc::new(move || handle.render()))
}
