//! `lce serve`: the command-line shell around the gateway
//! (`lce::gateway`): parse options, build, listen, handle signals. Every
//! route and guarantee is the library's (`crates/lce-gateway`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lce::gateway::server::{ServerLimits, serve_http};
use lce::gateway::{FileAudit, GatewayBuilder, HttpUpstream};

use crate::signals::Signals;

/// The shortest token secret and ingest token taken.
const MIN: usize = lce::gateway::MIN_SECRET_BYTES;
use crate::usage::UsageError;
use lce::telemetry::{LogFormat, SpanExport};

/// What `lce serve --help` shows after the options.
const AFTER_HELP: &str = "\
Routes (docs/gateway.md): POST /api/v1/chat/stream/start, .../resume and
.../cancel (DA's; protocol custom, agui or agui-v1), POST /api/v1/chat/invoke
(DA's non-streaming invoke), POST /api/v1/agui (AG-UI RunAgentInput in,
agui-v1 out), GET /api/v1/runs/{run_id}/stream (a run from the log, resumed
after Last-Event-ID; needs X-Run-Token), POST /api/v1/runs (push ingest),
GET /healthz (200 while it serves), GET /readyz (200 while it takes runs;
503 when draining or the log engine does not answer within 1 s), GET /metrics
(Prometheus text; on --metrics-addr instead when given).
Every option may also come from its LCE_* environment variable (shown with
each option); a flag beats the variable.
Runs come from --upstream (a harness, docs/upstream.md), else from the
scenarios: a start plays SCENARIOS/<agent_id>.jsonl.
The first stdout line is `listening on http://ADDR`.
Exit status: 0 after SIGTERM or Ctrl-C, 2 when it cannot start (usage,
scenarios, address, log) or the server fails.

Example:
  lce serve --addr 127.0.0.1:0 --scenarios fixtures/scenarios --speed 0";

/// The gateway: durable, resumable runs behind DA's and AG-UI's routes.
///
/// Every run goes through the coordinator into a run log (memory, or Redis
/// shared by replicas) before a client reads it back, encoded; a client
/// that reconnects resumes where it stopped. Audit records (payload free)
/// are logged to stderr, and appended to `--audit-log` FILE.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(
        long,
        env = "LCE_ADDR",
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    addr: SocketAddr,
    /// Folder of `*.jsonl` scenarios, one run each: the built-in upstream.
    ///
    /// A start's `agent_id` names the scenario DIR/<agent_id>.jsonl; a
    /// resume plays the scenario DIR/resume.json maps it to. Not read with
    /// --upstream.
    #[arg(
        long,
        env = "LCE_SCENARIOS",
        value_name = "DIR",
        default_value = "fixtures/scenarios"
    )]
    scenarios: PathBuf,
    /// A harness over HTTP (`http://HOST:PORT[/PATH]`): runs come from
    /// `POST URL/runs`, cancels go to `POST URL/runs/{run_id}/cancel`
    /// (docs/upstream.md). Without it, runs come from --scenarios.
    #[arg(long, env = "LCE_UPSTREAM", value_name = "URL")]
    upstream: Option<String>,
    /// Seconds to connect to the upstream and receive its answer's header.
    #[arg(long, env = "LCE_UPSTREAM_CONNECT_TIMEOUT", value_name = "SECS", default_value = "10", value_parser = positive_secs)]
    upstream_connect_timeout: Duration,
    /// Pacing: recorded gaps divided by F; 0 = no pauses.
    ///
    /// Each event waits the gap between its timestamp and the one before,
    /// divided by F, at most 5 s.
    #[arg(long, env = "LCE_SPEED", value_name = "F", default_value_t = 1.0, value_parser = parse_speed)]
    speed: f64,
    /// Idle seconds before an `agui-v1` keep-alive comment.
    ///
    /// DA's formats (`custom`, `agui`) send none.
    #[arg(long, env = "LCE_KEEPALIVE", value_name = "SECS", default_value = "15", value_parser = positive_secs)]
    keepalive: Duration,
    /// Agent name in the stream, where the format has one.
    #[arg(long, env = "LCE_AGENT_NAME", value_name = "NAME")]
    agent_name: Option<String>,
    /// Scenario for AG-UI requests that name none.
    ///
    /// An AG-UI request names its scenario in `forwardedProps.agentId`.
    #[arg(long, env = "LCE_DEFAULT_SCENARIO", value_name = "NAME")]
    default_scenario: Option<String>,
    /// Also append every audit record to FILE, as JSON Lines.
    #[arg(long, env = "LCE_AUDIT_LOG", value_name = "FILE")]
    audit_log: Option<PathBuf>,
    /// Runs this replica drives at once: a start, resume, AG-UI request,
    /// push or invoke beyond N is answered 503 (code `overloaded`, with
    /// Retry-After) and nothing is called or written.
    #[arg(long, env = "LCE_MAX_RUNS", value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_runs: u32,
    /// The largest JSON request body in bytes (DA's and AG-UI's routes):
    /// a larger one is answered 413 (code `body_too_large`). A push is a
    /// stream and is not bounded by it.
    #[arg(long, env = "LCE_MAX_REQUEST_BYTES", value_name = "BYTES", default_value_t = 1024 * 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_request_bytes: u32,
    /// Seconds a run may go on (0: no deadline): a run still going then
    /// ends with `run.cancelled` (reason `deadline`) and the upstream's
    /// cancel is called.
    #[arg(long, env = "LCE_RUN_DEADLINE", value_name = "SECS", default_value = "3600", value_parser = deadline_secs)]
    run_deadline: Duration,
    /// Runtime worker threads (default: the machine's cores).
    #[arg(long, env = "LCE_WORKER_THREADS", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    worker_threads: Option<u16>,
    /// Serve `GET /metrics` on this address instead of the main one (a
    /// listener of its own, e.g. on an internal interface).
    #[arg(long, env = "LCE_METRICS_ADDR", value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// A browser page's origin allowed to call the gateway (CORS;
    /// repeatable; `*` for any; off by default): preflights are answered
    /// and `X-Run-Id`, `X-Run-Token` are exposed to the page. In the
    /// environment, origins are separated by commas.
    #[arg(
        long = "cors-origin",
        env = "LCE_CORS_ORIGIN",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    cors_origins: Vec<String>,
    /// Logs on stderr: `text` lines, or `json` (one object a line with
    /// `timestamp`, `level`, `target`, `message` and the event's fields at
    /// the top level). Levels and filters come from RUST_LOG (tracing's
    /// EnvFilter syntax, e.g. `warn` or `info,lce::upstream=debug`;
    /// `info` when unset). No log holds a payload, token or secret.
    #[arg(
        long,
        env = "LCE_LOG_FORMAT",
        value_name = "FORMAT",
        default_value = "text",
        value_parser = parse_log_format
    )]
    pub(crate) log_format: LogFormat,
    /// Export the span of each run request (ids, route; no payload) over
    /// OTLP/HTTP protobuf to `URL/v1/traces` (`http://HOST:PORT[/PATH]`,
    /// e.g. a collector's http://localhost:4318). Spans go every
    /// OTEL_BSP_SCHEDULE_DELAY ms (default 5000) and at shutdown.
    #[arg(long, env = "LCE_OTLP_ENDPOINT", value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    #[command(flatten)]
    log: LogArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

/// Where runs are logged, who may read and push them.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Run log and tokens")]
struct LogArgs {
    /// Where runs are logged: `memory` (this process only, the default),
    /// `redis://HOST:PORT[/DB]` (Redis Streams, shared by replicas),
    /// `redis+sentinel://HOST:PORT[,...]/MASTER[/DB]` or
    /// `redis+cluster://HOST:PORT[,...]`.
    #[arg(long, env = "LCE_LOG", value_name = "LOG", default_value = "memory")]
    log: String,
    /// Replicas of the Redis primary that must hold an append before its
    /// frames reach a client (`WAIT`): 1 keeps every frame a client saw
    /// across a failover.
    #[arg(long, env = "LCE_LOG_REPLICAS", value_name = "N", default_value = "0")]
    log_replicas: u32,
    /// Milliseconds an append waits for those replicas before it is tried
    /// again (within --log-timeout).
    #[arg(
        long,
        env = "LCE_LOG_REPLICA_TIMEOUT",
        value_name = "MS",
        default_value = "1000"
    )]
    log_replica_timeout: u64,
    /// Seconds one operation on Redis may take, retries included, before
    /// it fails (an append: the run ends as `log_failed`). Above the
    /// failover time of the deployment's Sentinel or Cluster.
    #[arg(long, env = "LCE_LOG_TIMEOUT", value_name = "SECS", default_value = "5", value_parser = positive_secs)]
    log_timeout: Duration,
    /// Seconds after which a run whose owner stopped renewing its lease
    /// (a replica that died) is ended by another replica (rule 12, D9).
    #[arg(long, env = "LCE_TAKEOVER_AFTER", value_name = "SECS", default_value = "10", value_parser = positive_secs)]
    takeover_after: Duration,
    /// Seconds a run's log is kept after its terminal (with Redis, an
    /// unfinished run's keys expire this long after its owner's last
    /// renewal).
    #[arg(long, env = "LCE_RETENTION", value_name = "SECS", default_value = "86400", value_parser = positive_secs)]
    retention: Duration,
    /// Seconds a thread's revisions are kept in Redis after its last
    /// commit (default 30 days).
    #[arg(long, env = "LCE_THREAD_RETENTION", value_name = "SECS", default_value = "2592000", value_parser = positive_secs)]
    thread_retention: Duration,
    /// A file holding the Redis password (trailing whitespace ignored), so
    /// that it is never written on the command line. The environment
    /// variable LCE_LOG_PASSWORD is read when this option is not given; a
    /// password in the --log url is used only when neither is.
    #[arg(long, env = "LCE_LOG_PASSWORD_FILE", value_name = "FILE")]
    log_password_file: Option<PathBuf>,
    /// A file holding the Sentinels' own password (their `requirepass`),
    /// for a `redis+sentinel://` --log; the environment variable
    /// LCE_LOG_SENTINEL_PASSWORD is read when this option is not given.
    /// Without either, Sentinels are asked without a password.
    #[arg(long, env = "LCE_LOG_SENTINEL_PASSWORD_FILE", value_name = "FILE")]
    log_sentinel_password_file: Option<PathBuf>,
    /// Add `id:` lines to the DA and AG-UI POST routes too (for clients
    /// that reconnect with `Last-Event-ID`); without it their bytes stay
    /// exactly DA's. `GET /api/v1/runs/{id}/stream` always has them.
    #[arg(long, env = "LCE_SSE_IDS")]
    sse_ids: bool,
    /// A client that disconnects cancels its run (`run.cancelled
    /// {disconnect}`, D11 before the gateway). By default the run goes on
    /// into the log for the client's return.
    #[arg(long, env = "LCE_CANCEL_ON_DISCONNECT")]
    cancel_on_disconnect: bool,
    /// The secret read tokens are signed with (at least 16 bytes; trailing
    /// whitespace is ignored), the same file on every replica. Required
    /// with --log redis://...; with the memory log one is made at start
    /// by default.
    #[arg(long, env = "LCE_TOKEN_SECRET_FILE", value_name = "FILE")]
    token_secret_file: Option<PathBuf>,
    /// The bearer token `POST /api/v1/runs` requires. Without it (and
    /// without --allow-anonymous-ingest) push ingest is off (404).
    #[arg(long, env = "LCE_INGEST_TOKEN_FILE", value_name = "FILE")]
    ingest_token_file: Option<PathBuf>,
    /// Accept pushed runs without a token (a local demo only).
    #[arg(long, env = "LCE_ALLOW_ANONYMOUS_INGEST")]
    allow_anonymous_ingest: bool,
    /// Serve `GET /inspect`: this replica's runs live, payloads included (a
    /// development tool), to loopback peers only unless a token file is given.
    #[arg(long, env = "LCE_INSPECTOR")]
    inspector: bool,
    /// Turns the inspector on behind a token: every inspector data request,
    /// from any address, needs `Authorization: Bearer` this file's token.
    #[arg(long, env = "LCE_INSPECTOR_TOKEN_FILE", value_name = "FILE")]
    inspector_token_file: Option<PathBuf>,
}

/// Limits on what a client may hold open, and how the server stops.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Server limits and shutdown")]
struct LimitArgs {
    /// Seconds a client has to send a whole request header.
    ///
    /// Counted from when the connection opens and, on a kept-alive
    /// connection, from the end of the previous response (so it also closes
    /// idle connections). When it runs out the connection is closed without
    /// an answer. More than 0, at most 86400.
    #[arg(long, env = "LCE_HEADER_TIMEOUT", value_name = "SECS", default_value = "10", value_parser = limit_secs)]
    header_timeout: Duration,
    /// Seconds a JSON request body may stop arriving before it is cut.
    ///
    /// The request is answered 408 with a JSON error (code `body_timeout`)
    /// and the connection is closed. A body over --max-request-bytes is
    /// answered 413 (code `body_too_large`). A push is bounded by
    /// --ingest-idle-timeout instead. More than 0, at most 86400.
    #[arg(long, env = "LCE_BODY_IDLE_TIMEOUT", value_name = "SECS", default_value = "30", value_parser = limit_secs)]
    body_idle_timeout: Duration,
    /// Seconds a pushing harness may send no line (POST /api/v1/runs).
    ///
    /// Its run then ends as a stream that closed without a terminal (rule
    /// 12: `run.error`, code `provider_stream_closed`) and the push is
    /// answered 200 with its summary; with no first line yet it is answered
    /// 408 (code `body_timeout`). A push body has no size cap of the
    /// server's: D19's bytes per run (256 MiB) bound it. More than 0, at
    /// most 86400.
    #[arg(long, env = "LCE_INGEST_IDLE_TIMEOUT", value_name = "SECS", default_value = "300", value_parser = limit_secs)]
    ingest_idle_timeout: Duration,
    /// Connections served at once.
    ///
    /// Beyond N, new connections are not accepted: they wait in the kernel's
    /// listen backlog until a served connection closes. At least 1.
    #[arg(long, env = "LCE_MAX_CONNECTIONS", value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Connections served at once from one IP address.
    ///
    /// A connection from an address that holds N already is closed at once,
    /// unanswered (logged as a count). Behind a proxy or load balancer every
    /// connection comes from its address: set N to --max-connections there.
    /// At least 1.
    #[arg(long, env = "LCE_MAX_CONNECTIONS_PER_IP", value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_ip: u32,
    /// Seconds a client may accept no byte while the server has bytes for it.
    ///
    /// The connection is then closed (a reader that stopped reading); its
    /// run and the run's other readers go on. More than 0, at most 86400.
    #[arg(long, env = "LCE_WRITE_TIMEOUT", value_name = "SECS", default_value = "30", value_parser = limit_secs)]
    write_timeout: Duration,
    /// Seconds between SIGTERM/Ctrl-C and the listener's close.
    ///
    /// On the signal `GET /readyz` answers 503 (`draining`) at once, so a
    /// load balancer stops sending new clients, while new runs are still
    /// taken for SECS; then the listener stops accepting and the shutdown
    /// grace begins. A second signal ends the delay at once. At least 0,
    /// at most 86400.
    #[arg(long, env = "LCE_DRAIN_DELAY", value_name = "SECS", default_value = "5", value_parser = grace_secs)]
    drain_delay: Duration,
    /// Seconds in-flight responses may take to finish after the drain.
    ///
    /// After --drain-delay the server stops accepting and closes
    /// kept-alive connections between requests. Then the runs still going
    /// are ended: with the in-memory run log (the default) as
    /// `run.cancelled` (reason `shutdown`, audited): `agui-v1` streams end
    /// with `RUN_FINISHED` (outcome `cancelled`), `custom` and `agui`
    /// streams after their last whole frame. The server exits 0 as soon as
    /// the connections have closed, at most 5 s after the grace. A second
    /// signal ends the grace period at once. At least 0, at most 86400.
    #[arg(long, env = "LCE_SHUTDOWN_GRACE", value_name = "SECS", default_value = "20", value_parser = grace_secs)]
    shutdown_grace: Duration,
}

/// Seconds as a `Duration`: finite, above 0 (or 0 when `zero_ok`), at most
/// `max`. The one parser behind every seconds option.
fn parse_secs(s: &str, zero_ok: bool, max: f64) -> Result<Duration, String> {
    let ok =
        |secs: f64| secs.is_finite() && secs <= max && (secs > 0.0 || (zero_ok && secs == 0.0));
    match s.parse::<f64>() {
        Ok(secs) if ok(secs) => Duration::try_from_secs_f64(secs).map_err(|e| e.to_string()),
        _ => Err(format!(
            "must be a number of seconds {} 0 and <= {max}",
            if zero_ok { ">=" } else { ">" }
        )),
    }
}

/// The longest a server limit may be set to: a day.
const MAX_LIMIT_SECS: f64 = 86_400.0;
/// The longest any other time may be set to: ten years.
const MAX_SECS: f64 = 10.0 * 365.0 * 86_400.0;

fn positive_secs(s: &str) -> Result<Duration, String> {
    parse_secs(s, false, MAX_SECS)
}

fn limit_secs(s: &str) -> Result<Duration, String> {
    parse_secs(s, false, MAX_LIMIT_SECS)
}

fn grace_secs(s: &str) -> Result<Duration, String> {
    parse_secs(s, true, MAX_LIMIT_SECS)
}

fn deadline_secs(s: &str) -> Result<Duration, String> {
    parse_secs(s, true, MAX_SECS)
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(speed) if speed.is_finite() && speed >= 0.0 => Ok(speed),
        _ => Err("must be a finite number >= 0 (0 = no pacing)".to_owned()),
    }
}

/// Runs `lce serve`; returns when the server stops (SIGTERM or Ctrl-C).
/// `spans`: the span export of --otlp-endpoint, started on the runtime.
pub(crate) fn run(args: Args, spans: Option<SpanExport>) -> Result<bool, UsageError> {
    let workers = args.worker_threads.map_or_else(
        || std::thread::available_parallelism().map_or(2, usize::from),
        usize::from,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let export = match spans {
            Some(spans) => Some(spans.start().await.map_err(|e| UsageError(e.to_string()))?),
            None => None,
        };
        let served = serve(args).await;
        // The spans of the last runs go out before the process ends.
        if let Some(export) = export {
            export.shutdown().await;
        }
        served
    })
}

/// An error and its sources, one message (no payload reaches these).
fn chain(e: &dyn std::error::Error) -> String {
    let all: Vec<String> = std::iter::successors(Some(e), |e| e.source())
        .map(ToString::to_string)
        .collect();
    all.join(": ")
}

/// The gateway `args` describe, before its log, audit and metrics.
fn builder(args: &Args) -> Result<GatewayBuilder, UsageError> {
    let mut builder = GatewayBuilder::new()
        .speed(args.speed)
        .keepalive(args.keepalive)
        .takeover_after(args.log.takeover_after)
        .retention(args.log.retention)
        .sse_ids(args.log.sse_ids)
        .cancel_on_disconnect(args.log.cancel_on_disconnect)
        .anonymous_ingest(args.log.allow_anonymous_ingest)
        .max_runs(usize::try_from(args.max_runs).unwrap_or(usize::MAX))
        .max_request_bytes(usize::try_from(args.max_request_bytes).unwrap_or(usize::MAX))
        .run_deadline(args.run_deadline)
        .cors_origins(args.cors_origins.iter().cloned())
        .body_idle_timeout(args.limits.body_idle_timeout)
        .ingest_idle_timeout(args.limits.ingest_idle_timeout);
    builder = match &args.upstream {
        Some(url) => builder.upstream(
            HttpUpstream::new(url, args.upstream_connect_timeout).map_err(|_| {
                UsageError(format!(
                    "--upstream must be http://HOST:PORT[/PATH], not {url:?}"
                ))
            })?,
        ),
        None => builder.scenarios(&args.scenarios),
    };
    if let Some(name) = &args.agent_name {
        builder = builder.agent_name(name);
    }
    if let Some(agent) = &args.default_scenario {
        builder = builder.default_agent(agent);
    }
    Ok(builder)
}

async fn serve(args: Args) -> Result<bool, UsageError> {
    let audit = match &args.audit_log {
        Some(path) => Some(Arc::new(FileAudit::open(path).map_err(|e| {
            UsageError(format!("cannot open audit log {}: {e}", path.display()))
        })?)),
        None => None,
    };
    let mut builder = builder(&args)?;
    if let Some(audit) = &audit {
        builder = builder.audit(audit.clone());
    }
    builder = with_log(builder, &args.log).await?;
    let render = lce::telemetry::install_prometheus().map_err(|e| UsageError(e.to_string()))?;
    let metrics_listener = match args.metrics_addr {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| UsageError(format!("cannot listen on --metrics-addr {addr}: {e}")))?,
        ),
        None => {
            builder = builder.metrics_endpoint(render.clone());
            None
        }
    };
    let gateway = builder.build().await.map_err(|e| match e {
        lce::gateway::BuildError::TokenSecretRequired => UsageError(
            "--log redis://... needs --token-secret-file FILE: the secret every replica \
             signs read tokens with, given to each of them"
                .to_owned(),
        ),
        e => UsageError(chain(&e)),
    })?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| UsageError(format!("cannot listen on {}: {e}", args.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| UsageError(e.to_string()))?;
    let signals = Signals::new()
        .map_err(|e| UsageError(format!("cannot install the signal handlers: {e}")))?;
    // The first line on stdout says where we listen (tests and scripts read it).
    #[allow(clippy::print_stdout)]
    {
        println!("listening on http://{local}");
    }
    let _ = std::io::stdout().flush();
    if let Some(listener) = metrics_listener {
        let router = lce::gateway::metrics_router(render);
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(target: "lce::serve", error = %e, "the metrics listener failed");
            }
        });
    }
    let limits = server_limits(&args.limits);
    let ender = gateway.clone();
    let drainer = gateway.clone();
    serve_http(
        listener,
        gateway.router(),
        &limits,
        signals.after_drain(args.limits.drain_delay, move || drainer.drain()),
        move || {
            ender.stop_runs();
        },
    )
    .await
    .map_err(|e| UsageError(format!("server error: {e}")))?;
    // Runs nobody reads any more end too (their audit records written)
    // before the process does.
    gateway.shutdown().await;
    if let Some(audit) = audit {
        audit.close();
    }
    Ok(true)
}

/// `--log-format`: `text` or `json`.
fn parse_log_format(s: &str) -> Result<LogFormat, String> {
    s.parse()
        .map_err(|e: lce::telemetry::TelemetryError| e.to_string())
}

fn server_limits(args: &LimitArgs) -> ServerLimits {
    let mut limits = ServerLimits::default();
    limits.header_timeout = args.header_timeout;
    limits.max_connections = args.max_connections;
    limits.max_connections_per_ip = args.max_connections_per_ip;
    limits.write_timeout = args.write_timeout;
    limits.shutdown_grace = args.shutdown_grace;
    limits
}

/// The run log, the thread store and the tokens of `args`.
async fn with_log(
    mut builder: GatewayBuilder,
    args: &LogArgs,
) -> Result<GatewayBuilder, UsageError> {
    if args.log.starts_with("redis") {
        let replica_timeout = Duration::from_millis(args.log_replica_timeout.max(1));
        let mut options = lce::redis::RedisLogOptions::new()
            .with_retention(args.retention)
            .with_thread_retention(args.thread_retention)
            .with_timeout(args.log_timeout)
            .with_replicas(args.log_replicas, replica_timeout);
        options = with_passwords(
            options,
            args.log_password_file.as_deref(),
            args.log_sentinel_password_file.as_deref(),
        )?;
        // The engine's words and the url (it may hold a password) stay out
        // of the message.
        let log = lce::redis::RedisRunLog::connect(&args.log, options)
            .await
            .map_err(|e| UsageError(format!("cannot use the run log at --log: {e}")))?;
        let store = log.thread_store();
        builder = builder.log(Arc::new(log)).store(Arc::new(store));
    } else if args.log != "memory" {
        return Err(UsageError(
            "--log must be `memory` or a redis url".to_owned(),
        ));
    }
    if let Some(path) = &args.token_secret_file {
        builder = builder.token_secret(read_secret(path, "token secret", MIN)?);
    }
    if let Some(path) = &args.ingest_token_file {
        builder = builder.ingest_token(read_text(path, "ingest token", MIN)?);
    }
    builder = builder.inspector(args.inspector);
    if let Some(path) = &args.inspector_token_file {
        builder = builder.inspector_token(read_text(path, "inspector token", MIN)?);
    }
    Ok(builder)
}

/// `options` with the Redis password from `node_file`
/// (--log-password-file), else from the environment variable
/// `LCE_LOG_PASSWORD`, and the Sentinels' from `sentinel_file`
/// (--log-sentinel-password-file), else from `LCE_LOG_SENTINEL_PASSWORD`.
fn with_passwords(
    mut options: lce::redis::RedisLogOptions,
    node_file: Option<&Path>,
    sentinel_file: Option<&Path>,
) -> Result<lce::redis::RedisLogOptions, UsageError> {
    if let Some(password) = password(node_file, "LCE_LOG_PASSWORD", "log password")? {
        options = options.with_password(password);
    }
    let sentinel = password(
        sentinel_file,
        "LCE_LOG_SENTINEL_PASSWORD",
        "log sentinel password",
    )?;
    if let Some(password) = sentinel {
        options = options.with_sentinel_password(password);
    }
    Ok(options)
}

/// A password from `file`, else from the environment variable `var`;
/// `None` when neither gives one.
fn password(file: Option<&Path>, var: &str, what: &str) -> Result<Option<String>, UsageError> {
    match file {
        Some(path) => read_text(path, what, 1).map(Some),
        None => Ok(std::env::var(var).ok().filter(|p| !p.is_empty())),
    }
}

/// [`read_secret`] of a file that holds text.
fn read_text(path: &Path, what: &str, min: usize) -> Result<String, UsageError> {
    String::from_utf8(read_secret(path, what, min)?)
        .map_err(|_| UsageError(format!("{what} file {} is not UTF-8", path.display())))
}

/// Reads a secret, token or password file (`read_secret_file`): at least
/// `min` bytes once trailing whitespace is removed.
pub(crate) fn read_secret(path: &Path, what: &str, min: usize) -> Result<Vec<u8>, UsageError> {
    lce::gateway::read_secret_file(path, min)
        .map_err(|e| UsageError(format!("{what} file {} {e}", path.display())))
}

/// Print the read token of a run, for a platform that hands tokens out
/// itself.
///
/// The token is what `lce serve --token-secret-file FILE` puts in the
/// `X-Run-Token` header of the run's start answer, and what
/// `GET /api/v1/runs/RUN_ID/stream` requires (`X-Run-Token` header or
/// `?token=`): the HMAC-SHA256 of the run id and the nonce its log keeps
/// for the run's current incarnation, under the secret, in hex. The nonce
/// is read from the log: a token never opens a later run that reuses the
/// id after this one's log expired.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  lce token 3f2a9c... --token-secret-file /etc/lce/token-secret --log redis://redis:6379/0"
)]
pub(crate) struct TokenArgs {
    /// The run id.
    #[arg(value_name = "RUN_ID")]
    run_id: String,
    /// The secret every replica signs with (as `lce serve
    /// --token-secret-file`).
    #[arg(long, value_name = "FILE")]
    token_secret_file: PathBuf,
    /// The run log the replicas share (a redis url, as `lce serve --log`):
    /// the run's nonce is read from it. A memory log lives
    /// in its `lce serve` process only: its tokens come in the start
    /// answers.
    #[arg(long, value_name = "URL")]
    log: String,
    /// A file holding the Redis password (else LCE_LOG_PASSWORD), as
    /// `lce serve --log-password-file`.
    #[arg(long, value_name = "FILE")]
    log_password_file: Option<PathBuf>,
    /// A file holding the Sentinels' own password (else
    /// LCE_LOG_SENTINEL_PASSWORD), as `lce serve
    /// --log-sentinel-password-file`.
    #[arg(long, value_name = "FILE")]
    log_sentinel_password_file: Option<PathBuf>,
}

/// `lce token`: prints the run's read token on stdout.
pub(crate) fn print_token(args: &TokenArgs) -> Result<(), UsageError> {
    let tokens =
        lce::gateway::ReadTokens::new(read_secret(&args.token_secret_file, "token secret", MIN)?);
    if !args.log.starts_with("redis") {
        return Err(UsageError(
            "--log must be the replicas' redis url".to_owned(),
        ));
    }
    let options = with_passwords(
        lce::redis::RedisLogOptions::new(),
        args.log_password_file.as_deref(),
        args.log_sentinel_password_file.as_deref(),
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    let info = runtime.block_on(async {
        let log = lce::redis::RedisRunLog::connect(&args.log, options).await?;
        lce::runlog::RunLog::info(&log, &args.run_id).await
    });
    let info = info
        .map_err(|e| UsageError(format!("cannot use the run log at --log: {e}")))?
        .ok_or_else(|| UsageError("the run log has no run with this id".to_owned()))?;
    #[allow(clippy::print_stdout)]
    {
        println!("{}", tokens.token(&args.run_id, &info.nonce));
    }
    Ok(())
}
