//! The logs and traces of a gateway process: the `tracing` subscriber.
//!
//! Logs go to stderr as text (the default) or JSON (`--log-format json`:
//! one object a line, `timestamp`, `level`, `target`, `message` and the
//! event's fields at the top level, and `span` naming the run's request
//! the event belongs to, ids only), filtered by `RUST_LOG` (tracing's
//! `EnvFilter` syntax; `info` when unset). Like every log of lce they hold
//! no payload, token, secret or `Authorization`.
//!
//! With `--otlp-endpoint URL` (the `otlp` cargo feature), the spans of
//! run requests (`lce_gateway::trace_context`) are also exported over
//! OTLP/HTTP; `RUST_LOG` does not filter them.

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::TelemetryError;

#[cfg(feature = "otlp")]
pub use crate::otlp::{RunningExport, SpanExport};

/// Without the `otlp` feature there is no span export (this type has no
/// value).
#[cfg(not(feature = "otlp"))]
#[derive(Debug)]
pub enum SpanExport {}

/// Without the `otlp` feature there is no span export (this type has no
/// value).
#[cfg(not(feature = "otlp"))]
#[derive(Debug)]
pub enum RunningExport {}

#[cfg(not(feature = "otlp"))]
impl SpanExport {
    /// Never called: there is no value.
    pub async fn start(self) -> Result<RunningExport, TelemetryError> {
        match self {}
    }
}

#[cfg(not(feature = "otlp"))]
impl RunningExport {
    /// Never called: there is no value.
    pub async fn shutdown(self) {
        match self {}
    }
}

/// The format of the logs on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line, every field at the top level.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = TelemetryError;

    /// `text` or `json`.
    fn from_str(s: &str) -> Result<Self, TelemetryError> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(TelemetryError("must be `text` or `json`".to_owned())),
        }
    }
}

/// Installs the subscriber of `lce serve`: logs in `format` filtered by
/// `RUST_LOG`, and, with `otlp_endpoint`, the span layer whose export
/// [`SpanExport::start`] starts once the runtime runs.
pub fn init(
    format: LogFormat,
    otlp_endpoint: Option<&str>,
) -> Result<Option<SpanExport>, TelemetryError> {
    // Invalid directives are reported on stderr and skipped; unset or
    // empty means `info`.
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .from_env_lossy();
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed(),
    };
    let (spans, export) = span_layer(otlp_endpoint)?;
    let layers: Vec<Box<dyn Layer<Registry> + Send + Sync>> =
        std::iter::once(logs).chain(spans).collect();
    // Another subscriber already set (never in `lce`): keep it.
    let _ = tracing_subscriber::registry().with(layers).try_init();
    Ok(export)
}

type SpanLayer = Option<Box<dyn Layer<Registry> + Send + Sync>>;

#[cfg(feature = "otlp")]
fn span_layer(endpoint: Option<&str>) -> Result<(SpanLayer, Option<SpanExport>), TelemetryError> {
    match endpoint {
        Some(endpoint) => {
            let (layer, export) = crate::otlp::pipeline(endpoint)?;
            // Only the run spans reach it (RUST_LOG does not filter them).
            let layer = layer.with_filter(tracing_subscriber::filter::filter_fn(|m| {
                crate::otlp::is_run_span(m)
            }));
            Ok((Some(layer.boxed()), Some(export)))
        }
        None => Ok((None, None)),
    }
}

#[cfg(not(feature = "otlp"))]
fn span_layer(endpoint: Option<&str>) -> Result<(SpanLayer, Option<SpanExport>), TelemetryError> {
    match endpoint {
        Some(_) => Err(TelemetryError(
            "--otlp-endpoint needs an lce built with the `otlp` feature".to_owned(),
        )),
        None => Ok((None, None)),
    }
}
