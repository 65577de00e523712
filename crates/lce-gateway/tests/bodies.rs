//! Request bodies are bounded by the router itself: a JSON body by
//! `max_request_bytes` (default 1 MiB; a larger one is `413 body_too_large`
//! before it is parsed or anything is called, whether its length is
//! declared or not) and by `body_idle_timeout` (`408 body_timeout`); a
//! pushed run by D19's bytes per run and by `ingest_idle_timeout`, after
//! which its run ends as a closure (rule 12) and the push is answered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use lce_gateway::GatewayBuilder;
use lce_types::Limits;
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

/// A bound for what should happen "soon": far above any expected time.
const SOON: Duration = Duration::from_secs(30);

/// The bundled scenarios' folder.
fn scenarios() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios")
}

/// A body of `chunks`, then nothing, ever (a client that stopped sending
/// without closing).
fn stalled_body(chunks: Vec<String>) -> Body {
    let chunks = chunks
        .into_iter()
        .map(Ok::<String, std::io::Error>)
        .collect::<Vec<_>>();
    Body::from_stream(futures::stream::iter(chunks).chain(futures::stream::pending()))
}

/// `router`'s answer to `request`, which must come within [`SOON`]: status
/// and JSON body.
async fn answer_soon(router: &axum::Router, request: Request<Body>) -> (u16, serde_json::Value) {
    let response = tokio::time::timeout(SOON, router.clone().oneshot(request))
        .await
        .expect("no answer in time")
        .unwrap();
    let status = response.status().as_u16();
    let body = tokio::time::timeout(SOON, response.into_body().collect())
        .await
        .expect("no whole body in time")
        .unwrap()
        .to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

/// The lines of the bundled scenario `name`, each with its newline.
fn scenario_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(scenarios().join(format!("{name}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

#[tokio::test]
async fn a_json_body_that_stops_arriving_is_408_in_the_router_itself() {
    let gateway = GatewayBuilder::new()
        .scenarios(scenarios())
        .speed(0.0)
        .body_idle_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    let router = gateway.router();
    for path in [
        "/api/v1/chat/stream/start",
        "/api/v1/agui",
        "/api/v1/chat/invoke",
        "/api/v1/chat/stream/cancel",
    ] {
        // Declared and not declared: either way the rest never comes.
        let declared = Request::post(path)
            .header("content-length", "200")
            .body(stalled_body(vec!["{\"message\": ".to_owned()]))
            .unwrap();
        let streamed = Request::post(path)
            .body(stalled_body(vec!["{\"message\": ".to_owned()]))
            .unwrap();
        for request in [declared, streamed] {
            let (status, body) = answer_soon(&router, request).await;
            assert_eq!(status, 408, "{path}");
            assert_eq!(body["code"], "body_timeout", "{path}");
            assert!(body["error"].is_string(), "{path}");
        }
    }
    assert_eq!(gateway.running(), 0, "nothing ran for the stalled bodies");
}

/// A gateway that takes pushes without a token, its ingest idle timeout
/// `idle`.
async fn push_gateway(idle: Duration) -> lce_gateway::Gateway {
    GatewayBuilder::new()
        .scenarios(scenarios())
        .anonymous_ingest(true)
        .ingest_idle_timeout(idle)
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_push_whose_harness_stops_sending_ends_as_a_closure_and_is_answered() {
    let gateway = push_gateway(Duration::from_millis(500)).await;
    let router = gateway.router();
    // The run up to its last delta: no terminal, and no end of body.
    let mut lines = scenario_lines("plain-text-answer");
    lines.truncate(lines.len() - 2);
    let sent = u64::try_from(lines.len()).unwrap();
    let request = Request::post("/api/v1/runs")
        .header("content-type", "application/x-ndjson")
        .body(stalled_body(lines))
        .unwrap();
    let (status, summary) = answer_soon(&router, request).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.error", "{summary}");
    assert_eq!(summary["events_in"], sent, "{summary}");
    assert_eq!(summary["violations"][0]["rule"], "12", "{summary}");
    assert_eq!(summary["outcome"], "ended", "{summary}");
    assert_eq!(gateway.running(), 0);
}

#[tokio::test]
async fn a_push_that_never_sends_a_first_line_is_408() {
    let gateway = push_gateway(Duration::from_millis(300)).await;
    let router = gateway.router();
    // Half a line, never finished: no run id is known, no run exists.
    let request = Request::post("/api/v1/runs")
        .body(stalled_body(vec!["{\"version\":1,".to_owned()]))
        .unwrap();
    let (status, body) = answer_soon(&router, request).await;
    assert_eq!(status, 408, "{body}");
    assert_eq!(body["code"], "body_timeout");
    assert_eq!(gateway.running(), 0);
}

#[tokio::test]
async fn a_push_that_keeps_sending_within_the_idle_timeout_is_served_whole() {
    // Each gap is shorter than the timeout; the whole push is longer.
    let gateway = push_gateway(Duration::from_millis(800)).await;
    let router = gateway.router();
    let lines = scenario_lines("plain-text-answer");
    let sent = u64::try_from(lines.len()).unwrap();
    let paced = futures::stream::iter(lines).then(|line| async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok::<String, std::io::Error>(line)
    });
    let request = Request::post("/api/v1/runs")
        .body(Body::from_stream(paced))
        .unwrap();
    let (status, summary) = answer_soon(&router, request).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.finished", "{summary}");
    assert_eq!(summary["events_in"], sent, "{summary}");
    assert_eq!(summary["violations"], serde_json::json!([]), "{summary}");
}

#[tokio::test]
async fn a_push_body_is_bounded_by_the_per_run_bytes_of_d19() {
    // Empty deltas are dropped before the validator counts bytes (D7), so
    // only the raw bound stops a harness that sends nothing else.
    let mut limits = Limits::default();
    limits.bytes_per_run = 16 * 1024;
    limits.events_per_run = 1000;
    let gateway = GatewayBuilder::new()
        .scenarios(scenarios())
        .anonymous_ingest(true)
        .limits(limits)
        .build()
        .await
        .unwrap();
    let router = gateway.router();
    let lines = scenario_lines("plain-text-answer");
    let delta: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    assert_eq!(delta["type"], "text.delta");
    let mut body = lines[..2].concat();
    for sequence in 2..2000 {
        let mut empty = delta.clone();
        empty["sequence"] = sequence.into();
        empty["data"]["delta"] = "".into();
        body.push_str(&format!("{empty}\n"));
    }
    // A proper end: without the bound, the run finishes.
    for (sequence, line) in [
        (2000, &lines[lines.len() - 2]),
        (2001, &lines[lines.len() - 1]),
    ] {
        let mut event: serde_json::Value = serde_json::from_str(line).unwrap();
        event["sequence"] = sequence.into();
        body.push_str(&format!("{event}\n"));
    }
    assert!(body.len() > 16 * 1024 + 2000, "the body passes the bound");
    let request = Request::post("/api/v1/runs")
        .body(Body::from(body))
        .unwrap();
    let (status, summary) = answer_soon(&router, request).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.error", "{summary}");
    assert!(
        summary["events_in"].as_u64().unwrap() < 2000,
        "the body was read past the bound: {summary}"
    );
}
