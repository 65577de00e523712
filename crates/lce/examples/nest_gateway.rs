//! A platform's own axum app with lce's gateway nested inside it: the
//! gateway's routes under `/agents`, next to a route of the platform's own
//! (`/health`), all under a middleware of the platform's own (here one that
//! stamps every answer with `x-platform: acme`, where a real one would
//! check its users' sessions).
//!
//! Run with `cargo run -p lce --features gateway --example nest_gateway`:
//! it serves the app on a free loopback port, starts one run through
//! `/agents/api/v1/chat/stream/start` (the bundled scenarios are the
//! upstream), reads it back through `/agents/api/v1/runs/{id}/stream` with
//! its read token, checks both and exits; it exits non-zero if anything is
//! not as shown. Pass `serve` to keep serving instead.
#![allow(
    clippy::print_stdout,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic
)]

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use lce::gateway::GatewayBuilder;

/// The platform's own middleware: every answer, the gateway's included,
/// carries the platform's header.
async fn stamp(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert("x-platform", "acme".parse().unwrap());
    response
}

/// One HTTP/1.1 exchange (`Connection: close`), so the example needs no
/// client library; returns the raw answer.
fn exchange(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &str) -> String {
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    write!(
        tcp,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).unwrap();
    raw
}

/// The value of header `name` in a raw answer.
fn header<'a>(raw: &'a str, name: &str) -> &'a str {
    raw.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
        .unwrap_or_else(|| panic!("no {name} header in:\n{raw}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let scenarios = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/scenarios");
    let gateway = GatewayBuilder::new()
        .scenarios(scenarios)
        .speed(0.0)
        .build()
        .await
        .expect("the bundled scenarios load");
    let app = Router::new()
        .nest("/agents", gateway.router())
        .route("/health", get(|| async { "ok" }))
        .layer(middleware::from_fn(stamp));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    if std::env::args().nth(1).as_deref() == Some("serve") {
        println!("listening on http://{addr} (the gateway under /agents)");
        axum::serve(listener, app).await.unwrap();
        return;
    }
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let (start, health) = tokio::task::spawn_blocking(move || {
        let body = r#"{"message": "hi", "conversation_id": "c1", "agent_id": "plain-text-answer", "protocol": "custom"}"#;
        let start = exchange(addr, "POST", "/agents/api/v1/chat/stream/start", "", body);
        let health = exchange(addr, "GET", "/health", "", "");
        (start, health)
    })
    .await
    .unwrap();
    println!("{start}");
    assert!(start.starts_with("HTTP/1.1 200 OK"), "the run was served");
    assert_eq!(
        header(&start, "x-platform"),
        "acme",
        "under the platform's layer"
    );
    assert!(
        start.contains("event: done\ndata: {}\n\n"),
        "the run finished"
    );
    assert!(
        health.ends_with("\r\n\r\nok"),
        "the platform's own route: {health}"
    );
    assert_eq!(header(&health, "x-platform"), "acme");

    // The run, read back from the log with its read token.
    let run_id = header(&start, "x-run-id").to_owned();
    let token = header(&start, "x-run-token").to_owned();
    let replay = tokio::task::spawn_blocking(move || {
        let path = format!("/agents/api/v1/runs/{run_id}/stream?protocol=custom");
        exchange(addr, "GET", &path, &format!("X-Run-Token: {token}\r\n"), "")
    })
    .await
    .unwrap();
    assert!(replay.starts_with("HTTP/1.1 200 OK"), "{replay}");
    assert!(replay.contains("\nid: "), "the replay names its frames");
    assert!(
        replay.contains("event: done\ndata: {}\n\n"),
        "to the run's end"
    );
    gateway.shutdown().await;
    println!("read back with its token: {} bytes", replay.len());
}
