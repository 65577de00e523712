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

/// One sample of the Prometheus text format: its name and labels.
type Sample = (String, Vec<(String, String)>);

/// Parses the Prometheus text format (0.0.4) strictly: every line is a
/// `# HELP`, a `# TYPE` with a known type, or a sample `name{labels}
/// value` whose name and label names are well formed, whose label values
/// are quoted with only `\\`, `\"` and `\n` escaped, and whose value is a
/// number; every sample's family has a `# TYPE` line before it. Panics on
/// anything else.
fn parse_metrics(text: &str) -> std::collections::BTreeMap<Sample, f64> {
    let name_ok = |n: &str| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut typed = std::collections::BTreeSet::new();
    let mut samples = std::collections::BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').expect(line);
            assert!(name_ok(name), "{line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&ty),
                "{line}"
            );
            typed.insert(name.to_owned());
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.starts_with('#'), "an unknown comment: {line}");
        let (series, value) = line.rsplit_once(' ').expect(line);
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("not a number: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, Vec::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect(line);
                let mut labels = Vec::new();
                let mut chars = body.chars().peekable();
                while chars.peek().is_some() {
                    let label: String = chars.by_ref().take_while(|&c| c != '=').collect();
                    assert!(name_ok(&label), "label {label:?} in {line}");
                    assert_eq!(chars.next(), Some('"'), "{line}");
                    let mut value = String::new();
                    loop {
                        match chars.next().expect(line) {
                            '"' => break,
                            '\\' => match chars.next().expect(line) {
                                c @ ('\\' | '"') => value.push(c),
                                'n' => value.push('\n'),
                                c => panic!("escape \\{c} in {line}"),
                            },
                            c => value.push(c),
                        }
                    }
                    labels.push((label, value));
                    match chars.next() {
                        None => break,
                        Some(',') => {}
                        Some(c) => panic!("{c:?} after a label value in {line}"),
                    }
                }
                (name, labels)
            }
        };
        assert!(name_ok(name), "{line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "no # TYPE before {line}");
        let mut labels = labels;
        labels.sort();
        samples.insert((name.to_owned(), labels), value);
    }
    samples
}

/// The value of `name` with exactly `labels` (0 when absent).
fn sample(
    samples: &std::collections::BTreeMap<Sample, f64>,
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    let mut labels: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    labels.sort();
    samples
        .get(&(name.to_owned(), labels))
        .copied()
        .unwrap_or(0.0)
}

/// `GET /metrics` is the Prometheus text format; its counts equal what was
/// played (runs started by route, ended by terminal and by whom, violations
/// by rule, refusals by code, requests by route and status), every name
/// starts with `lce_`, and no label value holds an id the runs used.
#[test]
fn metrics_count_what_was_played_and_hold_no_id() {
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        &scenarios(),
        "--allow-anonymous-ingest",
    ]);
    let mut ids = Vec::new();
    for i in 0..3 {
        let conversation = format!("conv-metrics-{i}");
        let answer = post(
            &server.addr,
            "/api/v1/chat/stream/start",
            &start_body("plain-text-answer", &conversation),
        );
        assert_eq!(answer.status, 200);
        ids.push(answer.header("x-run-id").unwrap().to_owned());
        ids.push(conversation);
    }
    let agui = serde_json::json!({
        "threadId": "thread-metrics", "runId": "run-metrics-agui",
        "messages": [{"role": "user", "content": "hi"}],
        "forwardedProps": {"agentId": "plain-text-answer"},
    });
    assert_eq!(
        post(&server.addr, "/api/v1/agui", &agui.to_string()).status,
        200
    );
    ids.extend(["thread-metrics".to_owned(), "run-metrics-agui".to_owned()]);
    // An invalid run pushed: rule 1, ended by the coordinator.
    let invalid =
        std::fs::read(root().join("fixtures/invalid/r01-duplicate-sequence.jsonl")).unwrap();
    let first: serde_json::Value =
        serde_json::from_slice(invalid.split(|b| *b == b'\n').next().unwrap()).unwrap();
    ids.push(first["run_id"].as_str().unwrap().to_owned());
    ids.push(first["conversation_id"].as_str().unwrap().to_owned());
    let pushed = request(
        &server.addr,
        "POST",
        "/api/v1/runs",
        &[("Content-Type", "application/x-ndjson")],
        &invalid,
    );
    assert_eq!(pushed.status, 200);
    // A refusal: an id that is no id.
    let refused = post(
        &server.addr,
        "/api/v1/chat/stream/start",
        &start_body("plain-text-answer", "bad id"),
    );
    assert_eq!(refused.status, 400);

    // The run counters come from the audit records, made as each run ends.
    let deadline = Instant::now() + SOON;
    let (samples, text) = loop {
        let answer = get(&server.addr, "/metrics");
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.header("content-type"),
            Some("text/plain; version=0.0.4")
        );
        let text = String::from_utf8(answer.body).unwrap();
        let samples = parse_metrics(&text);
        let ended: f64 = samples
            .iter()
            .filter(|((name, _), _)| name == "lce_runs_ended_total")
            .map(|(_, v)| v)
            .sum();
        if ended >= 5.0 {
            break (samples, text);
        }
        assert!(Instant::now() < deadline, "runs never all ended:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        sample(&samples, "lce_runs_started_total", &[("route", "start")]),
        3.0
    );
    assert_eq!(
        sample(&samples, "lce_runs_started_total", &[("route", "agui")]),
        1.0
    );
    assert_eq!(
        sample(&samples, "lce_runs_started_total", &[("route", "push")]),
        1.0
    );
    assert_eq!(
        sample(
            &samples,
            "lce_runs_ended_total",
            &[("terminal", "finished"), ("by", "harness")]
        ),
        4.0
    );
    assert_eq!(
        sample(
            &samples,
            "lce_runs_ended_total",
            &[("terminal", "error"), ("by", "coordinator")]
        ),
        1.0
    );
    assert_eq!(
        sample(&samples, "lce_violations_total", &[("rule", "1")]),
        1.0
    );
    assert_eq!(
        sample(&samples, "lce_refusals_total", &[("code", "invalid_id")]),
        1.0
    );
    assert_eq!(
        sample(
            &samples,
            "lce_http_requests_total",
            &[("route", "/api/v1/chat/stream/start"), ("status", "200")]
        ),
        3.0
    );
    assert_eq!(
        sample(
            &samples,
            "lce_upstream_requests_total",
            &[("outcome", "ok")]
        ),
        4.0
    );
    assert_eq!(sample(&samples, "lce_runs_open", &[]), 0.0);
    assert!(sample(&samples, "lce_events_total", &[("direction", "in")]) > 0.0);
    assert!(samples.keys().any(
        |(name, labels)| name == "lce_build_info" && labels.iter().any(|(k, _)| k == "version")
    ));
    assert!(
        samples
            .keys()
            .any(|(name, _)| name == "lce_log_append_seconds_bucket"),
        "{text}"
    );
    for (name, labels) in samples.keys() {
        assert!(name.starts_with("lce_"), "{name}");
        for (_, value) in labels {
            for id in &ids {
                assert!(
                    !value.contains(id.as_str()),
                    "{name} has a label with the id {id}"
                );
            }
        }
    }
}

/// `--metrics-addr` serves `/metrics` on a listener of its own, and the
/// main one no longer has it.
#[test]
fn metrics_on_a_listener_of_their_own() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_addr = format!("127.0.0.1:{port}");
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        &scenarios(),
        "--metrics-addr",
        &metrics_addr,
    ]);
    assert_eq!(get(&server.addr, "/metrics").status, 404);
    let deadline = Instant::now() + SOON;
    loop {
        if let Ok(stream) = TcpStream::connect(&metrics_addr) {
            drop(stream);
            break;
        }
        assert!(Instant::now() < deadline, "no metrics listener");
        std::thread::sleep(Duration::from_millis(50));
    }
    let answer = get(&metrics_addr, "/metrics");
    assert_eq!(answer.status, 200);
    let samples = parse_metrics(&String::from_utf8(answer.body).unwrap());
    assert!(samples.keys().any(|(name, _)| name == "lce_build_info"));
}
