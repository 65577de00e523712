//! [`GatewayBuilder`]: what a gateway is made of, checked once at
//! [`GatewayBuilder::build`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lce_core::{AuditSink, ThreadStore};
use lce_runlog::{LocalTail, MemoryRunLog, RunLog};
use lce_stream::{MemoryStore, TracingAudit};
use lce_types::Limits;

use axum::http::HeaderValue;

use crate::gateway::{Cors, Gateway, Ingest, InspectorGate, Settings};
use crate::tokens::{NoRandomness, ReadTokens, random_id};
use crate::upstream::{ScenarioError, ScenarioPlayer, Upstream};

/// The shortest token secret and ingest token taken, in bytes.
pub const MIN_SECRET_BYTES: usize = 16;

/// Builds a [`Gateway`]. Every option has a default but the upstream:
/// give [`upstream`](GatewayBuilder::upstream) or
/// [`scenarios`](GatewayBuilder::scenarios).
///
/// ```no_run
/// # async fn demo() -> Result<(), lce_gateway::BuildError> {
/// let gateway = lce_gateway::GatewayBuilder::new()
///     .scenarios("fixtures/scenarios")
///     .token_secret(b"a secret of 16 bytes or more".to_vec())
///     .build()
///     .await?;
/// let app: axum::Router = axum::Router::new().nest("/agents", gateway.router());
/// # let _ = app;
/// # Ok(()) }
/// ```
#[must_use = "a builder does nothing until built"]
pub struct GatewayBuilder {
    log: Option<Arc<dyn RunLog>>,
    store: Option<Arc<dyn ThreadStore>>,
    upstream: Option<Arc<dyn Upstream>>,
    scenarios: Option<PathBuf>,
    speed: f64,
    token_secret: Option<Vec<u8>>,
    cors_origins: Option<Vec<String>>,
    ingest_token: Option<String>,
    anonymous_ingest: bool,
    audit: Option<Arc<dyn AuditSink>>,
    settings: Settings,
}

impl std::fmt::Debug for GatewayBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("scenarios", &self.scenarios)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Default for GatewayBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a gateway could not be built.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Neither an upstream nor a scenarios folder was given.
    #[error("no upstream: give an upstream or a scenarios folder")]
    NoUpstream,
    /// The scenarios folder cannot be played.
    #[error("the scenarios cannot be played")]
    Scenarios(#[source] ScenarioError),
    /// The token secret is shorter than [`MIN_SECRET_BYTES`].
    #[error("the token secret must hold at least {MIN_SECRET_BYTES} bytes")]
    TokenSecretTooShort,
    /// The ingest token is shorter than [`MIN_SECRET_BYTES`].
    #[error("the ingest token must hold at least {MIN_SECRET_BYTES} bytes")]
    IngestTokenTooShort,
    /// The inspector's token is shorter than [`MIN_SECRET_BYTES`].
    #[error("the inspector token must hold at least {MIN_SECRET_BYTES} bytes")]
    InspectorTokenTooShort,
    /// The log is shared by replicas ([`RunLog::durable`]) and no token
    /// secret was given: every replica must sign with the same secret,
    /// given to each of them (a secret kept in the engine could be read
    /// by anyone who can read the engine, and lost with it).
    #[error("a run log shared by replicas needs a token secret given to every replica")]
    TokenSecretRequired,
    /// A CORS origin is not a header value (`cors_origins`).
    #[error("a CORS origin is not a valid header value")]
    InvalidCorsOrigin,
    /// The OS's random source failed.
    #[error("cannot make the replica's id")]
    NoRandomness(#[source] NoRandomness),
}

impl GatewayBuilder {
    /// A builder with the defaults: the memory log and thread store, audit
    /// records to `tracing`, runs taken over 10 s after their owner stops
    /// renewing, logs kept a day after their terminal, no push ingest, no
    /// `id:` lines on the POST routes.
    pub fn new() -> Self {
        GatewayBuilder {
            log: None,
            store: None,
            upstream: None,
            scenarios: None,
            speed: 1.0,
            token_secret: None,
            cors_origins: None,
            ingest_token: None,
            anonymous_ingest: false,
            audit: None,
            settings: Settings::default(),
        }
    }

    /// The run log (default: a [`MemoryRunLog`] keeping runs for
    /// [`retention`](GatewayBuilder::retention)). A log shared by replicas
    /// (`lce_redis::RedisRunLog`) makes runs resumable on any of them.
    pub fn log(mut self, log: Arc<dyn RunLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// The thread store the coordinator commits to (rules 13-15; default:
    /// in memory).
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where runs come from: an [`HttpUpstream`](crate::HttpUpstream), a
    /// [`ScenarioPlayer`], or a harness of your own running in-process.
    pub fn upstream(mut self, upstream: impl Upstream) -> Self {
        self.upstream = Some(Arc::new(upstream));
        self
    }

    /// The built-in player of the recorded runs in `dir` as the upstream
    /// (when no [`upstream`](GatewayBuilder::upstream) is given), paced at
    /// [`speed`](GatewayBuilder::speed).
    pub fn scenarios(mut self, dir: impl Into<PathBuf>) -> Self {
        self.scenarios = Some(dir.into());
        self
    }

    /// The scenario player's pacing: recorded gaps divided by `speed`
    /// (0 = no pauses; default 1).
    pub fn speed(mut self, speed: f64) -> Self {
        self.speed = speed;
        self
    }

    /// The secret read tokens are signed with (at least
    /// [`MIN_SECRET_BYTES`]); every replica must share it. Required with
    /// a log shared by replicas ([`RunLog::durable`]); with the memory log
    /// one is made at build by default.
    pub fn token_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.token_secret = Some(secret.into());
        self
    }

    /// The bearer token `POST /api/v1/runs` requires (at least
    /// [`MIN_SECRET_BYTES`]). Without it push ingest is off (404) unless
    /// [`anonymous_ingest`](GatewayBuilder::anonymous_ingest).
    pub fn ingest_token(mut self, token: impl Into<String>) -> Self {
        self.ingest_token = Some(token.into());
        self
    }

    /// Accept pushed runs without a token (a local demo only).
    pub fn anonymous_ingest(mut self, on: bool) -> Self {
        self.anonymous_ingest = on;
        self
    }

    /// The agent name in the stream, where the format has one.
    pub fn agent_name(mut self, name: impl Into<String>) -> Self {
        self.settings.agent_name = Some(name.into());
        self
    }

    /// The agent of AG-UI requests that name none in
    /// `forwardedProps.agentId`.
    pub fn default_agent(mut self, agent: impl Into<String>) -> Self {
        self.settings.default_agent = Some(agent.into());
        self
    }

    /// The per-run bounds the coordinator enforces (D19; default
    /// [`Limits::default`]). A pushed body's raw bytes are bounded by its
    /// `bytes_per_run` too (plus a line end per event of `events_per_run`).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.settings.limits = limits;
        self
    }

    /// Where every run's audit record goes (default: `tracing`).
    pub fn audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// How long after its owner stops renewing a run is ended by another
    /// replica (rule 12, D9); also the owner's lease. Default 10 s.
    pub fn takeover_after(mut self, lease: Duration) -> Self {
        self.settings.lease = lease.max(Duration::from_millis(10));
        self
    }

    /// How long the default memory log keeps a run after its terminal
    /// (default a day; a log given to [`log`](GatewayBuilder::log) has its
    /// own).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.settings.retention = retention;
        self
    }

    /// `id:` lines on the DA and AG-UI POST routes too (default off: their
    /// bytes stay exactly DA's). `GET /api/v1/runs/{id}/stream` always has
    /// them.
    pub fn sse_ids(mut self, on: bool) -> Self {
        self.settings.sse_ids = on;
        self
    }

    /// A client that disconnects cancels its run (D11's
    /// `run.cancelled{disconnect}`; default off: the run goes on into the
    /// log).
    pub fn cancel_on_disconnect(mut self, on: bool) -> Self {
        self.settings.cancel_on_disconnect = on;
        self
    }

    /// Runs this gateway drives at once (default 10,000): a start, resume,
    /// AG-UI request, push or invoke beyond it is `503 overloaded` with
    /// `Retry-After`, and nothing is called or written.
    pub fn max_runs(mut self, max: usize) -> Self {
        self.settings.max_runs = max;
        self
    }

    /// Answers browser pages from `origins` (CORS; off by default):
    /// preflights for the gateway's methods and request headers, and
    /// `X-Run-Id`, `X-Run-Token` exposed to the page. `*` among them
    /// allows any origin; none leaves CORS off. An origin that is not a
    /// header value is
    /// [`BuildError::InvalidCorsOrigin`].
    pub fn cors_origins<I, O>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = O>,
        O: Into<String>,
    {
        self.cors_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Serves `GET /metrics` with what `render` gives, as the Prometheus
    /// text format (e.g. a `metrics-exporter-prometheus` handle's
    /// `render`); without it there is no such route. The gateway counts
    /// through the `metrics` facade whatever recorder is installed
    /// (`docs/gateway.md`, "Metrics"); [`crate::metrics_router`] serves
    /// the same on a listener of its own.
    pub fn metrics_endpoint(mut self, render: crate::MetricsRender) -> Self {
        self.settings.metrics = Some(render);
        self
    }

    /// How long a run may go on (default [`DEFAULT_RUN_DEADLINE`](crate::DEFAULT_RUN_DEADLINE),
    /// an hour; zero: no deadline): a run still going then ends with
    /// `run.cancelled{deadline}`, and the upstream's cancel is called for
    /// a run it gave.
    pub fn run_deadline(mut self, deadline: Duration) -> Self {
        self.settings.run_deadline = (!deadline.is_zero()).then_some(deadline);
        self
    }

    /// The largest JSON request body (DA's and AG-UI's routes; default
    /// 1 MiB): a larger one is `413 body_too_large`. A push is a stream and
    /// is not bounded by it (D19's bytes per run bound it, see
    /// [`limits`](GatewayBuilder::limits)).
    pub fn max_request_bytes(mut self, max: usize) -> Self {
        self.settings.max_request_bytes = max;
        self
    }

    /// The longest gap between two chunks of a JSON request body (default
    /// 30 s): a body that stops arriving for longer is `408 body_timeout`
    /// (and the connection closes, its rest unread). Zero: no bound (a host
    /// whose own server bounds bodies in time).
    pub fn body_idle_timeout(mut self, idle: Duration) -> Self {
        self.settings.body_idle_timeout = idle;
        self
    }

    /// The longest a pushing harness may send no line (default 300 s):
    /// then its run ends as a stream that closed without a terminal (rule
    /// 12: the coordinator's `run.error{provider_stream_closed}`) and the
    /// push is answered with its summary. Before the first line it is
    /// `408 body_timeout` (no run exists yet). Zero: no bound.
    pub fn ingest_idle_timeout(mut self, idle: Duration) -> Self {
        self.settings.ingest_idle_timeout = idle;
        self
    }

    /// Turns the inspector on (default off: `/inspect` is a 404): `GET
    /// /inspect`, a page listing the runs this replica drives (open first,
    /// then the most recent) and showing one run's events live, with the
    /// coordinator's interventions marked by rule. It shows payload
    /// excerpts: a development tool. It answers only a loopback peer (the
    /// server must give requests `ConnectInfo<SocketAddr>`, as
    /// [`server::serve_http`](crate::server::serve_http) does; a host that
    /// does not gets 403s) unless [`inspector_token`](Self::inspector_token)
    /// is given. While on, the gateway keeps an index of the last
    /// [`INSPECTOR_RUNS`](crate::INSPECTOR_RUNS) runs it drove, in this
    /// process only (nothing is written to the run log for it).
    pub fn inspector(mut self, on: bool) -> Self {
        self.settings.inspector = match (on, &self.settings.inspector) {
            (false, _) => InspectorGate::Off,
            (true, InspectorGate::Token(t)) => InspectorGate::Token(t.clone()),
            (true, _) => InspectorGate::Loopback,
        };
        self
    }

    /// Turns the inspector on behind `token` (at least [`MIN_SECRET_BYTES`]):
    /// its data requests, from any address, need `Authorization: Bearer
    /// TOKEN` (compared in constant time, never logged); its page (static
    /// bytes, no data) loads from any address and takes the token from the
    /// URL fragment `#token=...`.
    pub fn inspector_token(mut self, token: impl Into<String>) -> Self {
        self.settings.inspector = InspectorGate::Token(token.into());
        self
    }

    /// Idle time before an `agui-v1` keep-alive comment (default 15 s;
    /// zero: none).
    pub fn keepalive(mut self, every: Duration) -> Self {
        self.settings.keepalive = every;
        self
    }

    /// Builds the gateway: loads the scenarios, gets the token secret, and
    /// starts the sweeper that ends orphaned runs (inside the current tokio
    /// runtime).
    pub async fn build(self) -> Result<Gateway, BuildError> {
        let upstream: Arc<dyn Upstream> = match (self.upstream, &self.scenarios) {
            (Some(upstream), _) => upstream,
            (None, Some(dir)) => {
                Arc::new(ScenarioPlayer::load(dir, self.speed).map_err(BuildError::Scenarios)?)
            }
            (None, None) => return Err(BuildError::NoUpstream),
        };
        let log = match self.log {
            // Readers of the runs this replica writes take their entries
            // from memory, not back from the engine (docs/gateway.md).
            Some(log) if log.durable() => {
                Arc::new(LocalTail::new(log, self.settings.retention)) as Arc<dyn RunLog>
            }
            Some(log) => log,
            None => Arc::new(MemoryRunLog::with_retention(self.settings.retention)),
        };
        let store = self.store.unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let secret = match self.token_secret {
            Some(secret) if secret.len() < MIN_SECRET_BYTES => {
                return Err(BuildError::TokenSecretTooShort);
            }
            Some(secret) => secret,
            None if log.durable() => return Err(BuildError::TokenSecretRequired),
            None => random_id().map_err(BuildError::NoRandomness)?.into_bytes(),
        };
        let ingest = match (self.ingest_token, self.anonymous_ingest) {
            (Some(token), _) if token.len() < MIN_SECRET_BYTES => {
                return Err(BuildError::IngestTokenTooShort);
            }
            (Some(token), _) => Ingest::Bearer(token),
            (None, true) => Ingest::Anonymous,
            (None, false) => Ingest::Off,
        };
        let mut settings = self.settings;
        if matches!(&settings.inspector, InspectorGate::Token(t) if t.len() < MIN_SECRET_BYTES) {
            return Err(BuildError::InspectorTokenTooShort);
        }
        settings.cors = match self.cors_origins {
            None => None,
            Some(origins) if origins.is_empty() => None,
            Some(origins) if origins.iter().any(|o| o == "*") => Some(Cors::Any),
            Some(origins) => Some(Cors::List(
                origins
                    .iter()
                    .map(|o| HeaderValue::from_str(o).map_err(|_| BuildError::InvalidCorsOrigin))
                    .collect::<Result<_, _>>()?,
            )),
        };
        let replica = random_id().map_err(BuildError::NoRandomness)?;
        let audit = self.audit.unwrap_or_else(|| Arc::new(TracingAudit));
        Ok(Gateway::start(
            log,
            store,
            upstream,
            audit,
            ReadTokens::new(secret),
            ingest,
            replica,
            settings,
        ))
    }
}
