//! `GET /inspect`: the inspector (`GatewayBuilder::inspector`), a
//! development tool that shows this replica's runs live, payload excerpts
//! included. Its routes exist only while it is on (else 404):
//!
//! | route | answer |
//! |---|---|
//! | `GET /inspect`, `GET /inspect/run/{run_id}` | the page (one HTML file in the binary: no build step, no CDN) |
//! | `GET /inspect/api/runs` | the index: `{runs: [{run_id, conversation_id, started_ms, open, ended}]}`, open first, then the most recent |
//! | `GET /inspect/api/runs/{run_id}` | one run of the index (404 when it is not there) |
//! | `GET /inspect/api/runs/{run_id}/events` | the run's rows as SSE, from its start, then live to its terminal (the stream route's subscription of the log) |
//!
//! The gate: without a token, every inspector route answers only a
//! loopback peer (`ConnectInfo`; 403 otherwise, and when the peer is
//! unknown). With a token, the page (static bytes, no data) loads from any
//! address and every `/inspect/api/...` request needs `Authorization:
//! Bearer TOKEN` (401 otherwise; compared in constant time, never logged).

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use futures::StreamExt as _;
use lce_runlog::Subscription;

use super::shared::subscribe_error;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::ids::check_id;
use crate::inspect::RowEncoder;
use crate::tokens::constant_time_eq;

/// The page: HTML, CSS and script in one file.
const PAGE: &str = include_str!("inspect.html");

/// The inspector's routes, for a gateway whose inspector is on.
pub(super) fn routes() -> Router<Gateway> {
    Router::new()
        .route("/inspect", get(page))
        .route("/inspect/run/{run_id}", get(page))
        .route("/inspect/api/runs", get(runs))
        .route("/inspect/api/runs/{run_id}", get(run))
        .route("/inspect/api/runs/{run_id}/events", get(events))
}

/// Who asks: the peer's address, when the server gave it.
type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// Why the gate said no.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// The inspector is off.
    Off,
    /// A token is required and none, or a wrong one, came.
    Token,
    /// No token is configured and the peer is not loopback (or unknown).
    NotLoopback,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            Refusal::Off => return StatusCode::NOT_FOUND.into_response(),
            Refusal::Token => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "The inspector needs its bearer token.",
            ),
            Refusal::NotLoopback => (
                StatusCode::FORBIDDEN,
                "forbidden",
                "The inspector answers only on a loopback address.",
            ),
        };
        let body = serde_json::json!({ "error": message, "code": code }).to_string();
        let mut response = (status, body).into_response();
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if status == StatusCode::UNAUTHORIZED {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// `Ok` when the request may see the inspector's data (`data`) or page.
fn gate(gw: &Gateway, peer: &Peer, headers: &HeaderMap, data: bool) -> Result<(), Refusal> {
    let Some(inspector) = &gw.shared.inspector else {
        return Err(Refusal::Off);
    };
    match &inspector.token {
        Some(_) if !data => Ok(()),
        Some(want) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            if given.is_some_and(|g| constant_time_eq(g.as_bytes(), want.as_bytes())) {
                Ok(())
            } else {
                Err(Refusal::Token)
            }
        }
        None if peer
            .as_ref()
            .is_some_and(|Extension(ConnectInfo(a))| a.ip().is_loopback()) =>
        {
            Ok(())
        }
        None => Err(Refusal::NotLoopback),
    }
}

async fn page(State(gw): State<Gateway>, peer: Peer, headers: HeaderMap) -> Response {
    if let Err(refused) = gate(&gw, &peer, &headers, false) {
        return refused.into_response();
    }
    let mut response = PAGE.into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

fn json(value: &serde_json::Value) -> Response {
    let mut response = value.to_string().into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn runs(State(gw): State<Gateway>, peer: Peer, headers: HeaderMap) -> Response {
    if let Err(refused) = gate(&gw, &peer, &headers, true) {
        return refused.into_response();
    }
    match &gw.shared.inspector {
        Some(inspector) => json(&inspector.runs_json()),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn run(
    State(gw): State<Gateway>,
    Path(run_id): Path<String>,
    peer: Peer,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = gate(&gw, &peer, &headers, true) {
        return refused.into_response();
    }
    match gw
        .shared
        .inspector
        .as_ref()
        .and_then(|i| i.run_json(&run_id))
    {
        Some(entry) => json(&entry),
        None => ApiError::UnknownRun.into_response(),
    }
}

async fn events(
    State(gw): State<Gateway>,
    Path(run_id): Path<String>,
    peer: Peer,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = gate(&gw, &peer, &headers, true) {
        return refused.into_response();
    }
    if let Err(e) = check_id("run_id", &run_id) {
        return e.into_response();
    }
    let log = gw.shared.log.clone();
    let subscription = match Subscription::open(log, &run_id, RowEncoder, None, true).await {
        Ok(s) => s.take_over(crate::gateway::takeover(&gw.shared)),
        Err(e) => return subscribe_error(&e).into_response(),
    };
    let body = subscription
        .into_stream()
        .map(|r| r.map_err(|_| std::io::Error::other("run log error")));
    let mut response = Response::new(Body::from_stream(body));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
