//! The routes of `gateway.md` as one `Router` (`Gateway::router`): each
//! route in its file, what they share in `shared.rs`.

mod agui;
mod da;
mod health;
mod inspect;
mod invoke;
mod runs;
mod shared;

use axum::Router;
use axum::routing::{get, post};

use crate::gateway::{Cors, Gateway};

/// Every route, with `gateway` as their state.
pub(crate) fn router<S>(gateway: Gateway) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let router = Router::new()
        .route("/api/v1/chat/stream/start", post(da::start))
        .route("/api/v1/chat/stream/resume", post(da::resume))
        .route("/api/v1/chat/stream/cancel", post(da::cancel))
        .route("/api/v1/chat/invoke", post(invoke::invoke))
        .route("/api/v1/agui", post(agui::run))
        .route("/api/v1/runs", post(runs::push))
        .route("/api/v1/runs/{run_id}/stream", get(runs::stream))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz));
    let router = match &gateway.shared.inspector {
        Some(_) => router.merge(inspect::routes()),
        None => router,
    };
    let router = match &gateway.shared.settings.metrics {
        Some(render) => router.merge(crate::metrics::metrics_router(render.clone())),
        None => router,
    };
    let router = router
        .layer(axum::middleware::from_fn(crate::metrics::count_request))
        .layer(axum::middleware::map_response_with_state(
            gateway.clone(),
            count_refusal,
        ));
    let router = match cors(&gateway.shared.settings.cors) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router.with_state(gateway)
}

/// The CORS layer for `origins` (`None`: CORS is off): preflights
/// answered for the gateway's methods and request headers, `X-Run-Id` and
/// `X-Run-Token` exposed to the page.
fn cors(origins: &Option<Cors>) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{HeaderName, Method, header};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let allow = match origins.as_ref()? {
        Cors::Any => AllowOrigin::any(),
        Cors::List(list) => AllowOrigin::list(list.iter().cloned()),
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([
                header::CONTENT_TYPE,
                header::AUTHORIZATION,
                header::ACCEPT,
                HeaderName::from_static("x-run-token"),
                HeaderName::from_static("last-event-id"),
                HeaderName::from_static("x-request-id"),
                HeaderName::from_static("traceparent"),
                HeaderName::from_static("tracestate"),
            ])
            .expose_headers([
                HeaderName::from_static("x-run-id"),
                HeaderName::from_static("x-run-token"),
            ]),
    )
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
