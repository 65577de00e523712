//! [`ApiError`]: every error answer of the gateway, one type. A JSON body
//! `{"error": MESSAGE, "code": CODE}` with a fixed, safe message: nothing of
//! the request, the upstream's answer or the engine's words.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::upstream::UpstreamError;

/// An error answer, sent before any stream starts. Its message and code are
/// fixed texts (see [`ApiError::code`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiError {
    /// The body is not JSON (400 `malformed_json`).
    MalformedJson,
    /// The body is JSON but not a valid request (422 `invalid_request`).
    InvalidRequest,
    /// `protocol` names no wire format (400 `unknown_protocol`).
    UnknownProtocol,
    /// An AG-UI request names no agent and there is no default (400
    /// `missing_agent`).
    MissingAgent,
    /// No run with this id, or a missing or wrong read token (404
    /// `unknown_run`: the two look the same).
    UnknownRun,
    /// A run with this id already has a log (409 `run_exists`).
    RunExists,
    /// The run log engine is unavailable (503 `log_unavailable`).
    LogUnavailable,
    /// `Last-Event-ID` is not `<position>.<k>` (400 `bad_last_event_id`).
    BadLastEventId,
    /// `Last-Event-ID` names no frame of the run (400
    /// `unknown_last_event_id`).
    UnknownLastEventId,
    /// The upstream gave no run (404 `unknown_agent` or `nothing_to_resume`
    /// for the scenario player, else 502 `upstream_unavailable`).
    Upstream(UpstreamErrorKind),
    /// Push ingest is off (404 `not_found`).
    IngestOff,
    /// A missing or wrong ingest token (401 `unauthorized`).
    Unauthorized,
    /// A pushed body whose first line is not a canonical event (400
    /// `bad_run`).
    BadRun,
    /// The request body stopped arriving (408 `body_timeout`; the connection
    /// is closed).
    BodyTimeout,
    /// The request body is larger than the bound (413 `body_too_large`; the
    /// connection is closed).
    BodyTooLarge,
    /// No random id could be made (503 `no_randomness`).
    NoRandomness,
    /// An answer the gateway could not form (500 `internal_error`).
    Internal,
    /// An id that is not 1 to 256 bytes of `A-Z a-z 0-9 . _ : @ -` (or
    /// starts with `.`): 400 `invalid_id`, the body naming the `field`.
    InvalidId {
        /// The request's name for the id (`conversation_id`, `threadId`,
        /// `run_id`, ...).
        field: &'static str,
    },
    /// The replica has its `max_runs` open (503 `overloaded`, with
    /// `Retry-After`): nothing was called or written.
    Overloaded,
}

/// The `Retry-After` of an [`ApiError::Overloaded`] answer, in seconds.
const RETRY_AFTER_SECS: &str = "5";

/// What kind of upstream failure an [`ApiError::Upstream`] is (the
/// upstream's own words are never kept).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamErrorKind {
    /// The scenario player has no such scenario.
    UnknownAgent,
    /// The scenario player has nothing to resume for this agent.
    NothingToResume,
    /// Unreachable, timed out, an error status, a wrong content type.
    Unavailable,
}

impl From<&UpstreamError> for ApiError {
    fn from(e: &UpstreamError) -> Self {
        ApiError::Upstream(match e {
            UpstreamError::UnknownAgent => UpstreamErrorKind::UnknownAgent,
            UpstreamError::NoResume => UpstreamErrorKind::NothingToResume,
            _ => UpstreamErrorKind::Unavailable,
        })
    }
}

impl ApiError {
    /// The HTTP status.
    pub fn status(self) -> StatusCode {
        match self {
            ApiError::MalformedJson
            | ApiError::UnknownProtocol
            | ApiError::MissingAgent
            | ApiError::BadLastEventId
            | ApiError::UnknownLastEventId
            | ApiError::BadRun
            | ApiError::InvalidId { .. } => StatusCode::BAD_REQUEST,
            ApiError::InvalidRequest => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::UnknownRun | ApiError::IngestOff => StatusCode::NOT_FOUND,
            ApiError::Upstream(UpstreamErrorKind::UnknownAgent)
            | ApiError::Upstream(UpstreamErrorKind::NothingToResume) => StatusCode::NOT_FOUND,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::RunExists => StatusCode::CONFLICT,
            ApiError::LogUnavailable | ApiError::NoRandomness | ApiError::Overloaded => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable `code` of the body.
    pub fn code(self) -> &'static str {
        match self {
            ApiError::MalformedJson => "malformed_json",
            ApiError::InvalidRequest => "invalid_request",
            ApiError::UnknownProtocol => "unknown_protocol",
            ApiError::MissingAgent => "missing_agent",
            ApiError::UnknownRun => "unknown_run",
            ApiError::RunExists => "run_exists",
            ApiError::LogUnavailable => "log_unavailable",
            ApiError::BadLastEventId => "bad_last_event_id",
            ApiError::UnknownLastEventId => "unknown_last_event_id",
            ApiError::Upstream(UpstreamErrorKind::UnknownAgent) => "unknown_agent",
            ApiError::Upstream(UpstreamErrorKind::NothingToResume) => "nothing_to_resume",
            ApiError::Upstream(_) => "upstream_unavailable",
            ApiError::IngestOff => "not_found",
            ApiError::Unauthorized => "unauthorized",
            ApiError::BadRun => "bad_run",
            ApiError::BodyTimeout => "body_timeout",
            ApiError::BodyTooLarge => "body_too_large",
            ApiError::NoRandomness => "no_randomness",
            ApiError::Internal => "internal_error",
            ApiError::InvalidId { .. } => "invalid_id",
            ApiError::Overloaded => "overloaded",
        }
    }

    /// The human-readable `error` of the body.
    pub fn message(self) -> &'static str {
        match self {
            ApiError::MalformedJson | ApiError::InvalidRequest => {
                "The request body is not a valid request."
            }
            ApiError::UnknownProtocol => "Unknown protocol.",
            ApiError::MissingAgent => "Name the agent in forwardedProps.agentId.",
            ApiError::UnknownRun => "No run with this id.",
            ApiError::RunExists => "A run with this id already exists.",
            ApiError::LogUnavailable => "The run log is unavailable.",
            ApiError::BadLastEventId => "Last-Event-ID must be of the form <position>.<k>.",
            ApiError::UnknownLastEventId => "Last-Event-ID names no frame of this run.",
            ApiError::Upstream(UpstreamErrorKind::UnknownAgent) => "No agent with this id.",
            ApiError::Upstream(UpstreamErrorKind::NothingToResume) => {
                "Nothing to resume for this agent."
            }
            ApiError::Upstream(_) => "The agent could not be reached.",
            ApiError::IngestOff => "Push ingest is off.",
            ApiError::Unauthorized => "A valid ingest token is required.",
            ApiError::BadRun => "The body's first line must be a canonical event.",
            ApiError::BodyTimeout => "The request body stopped arriving.",
            ApiError::BodyTooLarge => "The request body is too large.",
            ApiError::NoRandomness => "No run id could be made; try again.",
            ApiError::Internal => lce_types::AGENT_EXECUTION_FAILED,
            ApiError::InvalidId { .. } => "invalid_id",
            ApiError::Overloaded => "overloaded",
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.code(), self.status().as_u16())
    }
}

impl std::error::Error for ApiError {}

/// A JSON answer: `value` with `Content-Type: application/json`.
pub(crate) fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        value.to_string(),
    )
        .into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "error": self.message(), "code": self.code() });
        if let ApiError::InvalidId { field } = self {
            // `gateway.md`: `{"error": "invalid_id", "field": NAME}`.
            body["field"] = field.into();
        }
        let mut response = json_response(self.status(), &body);
        // What the gateway's router counts (`Gateway::refusals`).
        response.extensions_mut().insert(Refused(self.code()));
        if self == ApiError::Overloaded {
            // Open runs take seconds to minutes to end.
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(RETRY_AFTER_SECS),
            );
        }
        if matches!(self, ApiError::BodyTimeout | ApiError::BodyTooLarge) {
            // The rest of the body is never read: the connection closes.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// Marks an answer as a refusal with this error code, for the count the
/// router keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Refused(pub(crate) &'static str);

/// Parses a JSON request body, or names what is wrong with it (its
/// category only: serde's message may quote the input).
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => ApiError::InvalidRequest,
        _ => ApiError::MalformedJson,
    })
}

/// The answer for a run log operation that failed.
pub(crate) fn log_error(e: lce_runlog::LogError) -> ApiError {
    match e {
        lce_runlog::LogError::Exists => ApiError::RunExists,
        lce_runlog::LogError::NotFound => ApiError::UnknownRun,
        _ => ApiError::LogUnavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_classified_without_their_content() {
        #[derive(serde::Deserialize, Debug)]
        struct Req {
            #[allow(dead_code)]
            a: u32,
        }
        assert_eq!(
            parse_body::<Req>(b"{").unwrap_err(),
            ApiError::MalformedJson
        );
        assert_eq!(
            parse_body::<Req>(br#"{"a": "x"}"#).unwrap_err(),
            ApiError::InvalidRequest
        );
        assert!(parse_body::<Req>(br#"{"a": 1}"#).is_ok());
    }
}
