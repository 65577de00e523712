//! `GET /healthz` and `GET /readyz`: what an orchestrator's probes ask
//! (`gateway.md`, "Operating it").

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use crate::error::json_response;
use crate::gateway::Gateway;

/// How long the log engine has to answer a readiness probe.
pub(crate) const READY_WITHIN: Duration = Duration::from_secs(1);

/// A run id no run has (not a valid id at the door: it starts with `.`),
/// asked for to see whether the engine answers.
const PROBE_RUN: &str = ".readiness-probe";

/// `200 {"status": "ok"}` while the process serves.
pub(super) async fn healthz() -> Response {
    json_response(StatusCode::OK, &serde_json::json!({"status": "ok"}))
}

/// `200 {"status": "ready"}` when the gateway can take runs; `503
/// {"status": "not_ready", "reason": "draining" | "engine_unreachable"}`
/// once it drains (`Gateway::drain`) or when the log engine does not
/// answer within [`READY_WITHIN`].
pub(super) async fn readyz(State(gw): State<Gateway>) -> Response {
    let not_ready = |reason: &str| {
        json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({"status": "not_ready", "reason": reason}),
        )
    };
    if gw.draining() {
        return not_ready("draining");
    }
    match tokio::time::timeout(READY_WITHIN, gw.shared.log.info(PROBE_RUN)).await {
        Ok(Ok(_)) => json_response(StatusCode::OK, &serde_json::json!({"status": "ready"})),
        Ok(Err(_)) | Err(_) => {
            tracing::warn!(target: "lce::gateway", "not ready: the log engine did not answer");
            not_ready("engine_unreachable")
        }
    }
}
