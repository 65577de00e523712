//! `--otlp-endpoint URL`: the spans of run requests exported over
//! OTLP/HTTP (protobuf, `POST URL/v1/traces`); the `otlp` cargo feature.
//!
//! The gateway makes one `tracing` span per run request
//! (`lce_gateway::trace_context`, target `lce::trace`, name `lce.run`)
//! whose fields name the W3C ids it already sent upstream: the trace id
//! (the client's, or new), lce's span id (the parent the harness got in
//! `traceparent`), the client's parent id, the flags and `tracestate`.
//! [`RunSpans`] turns each such span, when it closes, into an
//! OpenTelemetry `SpanData` with exactly those ids, so the harness's spans
//! are children of the exported span and the client's span its parent.
//! (`tracing-opentelemetry` is not used: with OpenTelemetry 0.33 a span's
//! id comes from the SDK's id generator only, so a span could not have
//! the id lce had already sent upstream.) The ids become no attributes;
//! the attributes are `lce.route`, `lce.run_id`, `lce.conversation_id`:
//! never a payload, a token or `Authorization`. Spans whose flags say
//! "not sampled" are not exported.
//!
//! Export: a bounded queue (2048 spans; beyond it spans are dropped and
//! counted, never waited for), batches of at most 512 sent by a task on
//! the server's runtime every `OTEL_BSP_SCHEDULE_DELAY` milliseconds
//! (default 5000) and at shutdown, through `opentelemetry-otlp`'s exporter
//! on its hyper client (the hyper lce already uses; plain `http://`, no
//! TLS: a collector sidecar or node agent is the usual next hop).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use lce_gateway::trace_context::{SPAN_NAME, SPAN_TARGET, parse_traceparent};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use tokio::sync::{mpsc, oneshot};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Subscriber, warn};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use crate::TelemetryError;

/// Spans queued for export at most (OpenTelemetry's default queue size).
const MAX_QUEUE: usize = 2048;
/// Spans sent in one request at most (OpenTelemetry's default batch).
const MAX_BATCH: usize = 512;
/// The default time between exports (OpenTelemetry's default delay).
const DEFAULT_DELAY: Duration = Duration::from_millis(5000);
/// The bound on one export (the exporter's own timeout as well).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The layer that turns run-request spans into spans to export.
pub(crate) struct RunSpans {
    queue: mpsc::Sender<SpanData>,
    dropped: Arc<AtomicU64>,
    scope: InstrumentationScope,
}

/// The export of the spans [`RunSpans`] queues, to start on the runtime.
#[derive(Debug)]
pub struct SpanExport {
    endpoint: String,
    queue: mpsc::Receiver<SpanData>,
    dropped: Arc<AtomicU64>,
}

/// The export task, running.
#[derive(Debug)]
pub struct RunningExport {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// The layer and its export for `--otlp-endpoint URL` (`http://HOST:PORT[/PATH]`).
pub(crate) fn pipeline(url: &str) -> Result<(RunSpans, SpanExport), TelemetryError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad_endpoint(url))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.contains('@') || rest.contains(['?', '#']) {
        return Err(bad_endpoint(url));
    }
    let (tx, rx) = mpsc::channel(MAX_QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let layer = RunSpans {
        queue: tx,
        dropped: dropped.clone(),
        scope: InstrumentationScope::builder("lce")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build(),
    };
    let export = SpanExport {
        endpoint: format!("{}/v1/traces", url.trim_end_matches('/')),
        queue: rx,
        dropped,
    };
    Ok((layer, export))
}

fn bad_endpoint(url: &str) -> TelemetryError {
    TelemetryError(format!(
        "--otlp-endpoint must be http://HOST:PORT[/PATH] (OTLP/HTTP, no TLS), not {url:?}"
    ))
}

impl SpanExport {
    /// Builds the exporter and starts the export task (on the current
    /// runtime: the exporter's hyper client needs it).
    pub async fn start(self) -> Result<RunningExport, TelemetryError> {
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(&self.endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError(format!("cannot export to --otlp-endpoint: {e}")))?;
        let mut resource = opentelemetry_sdk::Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("lce");
        }
        exporter.set_resource(
            &resource
                .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        let delay = std::env::var("OTEL_BSP_SCHEDULE_DELAY")
            .ok()
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(DEFAULT_DELAY, Duration::from_millis);
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(export_loop(
            exporter,
            self.queue,
            self.dropped,
            delay,
            stopped,
        ));
        Ok(RunningExport { stop, task })
    }
}

impl RunningExport {
    /// Exports what is queued and stops (bounded by the export timeout).
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(EXPORT_TIMEOUT + Duration::from_secs(1), self.task).await;
    }
}

async fn export_loop(
    exporter: opentelemetry_otlp::SpanExporter,
    mut queue: mpsc::Receiver<SpanData>,
    dropped: Arc<AtomicU64>,
    delay: Duration,
    mut stop: oneshot::Receiver<()>,
) {
    let mut batch = Vec::new();
    let mut tick = tokio::time::interval(delay);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            span = queue.recv() => match span {
                Some(span) => {
                    batch.push(span);
                    if batch.len() >= MAX_BATCH {
                        export(&exporter, &mut batch, &dropped).await;
                    }
                }
                None => break,
            },
            _ = tick.tick() => {
                if !batch.is_empty() {
                    export(&exporter, &mut batch, &dropped).await;
                }
            }
            _ = &mut stop => break,
        }
    }
    while let Ok(span) = queue.try_recv() {
        batch.push(span);
        if batch.len() >= MAX_BATCH {
            export(&exporter, &mut batch, &dropped).await;
        }
    }
    if !batch.is_empty() {
        export(&exporter, &mut batch, &dropped).await;
    }
}

/// Sends `batch` (emptied); a failure is logged with its count, once per
/// batch, and the spans are dropped (no retry: a trace is best effort).
async fn export(
    exporter: &opentelemetry_otlp::SpanExporter,
    batch: &mut Vec<SpanData>,
    dropped: &AtomicU64,
) {
    let spans = std::mem::take(batch);
    let count = spans.len();
    let result = tokio::time::timeout(EXPORT_TIMEOUT, exporter.export(spans)).await;
    let queue_full = dropped.swap(0, Ordering::Relaxed);
    if queue_full > 0 {
        warn!(target: "lce::otlp", dropped = queue_full, "spans dropped: the export queue was full");
    }
    match result {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            // The exporter's words (its HTTP status or connection error),
            // cut: nothing of a run's payload reaches a span.
            let mut error = e.to_string();
            if let Some((at, _)) = error.char_indices().nth(200) {
                error.truncate(at);
            }
            warn!(target: "lce::otlp", spans = count, error, "spans not exported");
        }
        Err(_) => warn!(target: "lce::otlp", spans = count, "spans not exported: timed out"),
    }
}

/// A run request's span while it is open.
struct Pending {
    start: SystemTime,
    fields: RunFields,
}

/// What a run request's span says ([`lce_gateway::TraceContext::span`]).
#[derive(Default)]
struct RunFields {
    route: Option<String>,
    run_id: Option<String>,
    conversation_id: Option<String>,
    trace_id: Option<[u8; 16]>,
    span_id: Option<[u8; 8]>,
    parent_id: Option<[u8; 8]>,
    flags: Option<u8>,
    tracestate: Option<String>,
}

impl Visit for RunFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.set(field.name(), &format!("{value:?}"));
    }
}

impl RunFields {
    fn set(&mut self, name: &str, value: &str) {
        match name {
            "route" => self.route = Some(value.to_owned()),
            "run_id" => self.run_id = Some(value.to_owned()),
            "conversation_id" => self.conversation_id = Some(value.to_owned()),
            "tracestate" if !value.is_empty() => self.tracestate = Some(value.to_owned()),
            "trace_id" | "span_id" | "parent_id" | "trace_flags" => {
                // Parse the ids as the middle of a traceparent would be:
                // the same strict rules.
                let (trace, span, flags) = match name {
                    "trace_id" => (value, "0000000000000001", "00"),
                    "span_id" | "parent_id" => ("00000000000000000000000000000001", value, "00"),
                    _ => (
                        "00000000000000000000000000000001",
                        "0000000000000001",
                        value,
                    ),
                };
                let parsed = parse_traceparent(format!("00-{trace}-{span}-{flags}").as_bytes());
                if let Some((t, s, f)) = parsed {
                    match name {
                        "trace_id" => self.trace_id = Some(t),
                        "span_id" => self.span_id = Some(s),
                        "parent_id" => self.parent_id = Some(s),
                        _ => self.flags = Some(f),
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether `metadata` is a run request's span.
pub(crate) fn is_run_span(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.target() == SPAN_TARGET && metadata.name() == SPAN_NAME
}

impl<S> Layer<S> for RunSpans
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !is_run_span(attrs.metadata()) {
            return;
        }
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = RunFields::default();
        attrs.record(&mut fields);
        span.extensions_mut().insert(Pending {
            start: SystemTime::now(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        if let Some(pending) = span.extensions_mut().get_mut::<Pending>() {
            values.record(&mut pending.fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(pending) = span.extensions_mut().remove::<Pending>() else {
            return;
        };
        let Some(data) = self.span_data(pending) else {
            return;
        };
        if self.queue.try_send(data).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl RunSpans {
    /// The span to export; `None` without valid ids or when not sampled.
    fn span_data(&self, pending: Pending) -> Option<SpanData> {
        let f = pending.fields;
        let (trace_id, span_id, flags) = (f.trace_id?, f.span_id?, f.flags?);
        if flags & 1 == 0 {
            return None;
        }
        let state = f
            .tracestate
            .as_deref()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        let route = f.route.unwrap_or_default();
        let mut attributes = vec![KeyValue::new("lce.route", route.clone())];
        if let Some(run_id) = f.run_id {
            attributes.push(KeyValue::new("lce.run_id", run_id));
        }
        if let Some(conversation_id) = f.conversation_id {
            attributes.push(KeyValue::new("lce.conversation_id", conversation_id));
        }
        Some(SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(trace_id),
                SpanId::from_bytes(span_id),
                TraceFlags::new(flags),
                false,
                state,
            ),
            parent_span_id: f.parent_id.map_or(SpanId::INVALID, SpanId::from_bytes),
            parent_span_is_remote: f.parent_id.is_some(),
            span_kind: SpanKind::Server,
            name: Cow::Owned(format!("lce {route}")),
            start_time: pending.start,
            end_time: SystemTime::now(),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn a_run_span_is_exported_with_the_ids_sent_upstream() {
        let (layer, mut export) = pipeline("http://127.0.0.1:4318/").unwrap();
        assert_eq!(export.endpoint, "http://127.0.0.1:4318/v1/traces");
        let subscriber = tracing_subscriber::registry().with(layer);
        let cx = lce_gateway::TraceContext::from_traceparent(
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some("k=v"),
        );
        tracing::subscriber::with_default(subscriber, || {
            drop(cx.span("start", "run-1", "conv-1"));
        });
        let data = export.queue.try_recv().unwrap();
        assert_eq!(data.span_context.trace_id().to_bytes(), cx.trace_id());
        assert_eq!(data.span_context.span_id().to_bytes(), cx.span_id());
        assert_eq!(Some(data.parent_span_id.to_bytes()), cx.parent_id());
        assert_eq!(data.span_context.trace_state().header(), "k=v");
        let keys: Vec<_> = data.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["lce.route", "lce.run_id", "lce.conversation_id"]);
    }

    #[test]
    fn an_unsampled_span_is_not_exported() {
        let (layer, mut export) = pipeline("http://127.0.0.1:4318").unwrap();
        let subscriber = tracing_subscriber::registry().with(layer);
        let cx = lce_gateway::TraceContext::from_traceparent(
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
            None,
        );
        tracing::subscriber::with_default(subscriber, || {
            drop(cx.span("start", "run-1", "conv-1"));
            drop(tracing::info_span!("other").entered());
        });
        assert!(export.queue.try_recv().is_err());
    }

    #[test]
    fn only_plain_http_endpoints_are_taken() {
        for bad in [
            "https://c:4318",
            "c:4318",
            "http://",
            "http://u@c:1",
            "http://c:1/?q",
        ] {
            assert!(pipeline(bad).is_err(), "{bad}");
        }
        assert!(pipeline("http://collector:4318/otlp").is_ok());
    }
}
