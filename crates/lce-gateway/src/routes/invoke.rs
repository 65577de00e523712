//! DA's non-streaming invoke, `POST /api/v1/chat/invoke`: the run comes
//! from the upstream like a start's, is coordinated like every run, and is
//! not logged: the answer comes once, at the end (see
//! [`accumulate`](crate::accumulate)).

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use lce_encode_custom::invoke::{CONTENT_TYPE, InvokeIds, InvokeResponse};

use super::shared::{JsonBody, new_run_id};
use crate::error::{ApiError, parse_body};
use crate::gateway::Gateway;
use crate::ids::check_id;
use crate::upstream::{Forwarded, RunInput, RunRequest};
use tracing::Instrument as _;

#[derive(serde::Deserialize)]
struct InvokeRequest {
    message: String,
    conversation_id: String,
    agent_id: String,
    #[serde(default)]
    client_context: Option<serde_json::Value>,
}

/// DA's request body, DA's answer (200 finished, 400 interrupt, 503
/// capacity with `Retry-After`, 500 otherwise). The run is registered
/// while it goes, so shutdown reaches it.
pub(super) async fn invoke(
    State(gw): State<Gateway>,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> Response {
    match invoke_run(&gw, &headers, &body).await {
        Ok(response) => http_response(response),
        Err(e) => e.into_response(),
    }
}

async fn invoke_run(
    gw: &Gateway,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<InvokeResponse, ApiError> {
    let req: InvokeRequest = parse_body(body)?;
    check_id("conversation_id", &req.conversation_id)?;
    check_id("agent_id", &req.agent_id)?;
    let run_id = new_run_id()?;
    let mut request = RunRequest::new(
        run_id.clone(),
        req.conversation_id.clone(),
        req.agent_id.clone(),
        RunInput::Message(req.message),
    );
    request.client_context = req.client_context;
    request.forwarded = Forwarded::from_headers(headers);
    // The invoke's span lasts to its answer: the whole run.
    let span = request.span("invoke");
    let slot = gw.admit()?;
    let acc = async {
        let events = gw.open_upstream(request).await?;
        let cancel = gw.register(&run_id, slot, crate::gateway::Origin::Invoke);
        let run = gw.enforced(events, &run_id, &req.conversation_id, cancel);
        Ok::<_, ApiError>(crate::invoke::accumulate(run, true).await)
    }
    .instrument(span)
    .await?;
    gw.unregister(&run_id);
    Ok(acc.response(&InvokeIds {
        agent_id: &req.agent_id,
        conversation_id: &req.conversation_id,
        trace_id: None,
    }))
}

fn http_response(r: InvokeResponse) -> Response {
    let Ok(status) = StatusCode::from_u16(r.status) else {
        return ApiError::Internal.into_response();
    };
    let mut response = Response::new(Body::from(r.body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    if let Some(secs) = r.retry_after_seconds {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}
