//! `GET /api/v1/runs/{run_id}/stream` (a run from the log, resumable by
//! `Last-Event-ID`) and push ingest `POST /api/v1/runs`.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures::StreamExt as _;
use lce_runlog::FrameId;

use super::shared::{answer, protocol, subscribe_error};
use crate::body::{IdleEnd, push_lines, within};
use crate::error::{ApiError, log_error};
use crate::gateway::{Gateway, Ingest};
use crate::ids::check_id;
use crate::owner::spawn_owner;
use crate::sse::insert_run_headers;
use crate::tokens::constant_time_eq;

/// `?protocol=` and `?token=` of `GET /api/v1/runs/{run_id}/stream`.
#[derive(serde::Deserialize)]
pub(super) struct StreamQuery {
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

/// The run from its start or after `Last-Event-ID`, then live until its
/// terminal, with `id:` lines. A missing or wrong token looks exactly like
/// an unknown run.
pub(super) async fn stream(
    State(gw): State<Gateway>,
    Path(run_id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    answer(read_run(&gw, &run_id, &query, &headers).await)
}

async fn read_run(
    gw: &Gateway,
    run_id: &str,
    query: &StreamQuery,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    check_id("run_id", run_id)?;
    let token = headers
        .get("x-run-token")
        .and_then(|v| v.to_str().ok())
        .or(query.token.as_deref());
    // The token covers the nonce of the run's current incarnation: an
    // unknown run and a wrong token get the same answer.
    let Some(token) = token else {
        return Err(ApiError::UnknownRun);
    };
    let info = gw.shared.log.info(run_id).await.map_err(log_error)?;
    let nonce = info.map(|info| info.nonce).unwrap_or_default();
    if !gw.shared.tokens.verify(run_id, &nonce, token) {
        return Err(ApiError::UnknownRun);
    }
    let format = protocol(query.protocol.as_deref())?;
    let after = match headers.get("last-event-id") {
        None => None,
        Some(v) => match v.to_str().ok().and_then(|v| v.parse::<FrameId>().ok()) {
            Some(id) => Some(id),
            None => {
                crate::metrics::resume("malformed_id");
                return Err(ApiError::BadLastEventId);
            }
        },
    };
    let subscribed = gw
        .subscribe(run_id, token, format, after, true, None)
        .await
        .map_err(|e| subscribe_error(&e));
    if after.is_some() {
        crate::metrics::resume(match &subscribed {
            Ok(_) => "resumed",
            Err(ApiError::UnknownLastEventId) => "unknown_id",
            Err(_) => "failed",
        });
    }
    subscribed
}

/// A harness pushes a run as canonical JSON Lines; the answer, once the run
/// has its terminal, is a JSON summary; its headers, with the run's
/// `X-Run-Id` and `X-Run-Token`, come as soon as the run's log exists (the
/// harness holds the ingest token: it hands the read token to its clients,
/// who may read the run live while it is pushed).
/// A harness that sends no line for the ingest idle timeout ends its run
/// as a closure (rule 12); no first line in that time is a 408.
pub(super) async fn push(State(gw): State<Gateway>, headers: HeaderMap, body: Body) -> Response {
    answer(push_run(&gw, &headers, body).await)
}

async fn push_run(gw: &Gateway, headers: &HeaderMap, body: Body) -> Result<Response, ApiError> {
    match &gw.shared.ingest {
        Ingest::Off => return Err(ApiError::IngestOff),
        Ingest::Anonymous => {}
        Ingest::Bearer(want) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), want.as_bytes())) {
                return Err(ApiError::Unauthorized);
            }
        }
    }
    let slot = gw.admit()?;
    let settings = &gw.shared.settings;
    // A stream, not a body to buffer: bounded by D19's bytes per run and,
    // between two lines, by the ingest idle timeout.
    let idle = settings.ingest_idle_timeout;
    let mut lines = Box::pin(push_lines(body, &settings.limits).peekable());
    let Some(first) = within(idle, lines.as_mut().peek()).await else {
        tracing::info!(target: "lce::gateway", idle_secs = idle.as_secs_f64(), "no first line pushed: 408");
        return Err(ApiError::BodyTimeout);
    };
    let Some(Ok(first)) = first else {
        return Err(ApiError::BadRun);
    };
    let (run_id, conversation_id) = (first.run_id.to_string(), first.conversation_id.to_string());
    check_id("run_id", &run_id)?;
    check_id("conversation_id", &conversation_id)?;
    let (writer, token) = gw.create(&run_id, &conversation_id).await?;
    let cancel = gw.register(&run_id, slot, crate::gateway::Origin::Push);
    let lines = IdleEnd::new(lines, idle, run_id.clone());
    let run = gw.enforced(lines, &run_id, &conversation_id, cancel);
    let owner = spawn_owner(gw.clone(), writer, run);
    // The headers go as soon as the run's log exists, so that the harness
    // can hand `X-Run-Token` to its clients while it is still pushing; the
    // summary follows once the run has its terminal.
    let summary = {
        let run_id = run_id.clone();
        futures::stream::once(async move {
            let body = match owner.await {
                Ok(summary) => summary_json(&run_id, &summary),
                // The owner task failed: the run is the sweeper's now.
                Err(_) => serde_json::json!({
                    "run_id": run_id,
                    "error": ApiError::LogUnavailable.message(),
                    "code": ApiError::LogUnavailable.code(),
                }),
            };
            Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(body.to_string()))
        })
    };
    let mut response = Response::new(Body::from_stream(summary));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    insert_run_headers(response.headers_mut(), &run_id, &token);
    Ok(response)
}

/// A pushed run's summary, the push's answer.
fn summary_json(run_id: &str, summary: &crate::owner::RunSummary) -> serde_json::Value {
    serde_json::json!({
        "run_id": run_id,
        "terminal": summary.terminal.map(|t| t.as_str()),
        "events_in": summary.events_in,
        "dropped": summary.dropped,
        "violations": summary.violation.iter().map(|(rule, position)| {
            serde_json::json!({"rule": rule, "position": position})
        }).collect::<Vec<_>>(),
        "outcome": summary.outcome.as_str(),
    })
}
