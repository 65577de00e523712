//! A harness written in Rust, running in-process behind the gateway's
//! `Upstream` trait: no HTTP hop between the gateway and the agent. The
//! agent here echoes the user's message word by word; a real one would
//! call its model and tools and yield canonical events as they happen.
//!
//! Run with `cargo run -p lce --features gateway --example rust_harness`:
//! it sends one AG-UI request to the gateway's router in process
//! (`tower::ServiceExt::oneshot`, no socket), prints the `agui-v1` stream
//! and exits; it exits non-zero if the run is not as shown.
#![allow(clippy::print_stdout, clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use futures::future::BoxFuture;
use http_body_util::BodyExt as _;
use lce::gateway::{
    EventStream, Forwarded, GatewayBuilder, RunInput, RunRequest, Upstream, UpstreamError,
};
use lce::prelude::*;
use tower::ServiceExt as _;

/// The agent: echoes the message back, one word per `text.delta`.
struct Echo;

impl Echo {
    /// The run's canonical events (the contract's envelope; the
    /// coordinator validates them like any adapter's).
    fn events(request: &RunRequest) -> Vec<Event> {
        let message = match &request.input {
            RunInput::Message(m) => m.clone(),
            _ => String::new(),
        };
        let mut payloads = vec![
            (
                "run.started",
                r#"{"harness_id":"echo","adapter_version":"1.0.0"}"#.to_owned(),
            ),
            (
                "text.started",
                r#"{"message_id":"m-1","role":"assistant"}"#.to_owned(),
            ),
        ];
        for word in message.split_inclusive(' ') {
            let delta = serde_json::json!({"message_id": "m-1", "delta": word});
            payloads.push(("text.delta", delta.to_string()));
        }
        payloads.push(("text.finished", r#"{"message_id":"m-1"}"#.to_owned()));
        payloads.push(("run.finished", r#"{"outcome":"success"}"#.to_owned()));
        payloads
            .into_iter()
            .enumerate()
            .map(|(seq, (ty, data))| {
                let envelope = serde_json::json!({
                    "version": 1, "type": ty, "run_id": request.run_id,
                    "conversation_id": request.conversation_id, "sequence": seq,
                    "timestamp": "2026-12-04T00:00:00Z", "namespace": [],
                });
                let mut line = envelope.to_string();
                line.pop(); // the closing brace: the payload goes in as it is
                Event::from_json(&format!(r#"{line},"data":{data}}}"#)).unwrap()
            })
            .collect()
    }
}

impl Upstream for Echo {
    fn open(&self, request: RunRequest) -> BoxFuture<'_, Result<EventStream, UpstreamError>> {
        let events = Echo::events(&request);
        Box::pin(async move {
            // As a model would: one event every few milliseconds.
            let paced = futures::stream::unfold(events.into_iter(), |mut rest| async move {
                let event = rest.next()?;
                tokio::time::sleep(Duration::from_millis(5)).await;
                Some((Ok::<_, LceError>(event), rest))
            });
            Ok(Box::pin(paced) as EventStream)
        })
    }

    fn cancel<'a>(&'a self, _run_id: &'a str, _forwarded: &'a Forwarded) -> BoxFuture<'a, bool> {
        // Nothing to stop but the stream itself: accept.
        Box::pin(async { true })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let gateway = GatewayBuilder::new().upstream(Echo).build().await.unwrap();
    let input = serde_json::json!({
        "threadId": "thread-1", "runId": "run-echo-1",
        "messages": [{"id": "u1", "role": "user", "content": "hello from the platform"}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {"agentId": "echo"},
    });
    let request = Request::post("/api/v1/agui")
        .header("content-type", "application/json")
        .body(Body::from(input.to_string()))
        .unwrap();
    let response = gateway.router::<()>().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-run-id"], "run-echo-1");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(body.to_vec()).unwrap();
    println!("{text}");
    for word in ["hello ", "from ", "the ", "platform"] {
        assert!(
            text.contains(&format!(r#""delta":"{word}""#)),
            "the agent's word {word:?} went out"
        );
    }
    assert!(
        text.contains(r#""type":"RUN_FINISHED""#),
        "the run finished"
    );
    gateway.shutdown().await;
}
