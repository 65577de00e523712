//! `lce serve` over real loopback HTTP: every scenario in every protocol
//! equals its golden file; bad requests get a JSON 4xx; a run cut short ends
//! with the coordinator's `run.error`; a disconnect is audited as cancelled.
//!
//! Runs are played with `--speed 0` (no pacing) except where pacing is the
//! point; pacing never changes the bytes (timestamps come from the events).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running `lce serve`; killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lce"))
            .arg("serve")
            .args(["--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("{line}"))
            .to_owned();
        Server { child, addr }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn send(addr: &str, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

/// A minimal HTTP/1.1 client: reads the whole response, undoing chunking.
fn post(addr: &str, path: &str, body: &str) -> HttpResponse {
    let mut s = send(addr, path, body);
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no header end");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    HttpResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        b = &b[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

fn scenarios() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(root().join("fixtures/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
            let first = std::fs::read_to_string(&p)
                .unwrap()
                .lines()
                .next()
                .unwrap()
                .to_owned();
            let v: serde_json::Value = serde_json::from_str(&first).unwrap();
            (name, v["conversation_id"].as_str().unwrap().to_owned())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_scenario_in_every_protocol_equals_its_golden_file() {
    let scenarios_dir = root().join("fixtures/scenarios");
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        scenarios_dir.to_str().unwrap(),
    ]);
    let mut checked = 0;
    for (name, conversation) in scenarios() {
        for protocol in ["custom", "agui", "agui-v1"] {
            let body = serde_json::json!({
                "message": "hello", "conversation_id": conversation, "agent_id": name, "protocol": protocol,
            })
            .to_string();
            let resp = post(&server.addr, "/api/v1/chat/stream/start", &body);
            assert_eq!(resp.status, 200, "{name} {protocol}");
            let want_type = if protocol == "agui-v1" {
                "text/event-stream"
            } else {
                "text/event-stream; charset=utf-8"
            };
            assert_eq!(resp.header("content-type"), Some(want_type));
            if protocol != "agui-v1" {
                assert_eq!(resp.header("cache-control"), Some("no-cache"));
                assert_eq!(resp.header("x-accel-buffering"), Some("no"));
            }
            let golden =
                std::fs::read(root().join(format!("fixtures/golden/{protocol}/{name}.sse")))
                    .unwrap();
            assert!(
                resp.body == golden,
                "{name} {protocol}: served bytes differ from the golden file"
            );
            checked += 1;
        }
    }
    assert!(checked >= 3 * 14);
}

#[test]
fn standard_agui_endpoint_takes_run_agent_input() {
    let scenarios_dir = root().join("fixtures/scenarios");
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        scenarios_dir.to_str().unwrap(),
    ]);
    let body = serde_json::json!({
        "threadId": "thread-9", "runId": "run-9", "messages": [], "tools": [], "context": [],
        "state": {}, "forwardedProps": {"agentId": "plain-text-answer"},
    })
    .to_string();
    let resp = post(&server.addr, "/api/v1/agui", &body);
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let text = String::from_utf8(resp.body).unwrap();
    let first = text.split("\n\n").next().unwrap();
    assert!(
        first.starts_with("data: {\"type\":\"RUN_STARTED\""),
        "{first}"
    );
    assert!(
        first.contains("\"threadId\":\"thread-9\"") && first.contains("\"runId\":\"run-9\""),
        "{first}"
    );
    assert!(text.contains("\"type\":\"RUN_FINISHED\""));
}

#[test]
fn bad_requests_get_a_json_4xx_before_any_stream() {
    let scenarios_dir = root().join("fixtures/scenarios");
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        scenarios_dir.to_str().unwrap(),
    ]);
    for (path, body, status) in [
        ("/api/v1/chat/stream/start", "{not json", 400),
        ("/api/v1/chat/stream/start", r#"{"message":"m"}"#, 422),
        (
            "/api/v1/chat/stream/start",
            r#"{"message":"m","conversation_id":"c","agent_id":"nope"}"#,
            404,
        ),
        (
            "/api/v1/chat/stream/start",
            r#"{"message":"m","conversation_id":"c","agent_id":"plain-text-answer","protocol":"xml"}"#,
            400,
        ),
        ("/api/v1/agui", r#"{"threadId":"t","runId":"r"}"#, 400),
    ] {
        let resp = post(&server.addr, path, body);
        assert_eq!(resp.status, status, "{path} {body}");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
        assert!(v["error"].is_string() && v["code"].is_string(), "{v}");
    }
}

#[test]
fn a_scenario_cut_short_ends_with_the_coordinators_error() {
    let dir = std::env::temp_dir().join(format!("lce-serve-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let full =
        std::fs::read_to_string(root().join("fixtures/scenarios/plain-text-answer.jsonl")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    std::fs::write(
        dir.join("cut.jsonl"),
        lines[..lines.len() / 2].join("\n") + "\n",
    )
    .unwrap();
    let server = Server::start(&["--speed", "0", "--scenarios", dir.to_str().unwrap()]);
    let resp = post(
        &server.addr,
        "/api/v1/chat/stream/start",
        r#"{"message":"m","conversation_id":"c-1","agent_id":"cut","protocol":"custom"}"#,
    );
    let text = String::from_utf8(resp.body).unwrap();
    assert!(text.ends_with("event: error\ndata: {\"error\": \"Agent execution failed. Check server logs for details.\"}\n\n"), "{text}");
    assert!(!text.contains("event: done"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_client_that_disconnects_is_audited_as_cancelled() {
    let dir = std::env::temp_dir().join(format!("lce-serve-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let scenarios_dir = root().join("fixtures/scenarios");
    // Paced slowly, so the run is still going when the client leaves.
    let server = Server::start(&[
        "--speed",
        "0.05",
        "--scenarios",
        scenarios_dir.to_str().unwrap(),
        "--audit-log",
        audit.to_str().unwrap(),
    ]);
    let mut s = send(
        &server.addr,
        "/api/v1/chat/stream/start",
        r#"{"message":"m","conversation_id":"conv-gone","agent_id":"nested-subagents-two-levels","protocol":"agui"}"#,
    );
    let mut first = [0u8; 64];
    let n = s.read(&mut first).unwrap();
    assert!(n > 0);
    drop(s);
    // Bounded wait for the server to notice (not a timing assertion).
    let deadline = Instant::now() + Duration::from_secs(20);
    let record = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("conv-gone")) {
            break serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        assert!(
            Instant::now() < deadline,
            "no audit record for the disconnected run"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(record["terminal"], "run.cancelled");
    assert_eq!(record["code"], "disconnect");
    assert_eq!(record["coordinator_terminal"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keep_alive_comments_go_out_while_idle_in_agui_v1_only() {
    let dir = std::env::temp_dir().join(format!("lce-serve-keepalive-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let full =
        std::fs::read_to_string(root().join("fixtures/scenarios/plain-text-answer.jsonl")).unwrap();
    // The same run with a one-second pause before its last event.
    let mut lines: Vec<serde_json::Value> = full
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = lines.len() - 1;
    lines[last]["timestamp"] = serde_json::Value::from("2026-08-17T09:10:00.000Z");
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(dir.join("slow.jsonl"), text).unwrap();
    let server = Server::start(&[
        "--speed",
        "600",
        "--keepalive",
        "0.1",
        "--scenarios",
        dir.to_str().unwrap(),
    ]);
    let conversation = lines[0]["conversation_id"].as_str().unwrap();
    for (protocol, want) in [("agui-v1", true), ("custom", false), ("agui", false)] {
        let body = serde_json::json!({
            "message": "m", "conversation_id": conversation, "agent_id": "slow", "protocol": protocol,
        })
        .to_string();
        let resp = post(&server.addr, "/api/v1/chat/stream/start", &body);
        let text = String::from_utf8(resp.body).unwrap();
        assert_eq!(
            text.contains(": keep-alive\n\n"),
            want,
            "{protocol}: {text}"
        );
        let golden = std::fs::read_to_string(
            root().join(format!("fixtures/golden/{protocol}/plain-text-answer.sse")),
        )
        .unwrap();
        let without: String = text.replace(": keep-alive\n\n", "");
        // Only the last frame's timestamp differs from the golden file.
        assert_eq!(
            without.matches("\n\n").count(),
            golden.matches("\n\n").count(),
            "{protocol}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
