//! `lce serve`: an HTTP server that plays canonical runs from a folder as
//! live runs, through the coordinator and the encoders.
//!
//! Routes:
//! - `POST /api/v1/chat/stream/start` — DA's request body (`message`,
//!   `conversation_id`, `agent_id`, `protocol`: `custom` | `agui` |
//!   `agui-v1`); the scenario named by `agent_id` is played with its
//!   conversation id rewritten to the request's; DA's headers.
//! - `POST /api/v1/chat/invoke` — DA's non-streaming invoke (`message`,
//!   `conversation_id`, `agent_id`): one JSON answer (see `crate::invoke`).
//! - `POST /api/v1/agui` — standard AG-UI: a `RunAgentInput` body in
//!   (`threadId`, `runId`, ...; the scenario is `forwardedProps.agentId`, else
//!   the default scenario), `agui-v1` out.
//!
//! Frames are flushed as they are produced (one body chunk per event); in
//! `agui-v1` a `: keep-alive` comment goes out while the run is idle (DA's
//! formats send none). A bad request gets a 4xx with a JSON error body before
//! any stream starts. A client that disconnects ends its run as
//! `run.cancelled{disconnect}` in the audit log.
//!
//! Limits and shutdown (`crate::listener`): a header must arrive within
//! `--header-timeout`, a body must keep arriving (`--body-idle-timeout`), at
//! most `--max-connections` are served at once. On SIGTERM or Ctrl-C the
//! server stops accepting, lets responses finish for `--shutdown-grace`, then
//! ends the remaining runs as `run.cancelled{shutdown}` and exits 0.
//!
//! Backpressure: the body is pulled by the HTTP stack, so a client that stops
//! reading stops the run's stream from being polled; what is buffered is
//! bounded by the socket buffers plus the frames of one event.

use std::collections::HashMap;
use std::future::Future as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::Stream;
use lce::prelude::*;
use lce::stream::{AuditRecord, LogError, TracingAudit};

use crate::gateway::{Gateway, GatewayArgs};
use crate::upstream::{Forwarded, HttpUpstream, RunInput, RunRequest, ScenarioPlayer, Upstream};

use crate::UsageError;

/// Server configuration from the command line.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    addr: SocketAddr,
    scenarios: PathBuf,
    upstream: Option<String>,
    upstream_connect_timeout: Duration,
    speed: f64,
    pub(crate) keepalive: Duration,
    pub(crate) agent_name: Option<String>,
    default_scenario: Option<String>,
    audit_log: Option<PathBuf>,
    limits: crate::listener::ServerLimits,
    gateway: GatewayArgs,
}

/// What every request handler shares.
pub(crate) struct App {
    pub(crate) upstream: Upstream,
    pub(crate) config: Config,
    audit: Arc<dyn AuditSink>,
    pub(crate) gateway: Arc<Gateway>,
}

/// What `lce serve --help` shows after the options.
const AFTER_HELP: &str = "\
Routes: POST /api/v1/chat/stream/start (DA's streaming request; protocol
custom, agui or agui-v1), POST /api/v1/chat/invoke (DA's non-streaming
invoke), POST /api/v1/agui (standard AG-UI RunAgentInput, agui-v1 out).
The scenario is the request's agent_id: SCENARIOS/<agent_id>.jsonl.
The first stdout line is `listening on http://ADDR`.
Exit status: 0 after SIGTERM or Ctrl-C, 2 when it cannot start (usage,
scenarios, address) or the server fails.

Example:
  lce serve --addr 127.0.0.1:0 --scenarios fixtures/scenarios --speed 0";

/// Play canonical runs from a folder as live runs over HTTP.
///
/// Every run goes through the coordinator and the encoders, as in a live
/// service; frames are flushed as they are produced. Audit records (payload
/// free) are logged to stderr, and appended to `--audit-log` FILE.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Folder of `*.jsonl` scenarios, one run each: the built-in upstream.
    ///
    /// A start's `agent_id` names the scenario DIR/<agent_id>.jsonl; a
    /// resume plays the scenario DIR/resume.json maps it to. Not read with
    /// --upstream.
    #[arg(long, value_name = "DIR", default_value = "fixtures/scenarios")]
    scenarios: PathBuf,
    /// A harness over HTTP (`http://HOST:PORT[/PATH]`): runs come from
    /// `POST URL/runs`, cancels go to `POST URL/runs/{run_id}/cancel`
    /// (docs/upstream.md). Without it, runs come from --scenarios.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Seconds to connect to the upstream and receive its answer's header.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_keepalive)]
    upstream_connect_timeout: Duration,
    /// Pacing: recorded gaps divided by F; 0 = no pauses.
    ///
    /// Each event waits the gap between its timestamp and the one before,
    /// divided by F, at most 5 s.
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_speed)]
    speed: f64,
    /// Idle seconds before an `agui-v1` keep-alive comment.
    ///
    /// DA's formats (`custom`, `agui`) send none.
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = parse_keepalive)]
    keepalive: Duration,
    /// Agent name in the stream, where the format has one.
    #[arg(long, value_name = "NAME")]
    agent_name: Option<String>,
    /// Scenario for AG-UI requests that name none.
    ///
    /// An AG-UI request names its scenario in `forwardedProps.agentId`.
    #[arg(long, value_name = "NAME")]
    default_scenario: Option<String>,
    /// Also append every audit record to FILE, as JSON Lines.
    #[arg(long, value_name = "FILE")]
    audit_log: Option<PathBuf>,
    #[command(flatten)]
    limits: crate::listener::ServerLimits,
    #[command(flatten)]
    gateway: GatewayArgs,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(speed) if speed.is_finite() && speed >= 0.0 => Ok(speed),
        _ => Err("must be a finite number >= 0 (0 = no pacing)".to_owned()),
    }
}

fn parse_keepalive(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>().map(Duration::try_from_secs_f64) {
        Ok(Ok(d)) if !d.is_zero() => Ok(d),
        _ => Err("must be a number of seconds > 0".to_owned()),
    }
}

/// Runs `lce serve`; returns when the server stops (SIGTERM or Ctrl-C).
pub(crate) fn run(args: Args) -> Result<bool, UsageError> {
    let config = Config {
        addr: args.addr,
        scenarios: args.scenarios,
        upstream: args.upstream,
        upstream_connect_timeout: args.upstream_connect_timeout,
        speed: args.speed,
        keepalive: args.keepalive,
        agent_name: args.agent_name,
        default_scenario: args.default_scenario,
        audit_log: args.audit_log,
        limits: args.limits,
        gateway: args.gateway,
    };
    let upstream = match &config.upstream {
        Some(url) => Upstream::Http(HttpUpstream::new(url, config.upstream_connect_timeout)?),
        None => Upstream::Scenarios(ScenarioPlayer::load(&config.scenarios, config.speed)?),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(serve(config, upstream))
}

pub(crate) fn load_scenarios(dir: &Path) -> Result<HashMap<String, Arc<Vec<Event>>>, UsageError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        UsageError(format!(
            "cannot read scenarios folder {}: {e}",
            dir.display()
        ))
    })?;
    let mut map = HashMap::new();
    for entry in entries {
        let path = entry
            .map_err(|e| UsageError(format!("{}: {e}", dir.display())))?
            .path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let file = std::fs::File::open(&path)
            .map_err(|e| UsageError(format!("cannot open {}: {e}", path.display())))?;
        let mut events = Vec::new();
        for item in EventLines::new(std::io::BufReader::new(file)) {
            let item = item.map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
            let event = item.map_err(|e| UsageError(format!("{}:{e}", path.display())))?;
            events.push(event);
        }
        map.insert(name, Arc::new(events));
    }
    if map.is_empty() {
        return Err(UsageError(format!(
            "no *.jsonl scenarios in {}",
            dir.display()
        )));
    }
    Ok(map)
}

async fn serve(config: Config, upstream: Upstream) -> Result<bool, UsageError> {
    let audit: Arc<dyn AuditSink> = match &config.audit_log {
        Some(path) => Arc::new(FileAudit::create(path)?),
        None => Arc::new(TracingAudit),
    };
    let gateway = Arc::new(Gateway::connect(&config.gateway).await?);
    gateway.spawn_sweeper();
    let app = Arc::new(App {
        upstream,
        config: config.clone(),
        audit,
        gateway: gateway.clone(),
    });
    let router = Router::new()
        .route("/api/v1/chat/stream/start", post(stream_start))
        .route("/api/v1/chat/stream/resume", post(stream_resume))
        .route("/api/v1/chat/stream/cancel", post(stream_cancel))
        .route("/api/v1/runs", post(crate::gateway::push_run))
        .route(
            "/api/v1/runs/{run_id}/stream",
            get(crate::gateway::run_stream),
        )
        .route("/api/v1/agui", post(agui_run))
        .route("/api/v1/chat/invoke", post(crate::invoke::http_invoke))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| UsageError(format!("cannot listen on {}: {e}", config.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| UsageError(e.to_string()))?;
    let signals = crate::listener::Signals::new()
        .map_err(|e| UsageError(format!("cannot install the signal handlers: {e}")))?;
    // The first line on stdout says where we listen (tests and scripts read it).
    println!("listening on http://{local}");
    let _ = std::io::stdout().flush();
    let ender = gateway.clone();
    crate::listener::serve_http(listener, router, &config.limits, signals, move || {
        ender.shut_down();
    })
    .await
    .map_err(|e| UsageError(format!("server error: {e}")))?;
    // Runs nobody reads any more end too (their audit records written)
    // before the process does.
    gateway.wait_for_runs(crate::listener::DRAIN).await;
    Ok(true)
}

/// A JSON error response, sent before any stream starts.
pub(crate) fn bad_request(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({ "error": message, "code": code }).to_string();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Parses a JSON request body, or answers 400/422 with a JSON error.
#[allow(clippy::result_large_err)] // the error is the response itself
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Response> {
    serde_json::from_slice(body).map_err(|e| {
        let (status, code) = match e.classify() {
            serde_json::error::Category::Data => {
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_request")
            }
            _ => (StatusCode::BAD_REQUEST, "malformed_json"),
        };
        // serde's message may quote input: keep only its category.
        bad_request(status, code, "The request body is not a valid request.")
    })
}

impl App {
    /// The chain lce builds for a run this replica owns:
    /// `source.enforced(coordinator)`, the coordinator with the thread
    /// store, the audit and a cancel handle that shutdown reaches.
    pub(crate) fn enforced<S>(
        &self,
        source: S,
        run_id: &str,
        conversation_id: &str,
        cancel: CancelHandle,
    ) -> lce::stream::Enforced<lce::stream::Source<S>>
    where
        S: Stream<Item = Result<Event, LceError>> + Send + 'static,
    {
        let coordinator = Coordinator::new(CoordinatorOptions::new(run_id, conversation_id))
            .store(self.gateway.store.clone())
            .audit(self.audit.clone())
            .cancel_handle(cancel);
        lce::stream::source(source).enforced(coordinator)
    }

    /// Starts the run `request` asks the upstream for (logged, owned by
    /// this replica) and answers with its SSE read back from the log. An
    /// upstream that gives no run gets the client a 4xx/502 before any
    /// stream.
    async fn start_run(&self, request: RunRequest, format: WireFormat) -> Response {
        let events = match self.upstream.open(&request).await {
            Ok(events) => events,
            Err(e) => return crate::upstream::error_response(&e),
        };
        let RunRequest {
            run_id,
            conversation_id,
            ..
        } = request;
        let writer = match self.gateway.create(&run_id, &conversation_id).await {
            Ok(w) => w,
            Err(LogError::Exists) => return crate::gateway::conflict(),
            Err(_) => return crate::gateway::unavailable(),
        };
        let cancel = self.gateway.register(&run_id);
        let run = self.enforced(events, &run_id, &conversation_id, cancel.clone());
        crate::gateway::spawn_owner(self.gateway.clone(), writer, run);
        let ids = self.gateway.sse_ids;
        match crate::gateway::subscribe(self, &run_id, format, None, ids, Some(cancel)).await {
            Ok(response) => response,
            Err(e) => crate::gateway::subscribe_error(&e),
        }
    }
}

/// The `protocol` of a DA request, or a 400.
#[allow(clippy::result_large_err)] // the error is the response itself
fn protocol(name: Option<&str>) -> Result<WireFormat, Response> {
    WireFormat::from_name(name.unwrap_or("custom")).ok_or_else(|| {
        bad_request(
            StatusCode::BAD_REQUEST,
            "unknown_protocol",
            "Unknown protocol.",
        )
    })
}

/// `POST /api/v1/chat/stream/start`: a new run for the client's message.
async fn stream_start(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    da_run(&app, &headers, &body, false).await
}

/// `POST /api/v1/chat/stream/resume`: a new run that continues the
/// conversation's interrupted one, with the client's `resume_data`.
async fn stream_resume(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    da_run(&app, &headers, &body, true).await
}

/// The body of DA's start and resume: `message` for a start, `resume_data`
/// (a JSON string, forwarded exactly as the client sent it) for a resume.
#[derive(serde::Deserialize)]
struct DaRunRequest {
    conversation_id: String,
    agent_id: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    resume_data: Option<String>,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    client_context: Option<serde_json::Value>,
}

/// A DA start (`resume` false) or resume: each is a new run with a fresh
/// id, so runs never collide in the log (a scenario's own run id is
/// replaced, like its conversation id).
async fn da_run(app: &App, headers: &HeaderMap, body: &[u8], resume: bool) -> Response {
    let req: DaRunRequest = match parse_body(body) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let input = match (resume, req.message, req.resume_data) {
        (false, Some(message), _) => RunInput::Message(message),
        (true, _, Some(data)) => RunInput::Resume(data),
        _ => {
            return bad_request(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "The request body is not a valid request.",
            );
        }
    };
    let format = match protocol(req.protocol.as_deref()) {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let request = RunRequest {
        run_id: crate::gateway::random_id(),
        conversation_id: req.conversation_id,
        agent_id: req.agent_id,
        input,
        client_context: req.client_context,
        forwarded: Forwarded::from_headers(headers),
    };
    app.start_run(request, format).await
}

#[derive(serde::Deserialize)]
struct CancelRequest {
    conversation_id: String,
    #[allow(dead_code)] // DA's body names it; the conversation decides
    #[serde(default)]
    agent_id: Option<String>,
}

/// `POST /api/v1/chat/stream/cancel`, on any replica: cancels the
/// conversation's running run where it runs, once the upstream accepts.
async fn stream_cancel(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let req: CancelRequest = match parse_body(&body) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let cancelled = crate::gateway::cancel_conversation(
        &app,
        &req.conversation_id,
        &Forwarded::from_headers(&headers),
    )
    .await;
    match cancelled {
        Ok(cancelled) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::json!({ "cancelled": cancelled }).to_string(),
        )
            .into_response(),
        Err(resp) => resp,
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAgentInput {
    thread_id: String,
    run_id: String,
    #[serde(default)]
    messages: Vec<serde_json::Value>,
    #[serde(default)]
    forwarded_props: Option<serde_json::Value>,
}

async fn agui_run(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let req: RunAgentInput = match parse_body(&body) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let agent = req
        .forwarded_props
        .as_ref()
        .and_then(|p| p.get("agentId").or_else(|| p.get("agent_id")))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .or_else(|| app.config.default_scenario.clone());
    let Some(agent) = agent else {
        return bad_request(
            StatusCode::BAD_REQUEST,
            "missing_agent",
            "Name the agent in forwardedProps.agentId.",
        );
    };
    // The message is the text of the last user message.
    let message = req
        .messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"))
        .and_then(|m| m.get("content"))
        .and_then(|c| c.as_str())
        .unwrap_or("")
        .to_owned();
    let request = RunRequest {
        run_id: req.run_id,
        conversation_id: req.thread_id,
        agent_id: agent,
        input: RunInput::Message(message),
        client_context: req.forwarded_props,
        forwarded: Forwarded::from_headers(&headers),
    };
    app.start_run(request, WireFormat::AguiV1).await
}

/// Plays `scenario` with ids rewritten, sleeping between events as their
/// timestamps say, divided by `speed` (0 = no pacing), each wait capped at 5 s.
pub(crate) fn paced(
    scenario: Arc<Vec<Event>>,
    speed: f64,
    run_id: String,
    conversation_id: String,
) -> impl Stream<Item = Result<Event, LceError>> + Send + 'static {
    let (run_id, conversation_id): (Arc<str>, Arc<str>) = (run_id.into(), conversation_id.into());
    futures::stream::unfold(0usize, move |i| {
        let scenario = scenario.clone();
        let (run_id, conversation_id) = (run_id.clone(), conversation_id.clone());
        async move {
            let mut event = scenario.get(i)?.clone();
            if speed > 0.0 && i > 0 {
                if let Some(prev) = scenario.get(i - 1) {
                    let gap_ms = event
                        .timestamp
                        .unix_millis()
                        .saturating_sub(prev.timestamp.unix_millis());
                    #[allow(clippy::cast_precision_loss)]
                    let secs = (gap_ms.max(0) as f64 / 1000.0 / speed).min(5.0);
                    if secs > 0.0 {
                        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
                    }
                }
            }
            event.run_id = run_id;
            event.conversation_id = conversation_id;
            Some((Ok(event), i + 1))
        }
    })
}

pin_project_lite::pin_project! {
    /// Sends `: keep-alive` comments while the inner stream is idle.
    pub(crate) struct KeepAlive<S> {
        #[pin]
        inner: S,
        every: Option<Duration>,
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
    }
}

impl<S> KeepAlive<S> {
    /// Keep-alive comments every `every` of idleness (`None`: none).
    pub(crate) fn new(inner: S, every: Option<Duration>) -> Self {
        KeepAlive {
            inner,
            every,
            timer: None,
        }
    }
}

impl<S: Stream<Item = Result<bytes::Bytes, LceError>>> Stream for KeepAlive<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        match this.inner.poll_next(cx) {
            Poll::Ready(item) => {
                *this.timer = None;
                Poll::Ready(item)
            }
            Poll::Pending => {
                let Some(every) = *this.every else {
                    return Poll::Pending;
                };
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(every)));
                if timer.as_mut().poll(cx).is_ready() {
                    *this.timer = None;
                    let mut buf = bytes::BytesMut::new();
                    if lce::wire::write_comment(&mut buf, "keep-alive").is_ok() {
                        return Poll::Ready(Some(Ok(buf.freeze())));
                    }
                }
                Poll::Pending
            }
        }
    }
}

/// Audit records as JSON Lines in a file (one object per run's end).
struct FileAudit {
    file: Mutex<std::fs::File>,
}

impl FileAudit {
    fn create(path: &Path) -> Result<Self, UsageError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| UsageError(format!("cannot open audit log {}: {e}", path.display())))?;
        Ok(FileAudit {
            file: Mutex::new(file),
        })
    }
}

/// One audit record as a JSON object (ids, types, codes, counts only).
pub(crate) fn audit_json(r: &AuditRecord) -> serde_json::Value {
    serde_json::json!({
        "run_id": r.run_id,
        "conversation_id": r.conversation_id,
        "terminal": r.terminal.as_str(),
        "sequence": r.sequence,
        "code": r.code,
        "side_effect_status": r.side_effect_status.map(|s| s.as_str()),
        "rule": r.rule.map(|c| c.as_str()),
        "coordinator_terminal": r.coordinator_terminal,
        "events_in": r.counters.events_in,
        "forwarded": r.counters.forwarded,
        "dropped": r.counters.dropped,
        "empty_deltas": r.counters.empty_deltas,
        "after_terminal": r.counters.after_terminal,
        "cleaned": r.counters.cleaned,
    })
}

impl AuditSink for FileAudit {
    fn record(&self, record: &AuditRecord) {
        TracingAudit.record(record);
        if let Ok(mut f) = self.file.lock() {
            let _ = writeln!(f, "{}", audit_json(record));
            let _ = f.flush();
        }
    }
}
