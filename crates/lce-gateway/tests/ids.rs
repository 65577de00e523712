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

/// An upstream whose runs start and then wait, as a live model does.
struct Waiting(AtomicUsize);

impl Upstream for Waiting {
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut run = lce_testkit::RunBuilder::new(&request.run_id, &request.conversation_id);
        let started = futures::stream::iter([Ok(run.run_started())]);
        let stream = futures::StreamExt::chain(started, futures::stream::pending());
        Box::pin(async move { Ok(Box::pin(stream) as EventStream) })
    }

    fn cancel<'a>(&'a self, _run_id: &'a str, _forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        Box::pin(async { true })
    }
}

/// `max_runs` open: the next start, AG-UI request, push or invoke is 503
/// `overloaded` with `Retry-After`, and the upstream is not called; once a
/// run ends its place is free again.
#[tokio::test]
async fn beyond_max_runs_a_run_is_refused_before_anything_is_called() {
    let upstream = Arc::new(Waiting(AtomicUsize::new(0)));
    let gateway = GatewayBuilder::new()
        .upstream(upstream.clone())
        .anonymous_ingest(true)
        .max_runs(1)
        .build()
        .await
        .unwrap();
    let router = gateway.router();
    let start = |conversation: &str| {
        post(
            "/api/v1/chat/stream/start",
            serde_json::json!({"message": "m", "conversation_id": conversation, "agent_id": "a", "protocol": "custom"}).to_string(),
        )
    };
    // The first run is open (its answer streams, its run waits).
    let first = router.clone().oneshot(start("c-1")).await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(gateway.running(), 1);
    let agui = serde_json::json!({"threadId": "t", "runId": "r-2", "messages": [], "forwardedProps": {"agentId": "a"}}).to_string();
    let invoke =
        serde_json::json!({"message": "m", "conversation_id": "c-3", "agent_id": "a"}).to_string();
    for request in [
        start("c-2"),
        post("/api/v1/agui", agui),
        post("/api/v1/chat/invoke", invoke),
        Request::post("/api/v1/runs").body(Body::from("")).unwrap(),
    ] {
        let path = request.uri().to_string();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 503, "{path}");
        assert_eq!(response.headers()["retry-after"], "5", "{path}");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (&body["error"], &body["code"]),
            (&"overloaded".into(), &"overloaded".into())
        );
    }
    assert_eq!(
        upstream.0.load(Ordering::SeqCst),
        1,
        "only the first run reached the upstream"
    );
    // The first run ends (its client cancels it): its place is free again.
    let cancel = post(
        "/api/v1/chat/stream/cancel",
        r#"{"conversation_id": "c-1", "agent_id": "a"}"#.to_owned(),
    );
    let cancelled = router.clone().oneshot(cancel).await.unwrap();
    assert_eq!(cancelled.status(), 200);
    let body = first.into_body().collect().await.unwrap().to_bytes();
    assert!(body.is_empty(), "custom writes nothing for a cancelled run");
    for _ in 0..500 {
        if gateway.running() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(gateway.running(), 0);
    let next = router.clone().oneshot(start("c-4")).await.unwrap();
    assert_eq!(next.status(), 200, "the ended run's place was given back");
    assert_eq!(upstream.0.load(Ordering::SeqCst), 2);
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
