//! `lce-probe`: certifies a harness that speaks lce's upstream protocol
//! (`docs/upstream.md`) by driving it as `lce serve --upstream` would, and
//! reports what it got wrong (`lce probe URL`).
//!
//! [`probe`] makes, against `http://HOST:PORT[/PATH]`:
//!
//! 1. one start (`POST {URL}/runs`) per message of
//!    [`ProbeOptions::messages`], then a resume of every interrupt the
//!    harness raises (approve every tool call; an empty form otherwise), up
//!    to [`ProbeOptions::max_resumes`] in a row;
//! 2. a start that it cancels (`POST {URL}/runs/{run_id}/cancel`) after the
//!    first events: the run must end with `run.cancelled` within
//!    [`ProbeOptions::cancel_bound`];
//! 3. the cancel of a run the harness never saw: a typed JSON error
//!    (non-2xx) is expected;
//! 4. a start whose body it drops after the first events (a client that
//!    goes away), then one more start: the harness must keep serving.
//!
//! Every event of every body is checked to the end of the body (events after
//! a terminal included) as an adapter's output (D10a: the validator's
//! adapter mode, with the request's run and conversation ids and, unless
//! [`ProbeOptions::allow_gaps`], D3's contiguous sequences) and by the
//! sanitizer's bounds; the protocol is checked too (status codes, content
//! types, NDJSON and SSE framing, the 4 MiB line bound, a terminal on every
//! run, errors typed as JSON and free of stack traces and secrets). Each
//! [`Finding`] names the rule or check, the step, the run and the sequence;
//! a secret found is described by its kind and place, never shown.
//!
//! May depend on: `lce-types`, `lce-validate`, `lce-sanitize` (its
//! redaction pass), hyper's HTTP/1.1 client, tokio, serde. It is a client:
//! no gateway crate.

mod body;
mod check;
mod http;
mod leak;
mod steps;

use std::time::Duration;

use serde::Serialize;

/// The message of the cancel and disconnect steps by default: the example
/// harness streams a long answer for a message with the word "slow".
pub const DEFAULT_CANCEL_MESSAGE: &str = "Please give a slow, long answer.";

/// The start's message when [`ProbeOptions::messages`] is empty.
pub const DEFAULT_MESSAGE: &str = "Hello from lce probe.";

/// What [`probe`] does; builder-style setters. Its `Debug` leaves the
/// bearer token out.
#[non_exhaustive]
#[derive(Clone)]
pub struct ProbeOptions {
    /// The harness's base URL, `http://HOST:PORT[/PATH]`.
    pub url: String,
    /// One start per message ([`DEFAULT_MESSAGE`] when empty).
    pub messages: Vec<String>,
    /// The message of the cancel and disconnect steps: one that makes the
    /// harness run long enough to be cancelled.
    pub cancel_message: String,
    /// The `agent_id` of every request.
    pub agent_id: String,
    /// Bounds one request: connecting, the answer's head and its whole body.
    pub request_timeout: Duration,
    /// Bounds the whole probe; steps not begun by then are reported.
    pub overall_timeout: Duration,
    /// How long after an accepted cancel the run must end with `run.cancelled`.
    pub cancel_bound: Duration,
    /// Accept gaps in `sequence` (D3 allows them; the probe checks D3's
    /// contiguity unless this is set).
    pub allow_gaps: bool,
    /// Resumes in a row after one start, at most.
    pub max_resumes: usize,
    /// Sent as `Authorization: Bearer TOKEN` with every request, for a
    /// harness that checks it (as lce forwards a client's); never printed.
    pub bearer: Option<String>,
}

impl std::fmt::Debug for ProbeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeOptions")
            .field("url", &self.url)
            .field("messages", &self.messages.len())
            .field("agent_id", &self.agent_id)
            .field("request_timeout", &self.request_timeout)
            .field("overall_timeout", &self.overall_timeout)
            .field("cancel_bound", &self.cancel_bound)
            .field("allow_gaps", &self.allow_gaps)
            .field("max_resumes", &self.max_resumes)
            .field("bearer", &self.bearer.is_some())
            .finish_non_exhaustive()
    }
}

impl ProbeOptions {
    /// The defaults for `url`: the default message, 30 s per request, 120 s
    /// in all, 5 s for a cancel, contiguous sequences, 8 resumes.
    pub fn new(url: impl Into<String>) -> Self {
        ProbeOptions {
            url: url.into(),
            messages: Vec::new(),
            cancel_message: DEFAULT_CANCEL_MESSAGE.to_owned(),
            agent_id: "lce-probe".to_owned(),
            request_timeout: Duration::from_secs(30),
            overall_timeout: Duration::from_secs(120),
            cancel_bound: Duration::from_secs(5),
            allow_gaps: false,
            max_resumes: 8,
            bearer: None,
        }
    }

    /// Sets [`ProbeOptions::messages`].
    pub fn messages(mut self, messages: Vec<String>) -> Self {
        self.messages = messages;
        self
    }

    /// Sets [`ProbeOptions::cancel_message`].
    pub fn cancel_message(mut self, message: impl Into<String>) -> Self {
        self.cancel_message = message.into();
        self
    }

    /// Sets [`ProbeOptions::agent_id`].
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = agent_id.into();
        self
    }

    /// Sets [`ProbeOptions::request_timeout`].
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`ProbeOptions::overall_timeout`].
    pub fn overall_timeout(mut self, timeout: Duration) -> Self {
        self.overall_timeout = timeout;
        self
    }

    /// Sets [`ProbeOptions::cancel_bound`].
    pub fn cancel_bound(mut self, bound: Duration) -> Self {
        self.cancel_bound = bound;
        self
    }

    /// Sets [`ProbeOptions::max_resumes`].
    pub fn max_resumes(mut self, max: usize) -> Self {
        self.max_resumes = max;
        self
    }

    /// Sets [`ProbeOptions::bearer`].
    pub fn bearer(mut self, token: Option<String>) -> Self {
        self.bearer = token;
        self
    }

    /// Sets [`ProbeOptions::allow_gaps`].
    pub fn allow_gaps(mut self, allow: bool) -> Self {
        self.allow_gaps = allow;
        self
    }
}

/// One thing the harness got wrong.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule (`rule 12 (missing_terminal)`) or the protocol check
    /// (`content_type`, `cancel_ignored`, ...; `docs/upstream.md` lists them).
    pub check: String,
    /// Which request of the probe: `start 1`, `resume 1 of start 1`,
    /// `cancel`, `cancel unknown run`, `disconnect`, `after disconnect`.
    pub step: String,
    /// The run the request named, when it named one.
    pub run_id: Option<String>,
    /// The `sequence` of the event at fault, when an event is.
    pub sequence: Option<u64>,
    /// A short explanation; never payload text or a secret.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let run = self.run_id.as_deref().unwrap_or("-");
        write!(f, "{}: {}: run {run}: seq ", self.check, self.step)?;
        match self.sequence {
            Some(s) => write!(f, "{s}")?,
            None => f.write_str("-")?,
        }
        write!(f, ": {}", self.message)
    }
}

/// What [`probe`] found.
#[non_exhaustive]
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The harness probed.
    pub url: String,
    /// `true` when nothing was found.
    pub passed: bool,
    /// Requests made.
    pub requests: u64,
    /// Runs read (starts and resumes that answered with events).
    pub runs: u64,
    /// Events read.
    pub events: u64,
    /// What was found, in the order found.
    pub findings: Vec<Finding>,
}

impl Report {
    /// One finding a line (`CHECK: STEP: run RUN: seq SEQ: MESSAGE`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&f.to_string());
            out.push('\n');
        }
        out
    }

    /// A one-line summary: requests, runs, events, findings.
    pub fn summary(&self) -> String {
        format!(
            "lce probe: {} requests, {} runs, {} events: {}",
            self.requests,
            self.runs,
            self.events,
            match self.findings.len() {
                0 => "passed".to_owned(),
                1 => "1 finding".to_owned(),
                n => format!("{n} findings"),
            }
        )
    }

    /// The report as one JSON object (`url`, `passed`, `requests`, `runs`,
    /// `events`, `findings`: `check`, `step`, `run_id`, `sequence`,
    /// `message`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why the probe could not run (exit 2 for `lce probe`).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The URL is not `http://HOST:PORT[/PATH]`.
    #[error("the harness URL must be http://HOST:PORT[/PATH] (no user, no query, no https)")]
    BadUrl,
    /// The bearer token is not a header value (a control character, ...).
    #[error("the bearer token cannot be sent in a header")]
    BadBearer,
    /// The first request could not connect or got no answer in time.
    #[error("the harness at {0} could not be reached")]
    Unreachable(String),
    /// The probe's own runtime could not start.
    #[error("could not start the probe's runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// Probes the harness at `options.url`; the report lists what was found.
pub async fn probe(options: &ProbeOptions) -> Result<Report, ProbeError> {
    steps::run(options).await
}

/// [`probe`] on a runtime of its own, for a synchronous caller.
pub fn probe_blocking(options: &ProbeOptions) -> Result<Report, ProbeError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(probe(options))
}
