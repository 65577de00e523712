//! Ids at the door (`gateway.md`, "Limits at the door"): every id a client
//! or a harness names is checked before the upstream is called and before
//! anything is written; a bad one is `400 {"error": "invalid_id", "field"}`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use futures::future::BoxFuture;
use http_body_util::BodyExt as _;
use lce_gateway::{EventStream, Forwarded, GatewayBuilder, RunRequest, Upstream, UpstreamError};
use tower::ServiceExt as _;

/// An upstream that counts the runs it is asked for and gives none.
#[derive(Default)]
struct Counting(AtomicUsize);

impl Upstream for Counting {
    fn open(&self, _request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(UpstreamError::UnknownAgent) })
    }

    fn cancel<'a>(&'a self, _run_id: &'a str, _forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { true })
    }
}

async fn answer(router: &Router, request: Request<Body>) -> (u16, serde_json::Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

fn post(path: &str, body: String) -> Request<Body> {
    Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

#[tokio::test]
async fn a_bad_id_on_any_route_is_named_and_reaches_nothing() {
    let upstream = Arc::new(Counting::default());
    let gateway = GatewayBuilder::new()
        .upstream(upstream.clone())
        .anonymous_ingest(true)
        .build()
        .await
        .unwrap();
    let router = gateway.router();
    let forged = "x\nFORGED level=ERROR";
    let long = "c".repeat(300);
    let da = |conversation: &str, agent: &str| {
        serde_json::json!({"message": "m", "conversation_id": conversation, "agent_id": agent, "resume_data": "{}"})
            .to_string()
    };
    let agui = |thread: &str, run: &str, agent: &str| {
        serde_json::json!({"threadId": thread, "runId": run, "messages": [], "forwardedProps": {"agentId": agent}})
            .to_string()
    };
    let event = |run_id: &str| {
        format!(
            r#"{{"version":1,"type":"run.started","run_id":{},"conversation_id":"c","sequence":0,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{{"harness_id":"h","adapter_version":"1.0.0"}}}}"#,
            serde_json::Value::from(run_id)
        ) + "\n"
    };
    let cases: Vec<(Request<Body>, &str)> = vec![
        (
            post("/api/v1/chat/stream/start", da(forged, "a")),
            "conversation_id",
        ),
        (post("/api/v1/chat/stream/start", da("c", "")), "agent_id"),
        (
            post("/api/v1/chat/stream/resume", da("c", "{tag}")),
            "agent_id",
        ),
        (
            post("/api/v1/chat/stream/start", da(&long, "a")),
            "conversation_id",
        ),
        (post("/api/v1/chat/invoke", da("c", "a/b")), "agent_id"),
        (
            post("/api/v1/chat/stream/cancel", da("..", "a")),
            "conversation_id",
        ),
        (post("/api/v1/agui", agui("t", "..", "a")), "runId"),
        (post("/api/v1/agui", agui("}", "r", "a")), "threadId"),
        (
            post("/api/v1/agui", agui("t", "r", "a b")),
            "forwardedProps.agentId",
        ),
        (
            Request::get("/api/v1/runs/..%2F/stream")
                .body(Body::empty())
                .unwrap(),
            "run_id",
        ),
        (
            Request::post("/api/v1/runs")
                .body(Body::from(event(".hidden")))
                .unwrap(),
            "run_id",
        ),
    ];
    for (request, field) in cases {
        let path = request.uri().to_string();
        let (status, body) = answer(&router, request).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["error"], "invalid_id", "{path}");
        assert_eq!(body["code"], "invalid_id", "{path}");
        assert_eq!(body["field"], field, "{path}");
        assert!(!body.to_string().contains("FORGED"), "the id is not echoed");
    }
    assert_eq!(
        upstream.0.load(Ordering::SeqCst),
        0,
        "the upstream was never called"
    );
    assert_eq!(gateway.running(), 0);
    // Plain ids go through to the upstream (which has no such agent: 404).
    let (status, body) = answer(
        &router,
        post("/api/v1/chat/stream/start", da("c-1", "agent.a:b@c_d")),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("unknown_agent"))
    );
    assert_eq!(upstream.0.load(Ordering::SeqCst), 1);
}
