//! Standard AG-UI: `POST /api/v1/agui`, a `RunAgentInput` in, `agui-v1` out.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use lce_core::WireFormat;

use super::shared::{JsonBody, answer};
use crate::error::{ApiError, parse_body};
use crate::gateway::Gateway;
use crate::ids::check_id;
use crate::upstream::{Forwarded, RunInput, RunRequest};
use tracing::Instrument as _;

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

/// The agent is `forwardedProps.agentId` (or `agent_id`), else the default
/// agent; the message is the text of the last user message; the run and
/// thread ids are the client's.
pub(super) async fn run(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Response {
    answer(agui_run(&gw, &headers, &body).await)
}

async fn agui_run(gw: &Gateway, headers: &HeaderMap, body: &[u8]) -> Result<Response, ApiError> {
    let req: RunAgentInput = parse_body(body)?;
    check_id("threadId", &req.thread_id)?;
    check_id("runId", &req.run_id)?;
    let agent = req
        .forwarded_props
        .as_ref()
        .and_then(|p| p.get("agentId").or_else(|| p.get("agent_id")))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .or_else(|| gw.shared.settings.default_agent.clone())
        .ok_or(ApiError::MissingAgent)?;
    check_id("forwardedProps.agentId", &agent)?;
    let message = req
        .messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"))
        .and_then(|m| m.get("content"))
        .and_then(|c| c.as_str())
        .unwrap_or("")
        .to_owned();
    let mut request = RunRequest::new(req.run_id, req.thread_id, agent, RunInput::Message(message));
    request.client_context = req.forwarded_props;
    request.forwarded = Forwarded::from_headers(headers);
    let span = request.span("agui");
    gw.start_run(request, WireFormat::AguiV1, crate::gateway::Origin::Agui)
        .instrument(span)
        .await
}
