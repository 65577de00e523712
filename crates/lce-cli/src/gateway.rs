//! The gateway side of `lce serve` (`gateway.md`, `docs/gateway.md`): every
//! run is written to a run log before a client sees a byte of it, and
//! every client reads its run back from the log.
//!
//! - The owner of a run (the replica that started it) drives its chain
//!   `source → enforced → logged` in a task of its own, renews its lease,
//!   and on shutdown either ends it (`run.cancelled{shutdown}`, memory log)
//!   or releases it for another replica to end (Redis log).
//! - A subscriber ([`Subscription`]) encodes the log from the start, or
//!   after a `Last-Event-ID`, then follows the live tail until the terminal;
//!   one that finds the run orphaned ends it with the closure terminal (D9).
//! - Read tokens: an HMAC-SHA256 of the run id under a secret every replica
//!   shares, compared in constant time. Ingest tokens: a bearer token from a
//!   file.
//!
//! Nothing here logs a token, a secret, an `Authorization` value or a
//! payload: only run ids, positions, counts and kinds.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use hmac::{Hmac, KeyInit, Mac};
use lce::prelude::*;
use lce::stream::{
    CancelHandle, FrameId, LifecycleStream, LogError, LogWriter, MemoryRunLog, RunInfo, RunLog,
    SubscribeError, Subscription, Takeover, ThreadStore,
};
use sha2::Sha256;

use crate::UsageError;
use crate::serve::{App, KeepAlive, bad_request};

/// The gateway's options (`lce serve --help`, `docs/gateway.md`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct GatewayArgs {
    /// Where runs are logged: `memory` (this process only, the default) or
    /// `redis://HOST:PORT[/DB]` (Redis Streams, shared by replicas).
    #[arg(long, value_name = "LOG", default_value = "memory")]
    log: String,
    /// Seconds after which a run whose owner stopped renewing its lease
    /// (a replica that died) is ended by another replica (rule 12, D9).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    takeover_after: Duration,
    /// Seconds a run's log is kept after its terminal.
    #[arg(long, value_name = "SECS", default_value = "86400", value_parser = parse_secs)]
    retention: Duration,
    /// Add `id:` lines to the DA and AG-UI POST routes too (for clients
    /// that reconnect with `Last-Event-ID`); without it their bytes stay
    /// exactly DA's. `GET /api/v1/runs/{id}/stream` always has them.
    #[arg(long)]
    sse_ids: bool,
    /// A client that disconnects cancels its run (`run.cancelled
    /// {disconnect}`, D11 before the gateway). By default the run goes on
    /// into the log for the client's return.
    #[arg(long)]
    cancel_on_disconnect: bool,
    /// The secret read tokens are signed with (at least 16 bytes; trailing
    /// whitespace is ignored). Without it: one kept in the log engine
    /// (Redis), or one made at start (memory).
    #[arg(long, value_name = "FILE")]
    token_secret_file: Option<PathBuf>,
    /// The bearer token `POST /api/v1/runs` requires. Without it (and
    /// without --allow-anonymous-ingest) push ingest is off (404).
    #[arg(long, value_name = "FILE")]
    ingest_token_file: Option<PathBuf>,
    /// Accept pushed runs without a token (a local demo only).
    #[arg(long)]
    allow_anonymous_ingest: bool,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>().map(Duration::try_from_secs_f64) {
        Ok(Ok(d)) if !d.is_zero() => Ok(d),
        _ => Err("must be a number of seconds > 0".to_owned()),
    }
}

/// Who may push runs.
#[derive(Debug)]
enum Ingest {
    Off,
    Anonymous,
    Bearer(String),
}

/// The read-token signer.
pub(crate) struct Tokens {
    secret: Vec<u8>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokens(..)")
    }
}

impl Tokens {
    fn mac(&self, run_id: &str) -> Hmac<Sha256> {
        // HMAC takes keys of any length.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(run_id.as_bytes());
        mac
    }

    /// The read token of `run_id`: its HMAC-SHA256, in lowercase hex.
    pub(crate) fn token(&self, run_id: &str) -> String {
        hex(&self.mac(run_id).finalize().into_bytes())
    }

    /// Whether `token` is `run_id`'s (compared in constant time).
    pub(crate) fn verify(&self, run_id: &str, token: &str) -> bool {
        match unhex(token) {
            Some(bytes) => self.mac(run_id).verify_slice(&bytes).is_ok(),
            None => false,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A fresh random id: 128 bits, lowercase hex.
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    // Without the OS's randomness lce cannot make safe run ids: stop.
    getrandom::fill(&mut bytes).unwrap_or_else(|_| unreachable!("the OS has no randomness"));
    hex(&bytes)
}

/// Reads a secret or token file: its contents without trailing whitespace.
fn read_secret(path: &std::path::Path, what: &str, min: usize) -> Result<Vec<u8>, UsageError> {
    let mut bytes = std::fs::read(path)
        .map_err(|e| UsageError(format!("cannot read {what} file {}: {e}", path.display())))?;
    while bytes.last().is_some_and(u8::is_ascii_whitespace) {
        bytes.pop();
    }
    if bytes.len() < min {
        return Err(UsageError(format!(
            "{what} file {} must hold at least {min} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Print the read token of a run, for a platform that hands tokens out
/// itself.
///
/// The token is what `lce serve --token-secret-file FILE` puts in the
/// `X-Run-Token` header of the run's start answer, and what
/// `GET /api/v1/runs/RUN_ID/stream` requires (`X-Run-Token` header or
/// `?token=`): the HMAC-SHA256 of the run id under the secret, in hex.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  lce token 3f2a9c... --token-secret-file /etc/lce/token-secret")]
pub(crate) struct TokenArgs {
    /// The run id.
    #[arg(value_name = "RUN_ID")]
    run_id: String,
    /// The secret every replica signs with (as `lce serve
    /// --token-secret-file`).
    #[arg(long, value_name = "FILE")]
    token_secret_file: PathBuf,
}

/// `lce token`: prints the run's read token on stdout.
pub(crate) fn print_token(args: &TokenArgs) -> Result<(), UsageError> {
    let tokens = Tokens {
        secret: read_secret(&args.token_secret_file, "token secret", 16)?,
    };
    #[allow(clippy::print_stdout)]
    {
        println!("{}", tokens.token(&args.run_id));
    }
    Ok(())
}

/// The gateway state every handler shares (inside [`App`]).
pub(crate) struct Gateway {
    pub(crate) log: Arc<dyn RunLog>,
    pub(crate) store: Arc<dyn ThreadStore>,
    /// This replica's id (random per process).
    pub(crate) replica: String,
    lease: Duration,
    pub(crate) tokens: Tokens,
    ingest: Ingest,
    pub(crate) sse_ids: bool,
    cancel_on_disconnect: bool,
    /// The log outlives this process (Redis): on shutdown, release runs
    /// instead of ending them.
    durable: bool,
    releasing: AtomicBool,
    release: tokio::sync::Notify,
    /// The runs this replica owns, by run id: their cancel handles.
    running: std::sync::Mutex<std::collections::HashMap<String, CancelHandle>>,
    shutting_down: AtomicBool,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("replica", &self.replica)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// The gateway `args` describe; connects to the log engine.
    pub(crate) async fn connect(args: &GatewayArgs) -> Result<Gateway, UsageError> {
        let (log, store, durable): (Arc<dyn RunLog>, Arc<dyn ThreadStore>, bool) =
            if args.log == "memory" {
                (
                    Arc::new(MemoryRunLog::with_retention(args.retention)),
                    Arc::new(lce::stream::MemoryStore::new()),
                    false,
                )
            } else if args.log.starts_with("redis://") {
                let (log, store) = connect_redis(args).await?;
                (log, store, true)
            } else {
                return Err(UsageError(
                    "--log must be `memory` or redis://HOST:PORT[/DB]".to_owned(),
                ));
            };
        let secret = match &args.token_secret_file {
            Some(path) => read_secret(path, "token secret", 16)?,
            None => {
                let candidate = random_id().into_bytes();
                log.shared_secret(candidate)
                    .await
                    .map_err(|e| UsageError(format!("cannot get the token secret: {e}")))?
            }
        };
        let ingest = match (&args.ingest_token_file, args.allow_anonymous_ingest) {
            (Some(path), _) => {
                let token = read_secret(path, "ingest token", 16)?;
                Ingest::Bearer(String::from_utf8(token).map_err(|_| {
                    UsageError(format!("ingest token file {} is not UTF-8", path.display()))
                })?)
            }
            (None, true) => Ingest::Anonymous,
            (None, false) => Ingest::Off,
        };
        Ok(Gateway {
            log,
            store,
            replica: random_id(),
            lease: args.takeover_after,
            tokens: Tokens { secret },
            ingest,
            sse_ids: args.sse_ids,
            cancel_on_disconnect: args.cancel_on_disconnect,
            durable,
            releasing: AtomicBool::new(false),
            release: tokio::sync::Notify::new(),
            running: std::sync::Mutex::new(std::collections::HashMap::new()),
            shutting_down: AtomicBool::new(false),
        })
    }

    /// Shutdown past its grace period. With a durable log every run this
    /// replica owns releases its lease (another replica ends it, and its
    /// subscribers reconnect elsewhere); with the memory log each one ends
    /// as `run.cancelled{shutdown}` (D11).
    pub(crate) fn shut_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        if self.durable {
            self.releasing.store(true, Ordering::SeqCst);
            self.release.notify_waiters();
        } else if let Ok(running) = self.running.lock() {
            for handle in running.values() {
                handle.cancel(lce::types::CancelReason::Shutdown);
            }
        }
    }

    /// A fresh cancel handle for a run this replica owns, registered so
    /// that shutdown reaches it.
    pub(crate) fn register(&self, run_id: &str) -> CancelHandle {
        let handle = CancelHandle::new();
        if let Ok(mut running) = self.running.lock() {
            running.insert(run_id.to_owned(), handle.clone());
        }
        if self.shutting_down.load(Ordering::SeqCst) && !self.durable {
            handle.cancel(lce::types::CancelReason::Shutdown);
        }
        handle
    }

    /// Cancels `run_id` (`client_request`) after [`UPSTREAM_CANCEL_GRACE`],
    /// unless it has ended by then.
    fn cancel_after_grace(&self, run_id: &str) {
        let handle = self
            .running
            .lock()
            .ok()
            .and_then(|r| r.get(run_id).cloned());
        if let Some(handle) = handle {
            tokio::spawn(async move {
                tokio::time::sleep(UPSTREAM_CANCEL_GRACE).await;
                handle.cancel(lce::types::CancelReason::ClientRequest);
            });
        }
    }

    /// Waits, at most `bound`, until this replica owns no running run.
    pub(crate) async fn wait_for_runs(&self, bound: Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        while self.running.lock().is_ok_and(|r| !r.is_empty()) {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(target: "lce::serve", "runs still going at exit");
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn unregister(&self, run_id: &str) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(run_id);
        }
    }

    /// Creates `run_id`'s log, owned by this replica.
    pub(crate) async fn create(
        &self,
        run_id: &str,
        conversation_id: &str,
    ) -> Result<LogWriter, LogError> {
        let info = RunInfo {
            run_id: run_id.to_owned(),
            conversation_id: conversation_id.to_owned(),
            owner: self.replica.clone(),
        };
        LogWriter::create(self.log.clone(), info, self.lease).await
    }

    /// The takeover this replica does for orphaned runs it finds.
    fn takeover(&self) -> Takeover {
        Takeover {
            claimant: self.replica.clone(),
            lease: self.lease,
        }
    }

    /// Ends orphaned runs every half lease, for runs nobody is reading.
    pub(crate) fn spawn_sweeper(self: &Arc<Self>) {
        let gateway = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(gateway.lease / 2);
            loop {
                every.tick().await;
                let Ok(orphans) = gateway.log.orphans().await else {
                    continue;
                };
                for run_id in orphans {
                    let _ =
                        lce::stream::end_orphan(&gateway.log, &run_id, &gateway.takeover()).await;
                }
            }
        });
    }
}

/// The Redis run log and thread store at `args.log`.
async fn connect_redis(
    args: &GatewayArgs,
) -> Result<(Arc<dyn RunLog>, Arc<dyn ThreadStore>), UsageError> {
    let options = lce::redis::RedisLogOptions::new().with_retention(args.retention);
    // The engine's words and the url (it may hold a password) stay out of
    // the message.
    let log = lce::redis::RedisRunLog::connect(&args.log, options)
        .await
        .map_err(|e| UsageError(format!("cannot use the run log at --log: {e}")))?;
    let store = log.thread_store();
    Ok((Arc::new(log), Arc::new(store)))
}

/// How often an owner asks the log whether its run was cancelled (the
/// cancel route may run on another replica).
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// How long an owner lets the upstream end a cancelled run with its own
/// terminal before the coordinator ends it (`run.cancelled{client_request}`).
const UPSTREAM_CANCEL_GRACE: Duration = Duration::from_secs(1);

/// `POST /api/v1/chat/stream/cancel` on any replica: finds the
/// conversation's running run, asks the upstream to cancel it, and once
/// the upstream accepts, records the request for the run's owner (which
/// ends it with `run.cancelled{client_request}` unless the upstream's own
/// terminal comes first). `Ok(true)` once the upstream accepted, even when
/// its own terminal sealed the run before the request was recorded.
/// `Ok(false)`: nothing runs, or the upstream refused.
pub(crate) async fn cancel_conversation(
    app: &App,
    conversation_id: &str,
    forwarded: &crate::upstream::Forwarded,
) -> Result<bool, Response> {
    let log = &app.gateway.log;
    let Some(run_id) = log
        .running_run(conversation_id)
        .await
        .map_err(|_| unavailable())?
    else {
        return Ok(false);
    };
    if !app.upstream.cancel(&run_id, forwarded).await {
        return Ok(false);
    }
    match log.request_cancel(&run_id).await {
        // `false`: the run is sealed already, as when the harness answered
        // the cancel with its own terminal before this line: the cancel
        // was delivered all the same.
        Ok(true | false) => {}
        Err(LogError::NotFound) => return Ok(false),
        Err(_) => return Err(unavailable()),
    }
    tracing::info!(target: "lce::serve", run_id, "cancel requested");
    Ok(true)
}

/// What the owner task learnt when its run ended.
#[derive(Debug, Clone)]
pub(crate) struct RunSummary {
    terminal: Option<EventType>,
    events_in: u64,
    dropped: u64,
    violation: Option<(String, u64)>,
    outcome: &'static str,
}

/// Drives `run` (a chain ending in `logged`) to its end in a task of its
/// own, renewing the lease; returns the task's handle.
pub(crate) fn spawn_owner<S>(
    gateway: Arc<Gateway>,
    writer: LogWriter,
    run: lce::stream::Enforced<S>,
) -> tokio::task::JoinHandle<RunSummary>
where
    S: LifecycleStream + Send + 'static,
{
    let lease = gateway.lease;
    let renewer = writer.clone();
    tokio::spawn(async move {
        let mut logged = std::pin::pin!(run.logged(writer));
        let mut renew = tokio::time::interval(lease / 3);
        renew.tick().await;
        let mut terminal = None;
        let mut outcome = "ended";
        let mut cancel_poll = tokio::time::interval(CANCEL_POLL);
        let mut renewing = true;
        let mut cancel_seen = false;
        loop {
            if gateway.durable && gateway.releasing.load(Ordering::SeqCst) {
                let _ = renewer.release().await;
                outcome = "released";
                break;
            }
            tokio::select! {
                item = logged.next() => match item {
                    Some(Ok(event)) => {
                        if event.event_type().is_terminal() {
                            terminal = Some(event.event_type());
                        }
                    }
                    Some(Err(e)) => {
                        // The log error names a position and a kind, never a payload.
                        tracing::warn!(target: "lce::serve", run_id = renewer.run_id(), error = %e, "the run could not be logged");
                        outcome = match e {
                            LceError::Log(LogError::Refused {
                                refusal: lce::stream::Refusal::NotOwner | lce::stream::Refusal::Sealed,
                                ..
                            }) => "lost",
                            _ => "log_failed",
                        };
                        break;
                    }
                    None => break,
                },
                _ = renew.tick(), if renewing => {
                    if !renewer.renew(lease).await.unwrap_or(true) {
                        renewing = false;
                        // Sealed by this run's own terminal (being
                        // acknowledged): drive on to it. Otherwise another
                        // replica took the run over.
                        if !lce::stream::Logged::upstream_ended(&logged) {
                            tracing::warn!(target: "lce::serve", run_id = renewer.run_id(), "lost the run's lease; another replica ended it");
                            outcome = "lost";
                            break;
                        }
                    }
                }
                () = gateway.release.notified(), if gateway.durable => {}
                _ = cancel_poll.tick(), if !cancel_seen => {
                    if gateway.log.cancel_requested(renewer.run_id()).await.unwrap_or(false) {
                        cancel_seen = true;
                        gateway.cancel_after_grace(renewer.run_id());
                    }
                }
            }
        }
        gateway.unregister(renewer.run_id());
        let coordinated = lce::stream::Logged::get_ref(&logged);
        let counters = coordinated.counters();
        let violation = coordinated.intervention().and_then(|i| {
            let rule = i.cause?.rule()?;
            Some((rule.id().to_owned(), i.position))
        });
        RunSummary {
            terminal,
            events_in: counters.events_in,
            dropped: counters.dropped,
            violation,
            outcome,
        }
    })
}

/// Cancels a run when its subscriber goes away before the end
/// (`--cancel-on-disconnect`).
struct CancelOnDrop(Option<CancelHandle>);

impl CancelOnDrop {
    /// The subscriber reached the end: nothing to cancel.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.cancel(lce::types::CancelReason::Disconnect);
        }
    }
}

/// An SSE answer that reads `run_id` from the log, encoded in `format`.
/// `cancel`: the run's handle, cancelled if the client leaves early under
/// `--cancel-on-disconnect`.
pub(crate) async fn subscribe(
    app: &App,
    run_id: &str,
    format: WireFormat,
    after: Option<FrameId>,
    ids: bool,
    cancel: Option<CancelHandle>,
) -> Result<Response, SubscribeError> {
    let gateway = &app.gateway;
    let encoder = WireEncoder::new(format, app.config.agent_name.clone());
    let subscription = Subscription::open(gateway.log.clone(), run_id, encoder, after, ids)
        .await?
        .take_over(gateway.takeover());
    let mut guard = CancelOnDrop(cancel.filter(|_| gateway.cancel_on_disconnect));
    let frames = subscription.into_stream();
    let keepalive = (format == WireFormat::AguiV1).then_some(app.config.keepalive);
    let body = KeepAlive::new(frames, keepalive);
    let run = run_id.to_owned();
    let body = body
        .map(move |r| {
            r.map_err(|e| {
                tracing::error!(target: "lce::serve", run_id = %run, cause = %e.cause(), "the run could not be read");
                std::io::Error::other("run log error")
            })
        })
        .chain(futures::stream::once(async move {
            // The run reached its terminal: the client did not leave early.
            guard.disarm();
            Ok::<Bytes, std::io::Error>(Bytes::new())
        }));
    Ok(sse_response(
        Body::from_stream(body),
        format,
        run_id,
        &gateway.tokens,
    ))
}

/// The SSE headers of `format`, with `X-Run-Id` and `X-Run-Token`.
fn sse_response(body: Body, format: WireFormat, run_id: &str, tokens: &Tokens) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    if format != WireFormat::AguiV1 {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    }
    insert_run_headers(headers, run_id, tokens);
    response
}

/// The answer for a subscription that could not start.
pub(crate) fn subscribe_error(e: &SubscribeError) -> Response {
    match e {
        SubscribeError::NotFound => not_found(),
        SubscribeError::MalformedId => bad_request(
            StatusCode::BAD_REQUEST,
            "bad_last_event_id",
            "Last-Event-ID must be of the form <position>.<k>.",
        ),
        SubscribeError::UnknownId => bad_request(
            StatusCode::BAD_REQUEST,
            "unknown_last_event_id",
            "Last-Event-ID names no frame of this run.",
        ),
        _ => unavailable(),
    }
}

fn not_found() -> Response {
    bad_request(StatusCode::NOT_FOUND, "unknown_run", "No run with this id.")
}

pub(crate) fn unavailable() -> Response {
    bad_request(
        StatusCode::SERVICE_UNAVAILABLE,
        "log_unavailable",
        "The run log is unavailable.",
    )
}

/// The answer for a run id that already has a log.
pub(crate) fn conflict() -> Response {
    bad_request(
        StatusCode::CONFLICT,
        "run_exists",
        "A run with this id already exists.",
    )
}

/// `?protocol=` and `?token=` of `GET /api/v1/runs/{run_id}/stream`.
#[derive(serde::Deserialize)]
pub(crate) struct StreamQuery {
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

/// `GET /api/v1/runs/{run_id}/stream`: the run from its start or after
/// `Last-Event-ID`, then live until its terminal, with `id:` lines.
pub(crate) async fn run_stream(
    State(app): State<Arc<App>>,
    Path(run_id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    let token = headers
        .get("x-run-token")
        .and_then(|v| v.to_str().ok())
        .or(query.token.as_deref());
    // A missing or wrong token looks exactly like an unknown run.
    if !token.is_some_and(|t| app.gateway.tokens.verify(&run_id, t)) {
        return not_found();
    }
    let Some(format) = WireFormat::from_name(query.protocol.as_deref().unwrap_or("custom")) else {
        return bad_request(
            StatusCode::BAD_REQUEST,
            "unknown_protocol",
            "Unknown protocol.",
        );
    };
    let after = match headers.get("last-event-id") {
        None => None,
        Some(v) => match v.to_str().ok().map(str::parse::<FrameId>) {
            Some(Ok(id)) => Some(id),
            _ => return subscribe_error(&SubscribeError::MalformedId),
        },
    };
    match subscribe(&app, &run_id, format, after, true, None).await {
        Ok(response) => response,
        Err(e) => subscribe_error(&e),
    }
}

/// `POST /api/v1/runs`: a harness pushes a run as canonical JSON Lines;
/// the answer, once the run has its terminal, is a JSON summary.
pub(crate) async fn push_run(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match &app.gateway.ingest {
        Ingest::Off => {
            return bad_request(StatusCode::NOT_FOUND, "not_found", "Push ingest is off.");
        }
        Ingest::Anonymous => {}
        Ingest::Bearer(want) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            let ok = given.is_some_and(|g| constant_time_eq(g.as_bytes(), want.as_bytes()));
            if !ok {
                return bad_request(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "A valid ingest token is required.",
                );
            }
        }
    }
    let reader = tokio_util::io::StreamReader::new(
        body.into_data_stream()
            .map(|r| r.map_err(std::io::Error::other)),
    );
    let mut lines = Box::pin(lce::stream::codec::read_event_lines(reader).peekable());
    let first = lines.as_mut().peek().await;
    let Some(Ok(first)) = first else {
        return bad_request(
            StatusCode::BAD_REQUEST,
            "bad_run",
            "The body's first line must be a canonical event.",
        );
    };
    let (run_id, conversation_id) = (first.run_id.to_string(), first.conversation_id.to_string());
    let writer = match app.gateway.create(&run_id, &conversation_id).await {
        Ok(w) => w,
        Err(LogError::Exists) => return conflict(),
        Err(_) => return unavailable(),
    };
    let cancel = app.gateway.register(&run_id);
    let run = app.enforced(lines, &run_id, &conversation_id, cancel);
    let summary = match spawn_owner(app.gateway.clone(), writer, run).await {
        Ok(s) => s,
        Err(_) => return unavailable(),
    };
    let body = serde_json::json!({
        "run_id": run_id,
        "terminal": summary.terminal.map(|t| t.as_str()),
        "events_in": summary.events_in,
        "dropped": summary.dropped,
        "violations": summary.violation.iter().map(|(rule, position)| {
            serde_json::json!({"rule": rule, "position": position})
        }).collect::<Vec<_>>(),
        "outcome": summary.outcome,
    });
    // The harness is trusted (it holds the ingest token): it gets the
    // run's read token to hand to its clients, as a start answer carries it.
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    insert_run_headers(response.headers_mut(), &run_id, &app.gateway.tokens);
    response
}

/// `X-Run-Id` and `X-Run-Token` (a run id that is not a header value, which
/// only a pushed run can have, gets neither).
fn insert_run_headers(headers: &mut HeaderMap, run_id: &str, tokens: &Tokens) {
    if let Ok(v) = HeaderValue::from_str(run_id) {
        headers.insert("x-run-id", v);
        if let Ok(v) = HeaderValue::from_str(&tokens.token(run_id)) {
            headers.insert("x-run-token", v);
        }
    }
}

/// Compares two byte strings in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
