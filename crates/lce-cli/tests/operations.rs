//! Operating `lce serve` (`gateway.md`, "Operating it"), on the real
//! binary over loopback: readiness during a drain while a stream keeps
//! flowing and new runs are still taken, configuration from the
//! environment and its precedence, CORS. (Readiness against a Redis that
//! goes away and comes back is in `gateway_redis.rs`.)
//!
//! Waits are generous bounds, never timing assertions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write as _;
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::raw::{ReadEnd, read_until_closed, read_until_in_body, sigterm, wait_exit};
use common::{Server, post, request, root};

/// A bound for what should happen "soon": far above any expected time.
const SOON: Duration = Duration::from_secs(30);

fn scenarios() -> String {
    root()
        .join("fixtures/scenarios")
        .to_str()
        .unwrap()
        .to_owned()
}

fn start_body(agent: &str, conversation: &str) -> String {
    serde_json::json!({
        "message": "m", "conversation_id": conversation, "agent_id": agent, "protocol": "custom",
    })
    .to_string()
}

fn get(addr: &str, path: &str) -> common::HttpResponse {
    request(addr, "GET", path, &[], b"")
}

/// On SIGTERM `/readyz` turns 503 `draining` at once, while a stream in
/// flight keeps flowing to its end and new runs are still taken for
/// `--drain-delay`; then the listener closes and the process exits 0.
#[test]
fn a_drain_turns_readiness_off_and_still_takes_runs_for_the_delay() {
    let mut server = Server::start(&[
        "--speed",
        "0.05",
        "--scenarios",
        &scenarios(),
        "--drain-delay",
        "4",
    ]);
    let ready = get(&server.addr, "/readyz");
    assert_eq!(ready.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&ready.body),
        r#"{"status":"ready"}"#
    );
    let health = get(&server.addr, "/healthz");
    assert_eq!(String::from_utf8_lossy(&health.body), r#"{"status":"ok"}"#);
    // A paced run: it flows for seconds.
    let mut flowing = TcpStream::connect(&server.addr).unwrap();
    let body = start_body("plain-text-answer", "conv-drain-1");
    write!(
        flowing,
        "POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: lce\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let head = read_until_in_body(&mut flowing, b"", SOON);
    assert!(head.starts_with(b"HTTP/1.1 200"));
    sigterm(&server.child);
    let deadline = Instant::now() + SOON;
    loop {
        let ready = get(&server.addr, "/readyz");
        if ready.status == 503 {
            let answer: serde_json::Value = serde_json::from_slice(&ready.body).unwrap();
            assert_eq!(answer["status"], "not_ready");
            assert_eq!(answer["reason"], "draining");
            break;
        }
        assert!(Instant::now() < deadline, "readiness never turned off");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Draining, a new run is still taken.
    let mut taken = TcpStream::connect(&server.addr).unwrap();
    let body = start_body("plain-text-answer", "conv-drain-2");
    write!(
        taken,
        "POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: lce\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let head = read_until_in_body(&mut taken, b"", SOON);
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    // The stream in flight flows to its terminal.
    let ReadEnd::Closed(rest) = read_until_closed(&mut flowing, Duration::from_secs(120)) else {
        panic!("the stream in flight did not end");
    };
    assert!(
        rest.windows(11).any(|w| w == b"event: done"),
        "the stream in flight lost its end"
    );
    assert_eq!(
        wait_exit(&mut server.child, Duration::from_secs(120)),
        Some(0)
    );
}

/// Every option may come from `LCE_<OPTION>`; a flag beats the variable.
#[test]
fn options_come_from_the_environment_and_a_flag_beats_the_variable() {
    let small = [("LCE_MAX_REQUEST_BYTES", "64"), ("LCE_SPEED", "0")];
    let scenarios = scenarios();
    let body = start_body("plain-text-answer", "conv-env");
    assert!(body.len() > 64);
    let from_env = Server::start_with_env(&["--scenarios", &scenarios], &small, Stdio::null());
    let refused = post(&from_env.addr, "/api/v1/chat/stream/start", &body);
    assert_eq!(refused.status, 413, "LCE_MAX_REQUEST_BYTES was not read");
    let flag_wins = Server::start_with_env(
        &["--scenarios", &scenarios, "--max-request-bytes", "4096"],
        &small,
        Stdio::null(),
    );
    let taken = post(&flag_wins.addr, "/api/v1/chat/stream/start", &body);
    assert_eq!(taken.status, 200, "the flag did not beat the variable");
    // A variable's bad value is a usage error naming the option.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("LCE_MAX_RUNS", "many")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-runs"));
    // `--help` names each variable.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for variable in [
        "LCE_ADDR",
        "LCE_UPSTREAM",
        "LCE_TOKEN_SECRET_FILE",
        "LCE_DRAIN_DELAY",
        "LCE_CORS_ORIGIN",
    ] {
        assert!(
            help.contains(&format!("[env: {variable}")),
            "{variable} missing from --help"
        );
    }
}

/// `--cors-origin` (or `LCE_CORS_ORIGIN`, comma-separated) answers a
/// browser's preflight and exposes the run headers; off by default.
#[test]
fn cors_origins_from_a_flag_or_the_environment() {
    let scenarios = scenarios();
    let preflight = |addr: &str, origin: &str| {
        request(
            addr,
            "OPTIONS",
            "/api/v1/agui",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "content-type"),
            ],
            b"",
        )
    };
    let off = Server::start(&["--scenarios", &scenarios]);
    assert_eq!(
        preflight(&off.addr, "https://a.example").header("access-control-allow-origin"),
        None
    );
    let flag = Server::start(&[
        "--scenarios",
        &scenarios,
        "--cors-origin",
        "https://a.example",
    ]);
    let answer = preflight(&flag.addr, "https://a.example");
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("https://a.example")
    );
    let env = Server::start_with_env(
        &["--scenarios", &scenarios, "--speed", "0"],
        &[("LCE_CORS_ORIGIN", "https://a.example,https://b.example")],
        Stdio::null(),
    );
    let answer = preflight(&env.addr, "https://b.example");
    assert_eq!(
        answer.header("access-control-allow-origin"),
        Some("https://b.example")
    );
    let started = request(
        &env.addr,
        "POST",
        "/api/v1/chat/stream/start",
        &[
            ("Origin", "https://a.example"),
            ("Content-Type", "application/json"),
        ],
        start_body("plain-text-answer", "conv-cors").as_bytes(),
    );
    assert_eq!(started.status, 200);
    let exposed = started
        .header("access-control-expose-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(
        exposed.contains("x-run-id") && exposed.contains("x-run-token"),
        "{exposed}"
    );
}
