//! `lce serve`'s logs and traces on real processes: `--log-format json`
//! (one object a line, no payload, no token), `RUST_LOG` filters, the W3C
//! `traceparent` a harness gets (the client's trace continued with lce's
//! span id; a new trace without one or with an invalid one), and the
//! OTLP/HTTP export of lce's span to a fake collector (its trace id, its
//! span id the parent the harness got).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::raw::{sigterm, wait_exit};
use common::{HttpResponse, Server, request, root};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_PARENT: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const MESSAGE: &str = "a private message text 7f3a";
const TOKEN: &str = "secret-xyz";

/// One HTTP request a fake server received: its head and body.
struct Received {
    head: String,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// Reads one request (Content-Length bodies only: lce's and the
/// exporter's both have one).
fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(Received { head, body })
}

/// A fake server on a free port answering each request with `answer`
/// (given the request's body); every request goes to the receiver.
fn fake(answer: fn(&[u8]) -> Vec<u8>) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                // Keep-alive: serve requests until the peer closes.
                while let Some(received) = read_request(&stream) {
                    let reply = answer(&received.body);
                    let _ = tx.send(received);
                    if stream.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), rx)
}

/// A harness: a run of the `plain-text-answer` scenario under the
/// request's ids, as JSON Lines, then the connection closes.
fn harness_answer(body: &[u8]) -> Vec<u8> {
    let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let text =
        std::fs::read_to_string(root().join("fixtures/scenarios/plain-text-answer.jsonl")).unwrap();
    let lines: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["run_id"] = request["run_id"].clone();
            v["conversation_id"] = request["conversation_id"].clone();
            format!("{v}\n")
        })
        .collect();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{lines}",
        lines.len()
    )
    .into_bytes()
}

/// An OTLP/HTTP collector: 200 with an empty protobuf answer.
fn collector_answer(_body: &[u8]) -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n".to_vec()
}

fn start(server: &Server, headers: &[(&str, &str)]) -> HttpResponse {
    let body = serde_json::json!({
        "message": MESSAGE, "conversation_id": "conv-trace", "agent_id": "plain-text-answer",
    });
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let resp = request(
        &server.addr,
        "POST",
        "/api/v1/chat/stream/start",
        &all,
        body.to_string().as_bytes(),
    );
    assert_eq!(resp.status, 200);
    resp
}

fn log_file(name: &str) -> (PathBuf, Stdio) {
    let path = std::env::temp_dir().join(format!("lce-tracing-{name}-{}", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    (path, Stdio::from(file))
}

/// SIGTERM, a bounded wait for the exit, and the server's stderr.
fn stop(mut server: Server, log: &PathBuf) -> String {
    sigterm(&server.child);
    assert_eq!(
        wait_exit(&mut server.child, Duration::from_secs(60)),
        Some(0)
    );
    let logged = std::fs::read_to_string(log).unwrap();
    let _ = std::fs::remove_file(log);
    logged
}

fn scenarios() -> String {
    root().join("fixtures/scenarios").display().to_string()
}

#[test]
fn json_logs_are_one_object_a_line_without_payload_or_token() {
    let (log, stderr) = log_file("json");
    // From the environment, as a deployment sets it.
    let server = Server::start_with_env(
        &[
            "--drain-delay",
            "0",
            "--speed",
            "0",
            "--scenarios",
            &scenarios(),
        ],
        &[("LCE_LOG_FORMAT", "json"), ("RUST_LOG", "")],
        stderr,
    );
    let authorization = format!("Bearer {TOKEN}");
    start(&server, &[("Authorization", &authorization)]);
    let logged = stop(server, &log);
    let mut messages = Vec::new();
    for line in logged.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for key in ["timestamp", "level", "target"] {
            assert!(v[key].is_string(), "{key} in {line}");
        }
        // The event's fields are at the top level, not under `fields`.
        assert!(v.get("fields").is_none(), "{line}");
        if let Some(m) = v["message"].as_str() {
            messages.push(m.to_owned());
        }
    }
    assert!(messages.iter().any(|m| m.contains("run ended")), "{logged}");
    assert!(!logged.contains(MESSAGE), "{logged}");
    assert!(!logged.contains(TOKEN), "{logged}");
}

#[test]
fn rust_log_filters_the_logs() {
    let run = |rust_log: &str, flag: &[&str]| {
        let (log, stderr) = log_file(&format!("filter-{}", rust_log.replace(',', "_")));
        let mut args = vec!["--drain-delay", "0", "--speed", "0", "--scenarios"];
        let dir = scenarios();
        args.push(&dir);
        args.extend_from_slice(flag);
        let server = Server::start_with_env(&args, &[("RUST_LOG", rust_log)], stderr);
        start(&server, &[]);
        stop(server, &log)
    };
    // Unset (empty) is `info`: the run's audit is logged.
    let info = run("", &[]);
    assert!(
        info.contains(" INFO ") && info.contains("run ended"),
        "{info}"
    );
    let warn = run("warn", &[]);
    assert!(!warn.contains("INFO"), "{warn}");
    // In JSON too, and with a target filter.
    let warn = run("warn", &["--log-format", "json"]);
    assert!(!warn.contains("\"INFO\""), "{warn}");
    let targeted = run("warn,lce::audit=info", &["--log-format", "json"]);
    for line in targeted.lines().filter(|l| l.contains("\"INFO\"")) {
        assert!(line.contains("\"target\":\"lce::audit\""), "{line}");
    }
}

/// The harness's `traceparent`: (trace id, parent id, flags).
fn traceparent_of(got: &Received) -> (String, String, String) {
    let value = got.header("traceparent").expect("a traceparent upstream");
    let parts: Vec<_> = value.split('-').collect();
    assert_eq!(parts.len(), 4, "{value}");
    assert_eq!(parts[0], "00", "{value}");
    assert_eq!(parts[1].len(), 32, "{value}");
    assert_eq!(parts[2].len(), 16, "{value}");
    assert!(
        value[3..]
            .bytes()
            .all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{value}"
    );
    assert_ne!(parts[1], "0".repeat(32));
    assert_ne!(parts[2], "0".repeat(16));
    (parts[1].into(), parts[2].into(), parts[3].into())
}

#[test]
fn the_harness_gets_the_clients_trace_with_lces_span_or_a_new_trace() {
    let (url, seen) = fake(harness_answer);
    let server = Server::start(&["--upstream", &url]);
    // A client's trace is continued: same trace id and flags, lce's span.
    start(
        &server,
        &[
            ("traceparent", TRACEPARENT),
            ("tracestate", "congo=t61rcWkgMzE"),
        ],
    );
    let got = seen.recv_timeout(Duration::from_secs(60)).unwrap();
    let (trace, parent, flags) = traceparent_of(&got);
    assert_eq!((trace.as_str(), flags.as_str()), (TRACE_ID, "01"));
    assert_ne!(parent, CLIENT_PARENT);
    assert_eq!(
        got.header("tracestate").as_deref(),
        Some("congo=t61rcWkgMzE")
    );
    // Unsampled stays unsampled.
    start(
        &server,
        &[("traceparent", &TRACEPARENT.replace("-01", "-00"))],
    );
    let (trace, _, flags) = traceparent_of(&seen.recv_timeout(Duration::from_secs(60)).unwrap());
    assert_eq!((trace.as_str(), flags.as_str()), (TRACE_ID, "00"));
    // None, or an invalid one: a new trace each time, no tracestate.
    let mut traces = vec![TRACE_ID.to_owned()];
    for headers in [
        vec![],
        vec![(
            "traceparent",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        )],
        vec![
            (
                "traceparent",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            ),
            ("tracestate", "congo=t61rcWkgMzE"),
        ],
        vec![(
            "traceparent",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )],
    ] {
        start(&server, &headers);
        let got = seen.recv_timeout(Duration::from_secs(60)).unwrap();
        let (trace, _, flags) = traceparent_of(&got);
        assert!(!traces.contains(&trace), "{trace} for {headers:?}");
        assert_eq!(flags, "01");
        assert_eq!(got.header("tracestate"), None);
        traces.push(trace);
    }
    // AG-UI's route continues it too.
    let body = serde_json::json!({
        "threadId": "t-1", "runId": "r-trace-agui", "messages": [{"id": "m", "role": "user", "content": "hi"}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {"agentId": "plain-text-answer"},
    });
    let resp = request(
        &server.addr,
        "POST",
        "/api/v1/agui",
        &[
            ("Content-Type", "application/json"),
            ("traceparent", TRACEPARENT),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(resp.status, 200);
    let (trace, parent, _) = traceparent_of(&seen.recv_timeout(Duration::from_secs(60)).unwrap());
    assert_eq!(trace, TRACE_ID);
    assert_ne!(parent, CLIENT_PARENT);
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What the collector received until `done` says it is enough, or the
/// bounded wait ends.
fn collect(seen: &mpsc::Receiver<Received>, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut all = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done(&all) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(got) = seen.recv_timeout(left) else {
            break;
        };
        assert!(
            got.head.starts_with("POST /v1/traces HTTP/1.1"),
            "{}",
            got.head
        );
        assert_eq!(
            got.header("content-type").as_deref(),
            Some("application/x-protobuf")
        );
        all.extend_from_slice(&got.body);
    }
    all
}

#[test]
fn lces_span_is_exported_with_the_clients_trace_and_the_id_sent_upstream() {
    let (harness, upstream) = fake(harness_answer);
    let (collector, spans) = fake(collector_answer);
    let (log, stderr) = log_file("otlp");
    let server = Server::start_with_env(
        &["--drain-delay", "0", "--upstream", &harness],
        // At shutdown only: a long delay.
        &[
            ("LCE_OTLP_ENDPOINT", &collector),
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
        stderr,
    );
    let authorization = format!("Bearer {TOKEN}");
    start(
        &server,
        &[
            ("traceparent", TRACEPARENT),
            ("Authorization", &authorization),
        ],
    );
    let (_, lce_span, _) = traceparent_of(&upstream.recv_timeout(Duration::from_secs(60)).unwrap());
    // Nothing yet (no export before the delay)... then all at shutdown.
    assert!(spans.recv_timeout(Duration::from_millis(500)).is_err());
    let logged = stop(server, &log);
    let body = collect(&spans, |b| contains(b, &unhex(TRACE_ID)));
    // The span: the client's trace id, lce's span id (the harness's
    // parent), the client's span as its parent.
    assert!(contains(&body, &unhex(TRACE_ID)), "{logged}");
    assert!(contains(&body, &unhex(&lce_span)));
    assert!(contains(&body, &unhex(CLIENT_PARENT)));
    for attribute in [
        "lce.route",
        "lce.run_id",
        "lce.conversation_id",
        "conv-trace",
    ] {
        assert!(contains(&body, attribute.as_bytes()), "{attribute}");
    }
    assert!(!contains(&body, MESSAGE.as_bytes()));
    assert!(!contains(&body, TOKEN.as_bytes()));
    assert!(!logged.contains(TOKEN));
}

#[test]
fn spans_are_exported_on_the_schedule_while_serving() {
    let (collector, spans) = fake(collector_answer);
    let server = Server::start_with_env(
        &[
            "--speed",
            "0",
            "--scenarios",
            &scenarios(),
            "--otlp-endpoint",
            &collector,
        ],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
        Stdio::null(),
    );
    // No client trace: lce's new trace, whose id the client never saw,
    // still goes out; the client's goes out on the next export.
    start(&server, &[]);
    start(&server, &[("traceparent", TRACEPARENT)]);
    let body = collect(&spans, |b| contains(b, &unhex(TRACE_ID)));
    assert!(contains(&body, &unhex(TRACE_ID)));
    drop(server);
}

#[test]
fn bad_values_are_usage_errors_and_help_names_the_variables() {
    let (code, _, err) = common::lce(&["serve", "--otlp-endpoint", "https://collector:4318"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--otlp-endpoint"), "{err}");
    let (code, _, err) = common::lce(&["serve", "--log-format", "xml"]);
    assert_eq!(code, 2, "{err}");
    // Both options from the environment too, named by --help.
    let (code, help, _) = common::lce(&["serve", "--help"]);
    assert_eq!(code, 0);
    for variable in ["LCE_LOG_FORMAT", "LCE_OTLP_ENDPOINT"] {
        assert!(help.contains(&format!("[env: {variable}")), "{variable}");
    }
}
