//! Serve one run over your own axum handler: the handler builds the chain
//! (your adapter -> coordinator -> encoder) and hands it to axum as the
//! response body, one SSE frame per chunk, with DA's headers.
//!
//! Run with `cargo run -p lce --example axum_handler`: it starts the server
//! on a free loopback port, asks it for one run over plain HTTP/1.1, prints
//! the response and exits. Pass `serve` to keep serving instead
//! (`curl -N -X POST http://ADDR/run`).
#![allow(clippy::print_stdout, clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};

use axum::Router;
use axum::body::Body;
use axum::http::header;
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use lce::prelude::*;

/// Your adapter: here a canned run that calls a tool, then answers with
/// its result; in a real service, events from a harness.
fn adapter(run_id: &str) -> impl futures::Stream<Item = Event> + Send + 'static {
    let canned = [
        (
            "run.started",
            r#"{"harness_id":"demo","adapter_version":"1.0.0"}"#,
        ),
        (
            "tool.started",
            r#"{"tool_call_id":"tc-1","tool_name":"get_time","arguments":{"zone":"UTC"}}"#,
        ),
        (
            "tool.finished",
            r#"{"tool_call_id":"tc-1","result":"12:00"}"#,
        ),
        ("text.started", r#"{"message_id":"m-1","role":"assistant"}"#),
        (
            "text.delta",
            r#"{"message_id":"m-1","delta":"Served by axum at 12:00 UTC"}"#,
        ),
        ("text.finished", r#"{"message_id":"m-1"}"#),
        ("run.finished", r#"{"outcome":"success"}"#),
    ];
    let events: Vec<Event> = canned
        .iter()
        .enumerate()
        .map(|(seq, (ty, data))| {
            Event::from_json(&format!(
                r#"{{"version":1,"type":"{ty}","run_id":"{run_id}","conversation_id":"conv-1","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
            ))
            .unwrap()
        })
        .collect();
    futures::stream::iter(events)
}

/// `POST /run`: one run as DA's `custom` SSE stream.
async fn run() -> Response {
    let coordinator = Coordinator::new(CoordinatorOptions::new("run-1", "conv-1"));
    let format = WireFormat::Custom;
    let frames = lce::stream::events(adapter("run-1"))
        .enforced(coordinator)
        .encoded(WireEncoder::new(format, None))
        // An encoder error ends the body; the coordinator's output never errs.
        .map(|frame| frame.map_err(std::io::Error::other));
    Response::builder()
        .header(header::CONTENT_TYPE, format.content_type())
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(frames))
        .unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let app = Router::new().route("/run", post(run));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    if std::env::args().nth(1).as_deref() == Some("serve") {
        println!("listening on http://{addr}");
        axum::serve(listener, app).await.unwrap();
        return;
    }
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    // A minimal HTTP/1.1 client, so the example needs no client library.
    let response = tokio::task::spawn_blocking(move || {
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        write!(
            tcp,
            "POST /run HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = String::new();
        tcp.read_to_string(&mut raw).unwrap();
        raw
    })
    .await
    .unwrap();
    println!("{response}");
    assert!(
        response.starts_with("HTTP/1.1 200 OK"),
        "the run was served"
    );
    assert!(
        response.contains("event: tool_start\n") && response.contains("event: tool_end\n"),
        "the tool call was streamed"
    );
    assert!(
        response.contains("event: done\ndata: {}\n\n"),
        "the run finished"
    );
}
