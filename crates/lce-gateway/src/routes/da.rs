//! DA's routes: `POST /api/v1/chat/stream/start`, `.../resume` (a new run
//! each, with a fresh id, so runs never collide in the log) and
//! `.../cancel` (on any replica).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use tracing::Instrument as _;

use super::shared::{JsonBody, answer, new_run_id, protocol};
use crate::error::{ApiError, json_response, parse_body};
use crate::gateway::Gateway;
use crate::ids::check_id;
use crate::upstream::{Forwarded, RunInput, RunRequest};

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

/// `POST /api/v1/chat/stream/start`: a new run for the client's message.
pub(super) async fn start(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Response {
    answer(da_run(&gw, &headers, &body, false).await)
}

/// `POST /api/v1/chat/stream/resume`: a new run that continues the
/// conversation's interrupted one, with the client's `resume_data`.
pub(super) async fn resume(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Response {
    answer(da_run(&gw, &headers, &body, true).await)
}

async fn da_run(
    gw: &Gateway,
    headers: &HeaderMap,
    body: &[u8],
    resume: bool,
) -> Result<Response, ApiError> {
    let req: DaRunRequest = parse_body(body)?;
    check_id("conversation_id", &req.conversation_id)?;
    check_id("agent_id", &req.agent_id)?;
    let input = match (resume, req.message, req.resume_data) {
        (false, Some(message), _) => RunInput::Message(message),
        (true, _, Some(data)) => RunInput::Resume(data),
        _ => return Err(ApiError::InvalidRequest),
    };
    let format = protocol(req.protocol.as_deref())?;
    let mut request = RunRequest::new(new_run_id()?, req.conversation_id, req.agent_id, input);
    request.client_context = req.client_context;
    request.forwarded = Forwarded::from_headers(headers);
    let origin = if resume {
        crate::gateway::Origin::Resume
    } else {
        crate::gateway::Origin::Start
    };
    let span = request.span(origin.route());
    gw.start_run(request, format, origin).instrument(span).await
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
pub(super) async fn cancel(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Response {
    let cancelled = async {
        let req: CancelRequest = parse_body(&body)?;
        check_id("conversation_id", &req.conversation_id)?;
        gw.cancel_conversation(&req.conversation_id, &Forwarded::from_headers(&headers))
            .await
            .map_err(|_| ApiError::LogUnavailable)
    };
    match cancelled.await {
        Ok(cancelled) => json_response(
            StatusCode::OK,
            &serde_json::json!({ "cancelled": cancelled }),
        ),
        Err(e) => e.into_response(),
    }
}
