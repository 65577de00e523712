//! The routes of `gateway.md` as one `Router` (`Gateway::router`): each
//! route in its file, what they share in `shared.rs`.

mod agui;
mod da;
mod invoke;
mod runs;
mod shared;

use axum::Router;
use axum::routing::{get, post};

use crate::gateway::Gateway;

/// Every route, with `gateway` as their state.
pub(crate) fn router<S>(gateway: Gateway) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/api/v1/chat/stream/start", post(da::start))
        .route("/api/v1/chat/stream/resume", post(da::resume))
        .route("/api/v1/chat/stream/cancel", post(da::cancel))
        .route("/api/v1/chat/invoke", post(invoke::invoke))
        .route("/api/v1/agui", post(agui::run))
        .route("/api/v1/runs", post(runs::push))
        .route("/api/v1/runs/{run_id}/stream", get(runs::stream))
        .layer(axum::middleware::map_response_with_state(
            gateway.clone(),
            count_refusal,
        ))
        .with_state(gateway)
}

/// Counts an answer that is a refusal (`Gateway::refusals`).
async fn count_refusal(
    axum::extract::State(gateway): axum::extract::State<Gateway>,
    response: axum::response::Response,
) -> axum::response::Response {
    if let Some(crate::error::Refused(code)) = response.extensions().get() {
        gateway.count_refusal(code);
    }
    response
}

impl Gateway {
    /// Every route of `gateway.md`, to serve as is or to nest under any
    /// prefix next to a host's own routes and layers:
    /// `Router::new().nest("/agents", gateway.router())`. See the crate
    /// documentation for the list.
    pub fn router<S>(&self) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        router(self.clone())
    }
}
