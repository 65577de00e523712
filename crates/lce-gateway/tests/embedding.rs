//! The gateway inside a host's app that has a state of its own: the
//! router takes any outer state, and the host's state and routes work
//! beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::Request;
use axum::routing::get;
use http_body_util::BodyExt as _;
use lce_gateway::GatewayBuilder;
use tower::ServiceExt as _;

/// The host's own state.
#[derive(Clone)]
struct Platform {
    name: Arc<str>,
}

#[tokio::test]
async fn the_router_nests_in_an_app_with_its_own_state() {
    let gateway = GatewayBuilder::new()
        .scenarios(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios"))
        .speed(0.0)
        .build()
        .await
        .unwrap();
    let app: Router = Router::new()
        .route(
            "/whoami",
            get(|State(p): State<Platform>| async move { p.name.to_string() }),
        )
        .nest("/lce", gateway.router::<Platform>())
        .with_state(Platform {
            name: "acme".into(),
        });
    let who = app
        .clone()
        .oneshot(Request::get("/whoami").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(
        &who.into_body().collect().await.unwrap().to_bytes()[..],
        b"acme"
    );
    let body = r#"{"threadId":"t-1","runId":"run-embed-1","messages":[],"forwardedProps":{"agentId":"plain-text-answer"}}"#;
    let run = app
        .oneshot(
            Request::post("/lce/api/v1/agui")
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    assert_eq!(run.headers()["x-run-id"], "run-embed-1");
    let text = run.into_body().collect().await.unwrap().to_bytes();
    let text = std::str::from_utf8(&text).unwrap();
    assert!(
        text.starts_with("data: {\"type\":\"RUN_STARTED\""),
        "{text}"
    );
    assert!(text.contains("\"type\":\"RUN_FINISHED\""), "{text}");
    gateway.shutdown().await;
}
