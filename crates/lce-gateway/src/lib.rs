//! `lce-gateway`: lce's gateway as a library (`gateway.md`): durable,
//! resumable runs behind DA's and AG-UI's routes, as an axum `Router` a
//! platform nests in its own server, next to its own routes and layers.
//!
//! ```text
//! client ──HTTP──▶ Gateway::router() ──▶ Upstream::open ──▶ coordinator ──▶ RunLog
//!                        ▲                                                   │
//!                        └──────────── Subscription (encoded, SSE ids) ◀─────┘
//! ```
//!
//! - [`GatewayBuilder`] → [`Gateway`] (cheap to clone):
//!   [`Gateway::router`] holds every route, [`Gateway::shutdown`] ends or
//!   releases the runs it drives.
//! - [`Upstream`]: where runs come from. [`HttpUpstream`] (a harness over
//!   HTTP, `docs/upstream.md`), [`ScenarioPlayer`] (recorded runs), or a
//!   harness in Rust running in-process with no HTTP hop.
//! - [`ApiError`]: every error answer (a JSON body with a fixed message and
//!   code).
//! - [`server`]: the hardened accept loop `lce serve` runs the router on
//!   (a header timeout, connection limits overall and per address, a write
//!   timeout, a graceful shutdown; request bodies are bounded by the router
//!   itself, see [`GatewayBuilder::body_idle_timeout`] and
//!   [`GatewayBuilder::ingest_idle_timeout`]);
//!   [`FileAudit`] writes audit records to a file off the async path.
//!
//! Routes (each answers a JSON [`ApiError`] before any stream starts):
//!
//! | route | what |
//! |---|---|
//! | `POST /api/v1/chat/stream/start` | DA's start: SSE of a new run (`custom`, `agui`, `agui-v1`), `X-Run-Id`, `X-Run-Token` |
//! | `POST /api/v1/chat/stream/resume` | DA's resume: SSE of the run that continues an interrupted one |
//! | `POST /api/v1/chat/stream/cancel` | cancels the conversation's running run, on any replica |
//! | `POST /api/v1/chat/invoke` | DA's non-streaming answer |
//! | `POST /api/v1/agui` | AG-UI's `RunAgentInput` in, `agui-v1` SSE out |
//! | `GET /api/v1/runs/{run_id}/stream` | a run from the log, after `Last-Event-ID`, with `id:` lines (read token required) |
//! | `POST /api/v1/runs` | push ingest: a harness's canonical JSON Lines (ingest token required) |
//! | `GET /healthz`, `GET /readyz` | the probes: alive; ready to take runs (503 when draining or when the log engine does not answer) |
//! | `GET /metrics` | with [`GatewayBuilder::metrics_endpoint`]: what the `metrics` facade's recorder renders ([`metrics_router`] serves it alone) |
//! | `GET /inspect` (and `/inspect/...`) | with [`GatewayBuilder::inspector`]: a development page showing this replica's runs live (loopback only, or [`GatewayBuilder::inspector_token`]) |
//!
//! Every run is written to the run log before a client sees a byte of it,
//! and every client reads its run back from the log, so a client that
//! reconnects to any replica sharing the log resumes where it stopped.
//! Nothing here logs a token, a secret, an `Authorization` value or a
//! payload: only run ids, positions, counts and kinds.
//!
//! Tracing ([`trace_context`]): a client's W3C `traceparent` is continued
//! (a new trace without one); the upstream gets lce's span as the parent
//! ([`Forwarded`], [`RunRequest::trace_context`]), and each run's request
//! is a `tracing` span naming those ids, which the host may export (`lce
//! serve --otlp-endpoint` does, over OTLP; this crate depends on no
//! OpenTelemetry crate).
//!
//! May depend on: the lce layers below (`lce-types`, `lce-core`,
//! `lce-wire`, `lce-stream`, `lce-runlog`, `lce-encode-custom` for the
//! invoke answer), `axum`, `hyper` and `hyper-util` (the routes, the
//! upstream client, the accept loop), `tokio`, `tokio-util`, `futures`,
//! `bytes`, `serde`, `serde_json`, `hmac`, `sha2`, `getrandom`, `memchr`,
//! `tower-http` (CORS only), `tower` (its `Layer`: the peer's `ConnectInfo`), `metrics` (the facade, no recorder),
//! `pin-project-lite`, `thiserror`, `tracing`. No engine client: a Redis
//! log comes in through [`GatewayBuilder::log`].

mod audit;
mod body;
mod builder;
mod error;
/// Seams for the fuzz harnesses (`docs/reliability.md`); not a stable API.
#[doc(hidden)]
pub mod fuzzing;
mod gateway;
mod ids;
mod inspect;
mod invoke;
mod metrics;
mod owner;
mod routes;
pub mod server;
mod sse;
mod tokens;
pub mod trace_context;
mod upstream;

pub use audit::{AUDIT_QUEUE, FileAudit, audit_json};
pub use builder::{BuildError, GatewayBuilder, MIN_SECRET_BYTES};
pub use error::{ApiError, UpstreamErrorKind};
pub use gateway::{DEFAULT_RUN_DEADLINE, Gateway};
pub use ids::{MAX_ID_BYTES, is_valid_id};
pub use inspect::INSPECTOR_RUNS;
pub use invoke::accumulate;
pub use metrics::{MetricsRender, PROMETHEUS_TEXT, metrics_router};
pub use tokens::{NoRandomness, ReadTokens, SecretFileError, random_id, read_secret_file};
pub use trace_context::TraceContext;
pub use upstream::http::InvalidUpstreamUrl;
pub use upstream::{
    EventStream, Forwarded, HttpUpstream, RunInput, RunRequest, ScenarioError, ScenarioPlayer,
    Upstream, UpstreamError,
};
