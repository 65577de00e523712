//! JSON request bodies are bounded (`max_request_bytes`, default 1 MiB): a
//! larger one is `413 body_too_large` before it is parsed or anything is
//! called, whether its length is declared or not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt as _;
use lce_gateway::GatewayBuilder;
use tower::ServiceExt as _;

#[tokio::test]
async fn a_json_body_over_the_bound_is_413_and_one_under_it_is_parsed() {
    let gateway = GatewayBuilder::new()
        .scenarios(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios"))
        .speed(0.0)
        .max_request_bytes(64 * 1024)
        .build()
        .await
        .unwrap();
    let router = gateway.router();
    // A valid start padded with a long message, just over and just under.
    let start = |message_len: usize| {
        serde_json::json!({
            "message": "m".repeat(message_len), "conversation_id": "c-1",
            "agent_id": "plain-text-answer", "protocol": "custom",
        })
        .to_string()
    };
    let over = start(64 * 1024);
    let under = start(60 * 1024);
    for path in [
        "/api/v1/chat/stream/start",
        "/api/v1/agui",
        "/api/v1/chat/invoke",
        "/api/v1/chat/stream/cancel",
    ] {
        // Declared (Content-Length) and not declared (a stream of chunks).
        let declared = Request::post(path).body(Body::from(over.clone())).unwrap();
        let chunks: Vec<Result<String, std::io::Error>> = over
            .as_bytes()
            .chunks(4096)
            .map(|c| Ok(String::from_utf8(c.to_vec()).unwrap()))
            .collect();
        let streamed = Request::post(path)
            .body(Body::from_stream(futures::stream::iter(chunks)))
            .unwrap();
        for request in [declared, streamed] {
            let response = router.clone().oneshot(request).await.unwrap();
            assert_eq!(response.status(), 413, "{path}");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["code"], "body_too_large", "{path}");
        }
    }
    assert_eq!(gateway.running(), 0, "nothing ran for the refused bodies");
    let response = router
        .clone()
        .oneshot(
            Request::post("/api/v1/chat/stream/start")
                .body(Body::from(under))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "a body under the bound is served");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(body.ends_with(b"event: done\ndata: {}\n\n"));
}
