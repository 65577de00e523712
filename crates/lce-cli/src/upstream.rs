//! Where runs come from (`gateway.md`, harness side; `docs/upstream.md`):
//! a harness over HTTP (`lce serve --upstream URL`) or the built-in
//! scenario player (`--scenarios DIR`), behind one interface.
//!
//! - HTTP: `POST URL/runs` with `{run_id, conversation_id, agent_id,
//!   message | resume_data, client_context}`; the answer's body is read as
//!   canonical JSON Lines (`application/x-ndjson`) or as SSE whose `data:`
//!   lines are canonical events (`text/event-stream`), as it arrives. Cancel
//!   is `POST URL/runs/{run_id}/cancel`. Plain `http://` only.
//! - Scenarios: a start plays `DIR/<agent_id>.jsonl`, a resume plays the
//!   scenario `DIR/resume.json` maps `agent_id` to; the player accepts
//!   every cancel.
//!
//! The client's `Authorization` and `X-Request-Id` are forwarded unchanged
//! and never logged. Nothing of an upstream's error body reaches a client.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, Uri, header};
use futures::{Stream, StreamExt};
use hyper_util::rt::TokioIo;
use lce::prelude::*;

use crate::UsageError;

/// A stream of canonical events from an upstream.
pub(crate) type EventStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<Event, LceError>> + Send + 'static>>;

/// What a start or resume asks an upstream for.
#[derive(Debug, Clone)]
pub(crate) struct RunRequest {
    /// lce's run id (random) or the AG-UI client's.
    pub(crate) run_id: String,
    pub(crate) conversation_id: String,
    pub(crate) agent_id: String,
    pub(crate) input: RunInput,
    /// Forwarded as given (any JSON, or absent).
    pub(crate) client_context: Option<serde_json::Value>,
    /// The client's `Authorization` and `X-Request-Id`, forwarded unchanged.
    pub(crate) forwarded: Forwarded,
}

/// A start's message or a resume's data.
#[derive(Debug, Clone)]
pub(crate) enum RunInput {
    Message(String),
    /// The JSON string exactly as the client sent it.
    Resume(String),
}

/// The client headers an upstream gets (never logged: `Debug` hides them).
#[derive(Clone, Default)]
pub(crate) struct Forwarded {
    authorization: Option<HeaderValue>,
    request_id: Option<HeaderValue>,
}

impl std::fmt::Debug for Forwarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Forwarded(..)")
    }
}

impl Forwarded {
    /// The headers to forward from a client's request.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Forwarded {
        Forwarded {
            authorization: headers.get(header::AUTHORIZATION).cloned(),
            request_id: headers.get("x-request-id").cloned(),
        }
    }

    fn apply(&self, headers: &mut HeaderMap) {
        if let Some(v) = &self.authorization {
            headers.insert(header::AUTHORIZATION, v.clone());
        }
        if let Some(v) = &self.request_id {
            headers.insert("x-request-id", v.clone());
        }
    }
}

/// Why an upstream gave no run. Every variant becomes the same 502 for
/// the client; the kind is logged (never the upstream's words).
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamError {
    #[error("the upstream could not be reached")]
    Unreachable,
    #[error("the upstream did not answer in time")]
    TimedOut,
    #[error("the upstream answered status {0}")]
    Status(u16),
    #[error("the upstream answered a content type that is neither JSON Lines nor SSE")]
    ContentType,
    /// The built-in player has no such scenario (a 404 for the client).
    #[error("no scenario for this agent")]
    UnknownAgent,
    /// The built-in player has nothing to resume for this agent.
    #[error("nothing to resume for this agent")]
    NoResume,
}

/// Where runs come from.
pub(crate) enum Upstream {
    /// The built-in scenario player.
    Scenarios(ScenarioPlayer),
    /// A harness over HTTP.
    Http(HttpUpstream),
}

impl Upstream {
    /// Opens the run `request` asks for: the events as they arrive. Errors
    /// come before any event (the client gets a 4xx/502 before any stream).
    pub(crate) async fn open(&self, request: &RunRequest) -> Result<EventStream, UpstreamError> {
        match self {
            Upstream::Scenarios(player) => player.open(request),
            Upstream::Http(http) => http.open(request).await,
        }
    }

    /// Asks the upstream to cancel `run_id`; `true` when it accepted.
    pub(crate) async fn cancel(&self, run_id: &str, forwarded: &Forwarded) -> bool {
        match self {
            Upstream::Scenarios(_) => true,
            Upstream::Http(http) => http.cancel(run_id, forwarded).await,
        }
    }
}

/// The built-in upstream: recorded runs played as live ones.
pub(crate) struct ScenarioPlayer {
    scenarios: HashMap<String, Arc<Vec<Event>>>,
    /// `resume.json`: interrupted scenario → the scenario that continues it.
    resumes: HashMap<String, String>,
    speed: f64,
}

impl ScenarioPlayer {
    /// Loads `DIR/*.jsonl` and `DIR/resume.json` (optional).
    pub(crate) fn load(dir: &Path, speed: f64) -> Result<ScenarioPlayer, UsageError> {
        let scenarios = crate::serve::load_scenarios(dir)?;
        let resume_file = dir.join("resume.json");
        let resumes = match std::fs::read(&resume_file) {
            Ok(bytes) => {
                serde_json::from_slice::<HashMap<String, String>>(&bytes).map_err(|e| {
                    UsageError(format!(
                        "{}: not a JSON object of scenario names: {e}",
                        resume_file.display()
                    ))
                })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => {
                return Err(UsageError(format!(
                    "cannot read {}: {e}",
                    resume_file.display()
                )));
            }
        };
        for (from, to) in &resumes {
            if !scenarios.contains_key(to) {
                return Err(UsageError(format!(
                    "{}: {from:?} resumes with {to:?}, which is not a scenario",
                    resume_file.display()
                )));
            }
        }
        Ok(ScenarioPlayer {
            scenarios,
            resumes,
            speed,
        })
    }

    /// The scenario named `agent_id`.
    pub(crate) fn scenario(&self, agent_id: &str) -> Option<Arc<Vec<Event>>> {
        self.scenarios.get(agent_id).cloned()
    }

    fn open(&self, request: &RunRequest) -> Result<EventStream, UpstreamError> {
        let name = match &request.input {
            RunInput::Message(_) => request.agent_id.as_str(),
            RunInput::Resume(_) => self
                .resumes
                .get(&request.agent_id)
                .map(String::as_str)
                .ok_or(UpstreamError::NoResume)?,
        };
        let scenario = self.scenario(name).ok_or(UpstreamError::UnknownAgent)?;
        Ok(Box::pin(crate::serve::paced(
            scenario,
            self.speed,
            request.run_id.clone(),
            request.conversation_id.clone(),
        )))
    }
}

/// A harness over plain HTTP/1.1.
pub(crate) struct HttpUpstream {
    /// `host:port`.
    authority: String,
    /// The URL's path, without a trailing `/` (`""` for the root).
    base_path: String,
    /// Bound on connecting and on receiving the answer's header.
    timeout: Duration,
}

impl HttpUpstream {
    /// Parses `http://HOST:PORT[/PATH]`.
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<HttpUpstream, UsageError> {
        let bad = || {
            UsageError(format!(
                "--upstream must be http://HOST:PORT[/PATH], not {url:?}"
            ))
        };
        let uri: Uri = url.parse().map_err(|_| bad())?;
        if uri.scheme_str() != Some("http") || uri.query().is_some() {
            return Err(bad());
        }
        let authority = uri.authority().ok_or_else(bad)?;
        if authority.as_str().contains('@') {
            return Err(bad());
        }
        let host = authority.host();
        let port = authority.port_u16().unwrap_or(80);
        Ok(HttpUpstream {
            authority: format!("{host}:{port}"),
            base_path: uri.path().trim_end_matches('/').to_owned(),
            timeout,
        })
    }

    /// Sends one request and returns the answer's head and body.
    async fn send(
        &self,
        path: &str,
        body: Vec<u8>,
        forwarded: &Forwarded,
    ) -> Result<hyper::Response<hyper::body::Incoming>, UpstreamError> {
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect(&self.authority)
                .await
                .map_err(|_| UpstreamError::Unreachable)?;
            let _ = tcp.set_nodelay(true);
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake::<_, Body>(TokioIo::new(tcp))
                    .await
                    .map_err(|_| UpstreamError::Unreachable)?;
            // The connection drives the exchange; it ends with the body.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            let mut request = Request::builder()
                .method(Method::POST)
                .uri(format!("{}{path}", self.base_path))
                .header(header::HOST, &self.authority)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/x-ndjson, text/event-stream")
                .body(Body::from(body))
                .map_err(|_| UpstreamError::Unreachable)?;
            forwarded.apply(request.headers_mut());
            sender
                .send_request(request)
                .await
                .map_err(|_| UpstreamError::Unreachable)
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| UpstreamError::TimedOut)?
    }

    async fn open(&self, request: &RunRequest) -> Result<EventStream, UpstreamError> {
        let mut body = serde_json::json!({
            "run_id": request.run_id,
            "conversation_id": request.conversation_id,
            "agent_id": request.agent_id,
            "client_context": request.client_context,
        });
        match &request.input {
            RunInput::Message(m) => body["message"] = m.clone().into(),
            RunInput::Resume(r) => body["resume_data"] = r.clone().into(),
        }
        let response = self
            .send("/runs", body.to_string().into_bytes(), &request.forwarded)
            .await?;
        let status = response.status();
        if !status.is_success() {
            return Err(UpstreamError::Status(status.as_u16()));
        }
        let encoded = response
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
        if encoded {
            // lce sends no Accept-Encoding: a compressed body is refused.
            return Err(UpstreamError::ContentType);
        }
        let media = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase()
            })
            .unwrap_or_default();
        let data = whole_lines(Body::new(response.into_body()).into_data_stream());
        let reader = tokio_util::io::StreamReader::new(data);
        match media.as_str() {
            "application/x-ndjson" | "application/jsonl" | "application/json-lines" => {
                Ok(Box::pin(lce::stream::codec::read_event_lines(reader)))
            }
            "text/event-stream" => Ok(Box::pin(sse_events(reader))),
            _ => Err(UpstreamError::ContentType),
        }
    }

    async fn cancel(&self, run_id: &str, forwarded: &Forwarded) -> bool {
        let mut path = String::from("/runs/");
        // A run id is lce's hex or the AG-UI client's: percent-encode what a
        // path segment cannot hold.
        for b in run_id.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                path.push(char::from(b));
            } else {
                path.push_str(&format!("%{b:02X}"));
            }
        }
        path.push_str("/cancel");
        match self.send(&path, b"{}".to_vec(), forwarded).await {
            Ok(response) => response.status().is_success(),
            Err(e) => {
                tracing::warn!(target: "lce::upstream", run_id, error = %e, "cancel not accepted");
                false
            }
        }
    }
}

/// The body's bytes up to its last newline while it arrives, the rest at
/// its clean end. A body that breaks (a reset, a cut chunked body) ends at
/// its last whole line, without an error: the run then ends as any adapter
/// that closes without a terminal (rule 12, D9), not as a bad line.
fn whole_lines<S, E>(body: S) -> impl Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    futures::stream::unfold(
        (Box::pin(body), bytes::BytesMut::new(), false),
        |(mut body, mut held, done)| async move {
            if done {
                return None;
            }
            loop {
                match body.next().await {
                    Some(Ok(chunk)) => {
                        held.extend_from_slice(&chunk);
                        if let Some(end) = memchr::memrchr(b'\n', &held) {
                            let lines = held.split_to(end + 1).freeze();
                            return Some((Ok(lines), (body, held, false)));
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(target: "lce::upstream", held = held.len(), error = %e, "the upstream's body broke");
                        return None;
                    }
                    None if held.is_empty() => return None,
                    None => return Some((Ok(held.split().freeze()), (body, held, true))),
                }
            }
        },
    )
}

/// The canonical events in the `data:` of an SSE body (frames with only
/// comments are skipped; `event:` and `id:` are ignored; a frame the end
/// cuts before its blank line is discarded).
fn sse_events<R>(reader: R) -> impl Stream<Item = Result<Event, LceError>> + Send + 'static
where
    R: tokio::io::AsyncRead + Send + 'static,
{
    tokio_util::codec::FramedRead::new(reader, lce::stream::SseDecoder::new()).filter_map(
        |frame| async move {
            match frame {
                Ok(frame) if frame.comment_only || frame.data.is_empty() => None,
                Ok(frame) => Some(Event::from_json(&frame.data).map_err(LceError::Parse)),
                // The body's bytes never fail (`whole_lines`): this is the
                // decoder's end with a frame cut before its blank line,
                // which SSE discards.
                Err(lce::stream::SseDecodeError::Io(_)) => None,
                Err(_) => Some(Err(LceError::Io(std::io::Error::other(
                    "the upstream's SSE is malformed",
                )))),
            }
        },
    )
}

/// The client's answer for an upstream that gave no run.
pub(crate) fn error_response(e: &UpstreamError) -> axum::response::Response {
    match e {
        UpstreamError::UnknownAgent => crate::serve::bad_request(
            StatusCode::NOT_FOUND,
            "unknown_agent",
            "No agent with this id.",
        ),
        UpstreamError::NoResume => crate::serve::bad_request(
            StatusCode::NOT_FOUND,
            "nothing_to_resume",
            "Nothing to resume for this agent.",
        ),
        e => {
            tracing::warn!(target: "lce::upstream", error = %e, "no run from the upstream");
            crate::serve::bad_request(
                StatusCode::BAD_GATEWAY,
                "upstream_unavailable",
                "The agent could not be reached.",
            )
        }
    }
}
