//! `lce serve --upstream URL` against a scripted harness on loopback (a
//! std TCP server in the test): both framings, the headers it forwards,
//! resume data passed exactly, 502s that carry nothing of the upstream,
//! rule 12 on a broken stream, and cancel through DA's route.
//! The Python harness across replicas is `harness_python.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use common::{HttpResponse, Server, request, root};

/// One request the harness received.
#[derive(Debug)]
struct Received {
    head: String,
    body: serde_json::Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// How the harness answers a `POST /runs`.
#[derive(Clone)]
enum Script {
    /// 200 with the scenario's lines (run and conversation ids replaced by
    /// the request's), NDJSON or SSE; `cut`: stop after that many lines.
    Play {
        scenario: &'static str,
        sse: bool,
        cut: Option<usize>,
    },
    /// This status and a body that must never reach a client.
    Fail(u16),
    /// 200 with a content type lce does not read.
    WrongType,
    /// A chunked body cut after `n` lines and half of the next, without
    /// its last chunk (the connection breaks).
    Broken { scenario: &'static str, n: usize },
    /// 200, the first `n` lines, then wait for a cancel and end with the
    /// harness's own `run.cancelled`... or never (`own_terminal: false`).
    Hang { scenario: &'static str, n: usize },
    /// 200, the first `n` lines, then one line of `bytes` bytes without
    /// its newline, written in 64 KiB pieces while lce reads them.
    HugeLine {
        scenario: &'static str,
        n: usize,
        bytes: usize,
    },
}

const SECRET: &str = "stack trace with a secret sk-live-123";

/// A harness on a free port; every request goes to `seen`.
fn harness(script: Script) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let tx = tx.clone();
            let script = script.clone();
            std::thread::spawn(move || serve_one(stream, &script, &tx));
        }
    });
    (format!("http://{addr}"), rx)
}

fn serve_one(mut stream: TcpStream, script: &Script, tx: &mpsc::Sender<Received>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
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
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    let _ = tx.send(Received {
        head: head.clone(),
        body: body.clone(),
    });
    if path.ends_with("/cancel") {
        let _ =
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\n{\"cancelled\":true}");
        return;
    }
    match script {
        Script::Fail(status) => {
            let _ = write!(
                stream,
                "HTTP/1.1 {status} Oops\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{SECRET}",
                SECRET.len()
            );
        }
        Script::WrongType => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nhi",
            );
        }
        Script::Play { scenario, sse, cut } => {
            let lines = lines_for(scenario, &body);
            let lines = &lines[..cut.unwrap_or(lines.len()).min(lines.len())];
            let ty = if *sse {
                "text/event-stream"
            } else {
                "application/x-ndjson"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {ty}\r\nConnection: close\r\n\r\n"
            );
            // One write: the run arrives ready, so lce's reader never waits
            // between its events (a wait would release a held tool start,
            // D13a, and a rejected call's start would then show).
            let body: String = lines
                .iter()
                .map(|line| {
                    if *sse {
                        format!("event: lce\ndata: {line}\n\n: keep-alive\n\n")
                    } else {
                        format!("{line}\n")
                    }
                })
                .collect();
            let _ = stream.write_all(body.as_bytes());
        }
        Script::Broken { scenario, n } => {
            let lines = lines_for(scenario, &body);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n"
            );
            let mut text: String = lines[..*n].iter().map(|l| format!("{l}\n")).collect();
            text.push_str(&lines[*n][..lines[*n].len() / 2]);
            let _ = write!(stream, "{:x}\r\n{text}\r\n", text.len());
            let _ = stream.flush();
            // Dropped here: the body never gets its last chunk.
        }
        Script::HugeLine { scenario, n, bytes } => {
            open_ndjson(&mut stream, &lines_for(scenario, &body)[..*n]);
            let piece = vec![b'x'; 64 * 1024];
            for _ in 0..bytes / piece.len() {
                if stream.write_all(&piece).is_err() {
                    // lce let go of the run.
                    return;
                }
            }
        }
        Script::Hang { scenario, n } => {
            open_ndjson(&mut stream, &lines_for(scenario, &body)[..*n]);
            // Hold the stream open until lce lets go of it.
            let mut sink = [0u8; 1];
            let _ = stream.read(&mut sink);
        }
    }
}

/// A 200 NDJSON answer's header and `lines`, the body left open.
fn open_ndjson(stream: &mut TcpStream, lines: &[String]) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n"
    );
    for line in lines {
        let _ = stream.write_all(format!("{line}\n").as_bytes());
    }
}

/// The scenario's lines with the request's run and conversation ids.
fn lines_for(scenario: &str, request: &serde_json::Value) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(format!("fixtures/scenarios/{scenario}.jsonl")))
        .unwrap();
    text.lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["run_id"] = request["run_id"].clone();
            v["conversation_id"] = request["conversation_id"].clone();
            v.to_string()
        })
        .collect()
}

fn serve(upstream: &str) -> Server {
    Server::start(&["--upstream", upstream])
}

fn start(server: &Server, agent: &str, protocol: &str, headers: &[(&str, &str)]) -> HttpResponse {
    let body = serde_json::json!({
        "message": "hello there", "conversation_id": "conv-up", "agent_id": agent, "protocol": protocol,
        "client_context": {"tz": "UTC"},
    });
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    request(
        &server.addr,
        "POST",
        "/api/v1/chat/stream/start",
        &all,
        body.to_string().as_bytes(),
    )
}

/// The golden file of `scenario` in `protocol` for a run played under
/// `run_id` and `conversation_id`.
fn golden(scenario: &str, protocol: &str, run_id: &str, conversation: &str) -> String {
    let text = std::fs::read_to_string(root().join(format!("fixtures/scenarios/{scenario}.jsonl")))
        .unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    std::fs::read_to_string(root().join(format!("fixtures/golden/{protocol}/{scenario}.sse")))
        .unwrap()
        .replace(first["run_id"].as_str().unwrap(), run_id)
        .replace(first["conversation_id"].as_str().unwrap(), conversation)
}

#[test]
fn runs_come_from_the_upstream_in_either_framing_with_the_clients_headers() {
    for sse in [false, true] {
        let (url, seen) = harness(Script::Play {
            scenario: "tool-approval-interrupt",
            sse,
            cut: None,
        });
        let log =
            std::env::temp_dir().join(format!("lce-upstream-log-{sse}-{}", std::process::id()));
        let server = Server::start_logging(
            &["--upstream", &url],
            std::process::Stdio::from(std::fs::File::create(&log).unwrap()),
        );
        for protocol in ["custom", "agui", "agui-v1"] {
            let resp = start(
                &server,
                "demo",
                protocol,
                &[
                    ("Authorization", "Bearer user-42"),
                    ("X-Request-Id", "req-7"),
                ],
            );
            assert_eq!(resp.status, 200, "sse={sse} {protocol}");
            let run_id = resp.header("x-run-id").unwrap().to_owned();
            assert_eq!(
                String::from_utf8(resp.body.clone()).unwrap(),
                golden("tool-approval-interrupt", protocol, &run_id, "conv-up"),
                "sse={sse} {protocol}"
            );
            let got = seen.recv_timeout(Duration::from_secs(30)).unwrap();
            assert!(got.head.starts_with("POST /runs HTTP/1.1"), "{}", got.head);
            assert_eq!(
                got.header("authorization").as_deref(),
                Some("Bearer user-42")
            );
            assert_eq!(got.header("x-request-id").as_deref(), Some("req-7"));
            assert_eq!(got.body["run_id"], run_id.as_str());
            assert_eq!(got.body["conversation_id"], "conv-up");
            assert_eq!(got.body["agent_id"], "demo");
            assert_eq!(got.body["message"], "hello there");
            assert_eq!(got.body["client_context"], serde_json::json!({"tz": "UTC"}));
            assert!(got.body.get("resume_data").is_none());
        }
        // The forwarded headers never reach the server's logs (which did log
        // the runs).
        drop(server);
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(logged.contains("run ended"), "{logged}");
        assert!(
            !logged.contains("user-42") && !logged.contains("req-7"),
            "{logged}"
        );
        let _ = std::fs::remove_file(&log);
    }
}

#[test]
fn resume_forwards_the_resume_data_exactly() {
    let (url, seen) = harness(Script::Play {
        scenario: "resumed-after-rejected-approval",
        sse: false,
        cut: None,
    });
    let server = serve(&url);
    // Odd spacing and key order: passed on as the same string.
    let resume_data = r#"{"decision":  "reject", "type":"tool_approval"}"#;
    let body = serde_json::json!({
        "conversation_id": "conv-up", "agent_id": "demo", "resume_data": resume_data, "protocol": "custom",
    });
    let resp = request(
        &server.addr,
        "POST",
        "/api/v1/chat/stream/resume",
        &[],
        body.to_string().as_bytes(),
    );
    assert_eq!(resp.status, 200);
    let run_id = resp.header("x-run-id").unwrap();
    assert_eq!(
        String::from_utf8(resp.body.clone()).unwrap(),
        golden(
            "resumed-after-rejected-approval",
            "custom",
            run_id,
            "conv-up"
        )
    );
    let got = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(got.body["resume_data"], resume_data);
    assert!(got.body.get("message").is_none());
}

#[test]
fn an_upstream_that_gives_no_run_is_a_502_with_nothing_of_its_words() {
    // Nothing listens on this port (bound, then closed).
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let (failing, _s1) = harness(Script::Fail(500));
    let (forbidden, _s2) = harness(Script::Fail(403));
    let (wrong, _s3) = harness(Script::WrongType);
    for url in [closed, failing, forbidden, wrong] {
        let server = serve(&url);
        let resp = start(&server, "demo", "custom", &[]);
        assert_eq!(resp.status, 502, "{url}");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let body: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
        assert_eq!(body["code"], "upstream_unavailable");
        assert!(!String::from_utf8_lossy(&resp.body).contains("secret"));
    }
}

#[test]
fn an_upstream_that_breaks_mid_run_gets_the_closure_terminal() {
    let (url, _seen) = harness(Script::Play {
        scenario: "plain-text-answer",
        sse: false,
        cut: Some(3),
    });
    let server = serve(&url);
    let resp = start(&server, "demo", "custom", &[]);
    assert_eq!(resp.status, 200);
    let text = String::from_utf8(resp.body).unwrap();
    assert!(
        text.ends_with("event: error\ndata: {\"error\": \"Agent execution failed. Check server logs for details.\"}\n\n"),
        "{text}"
    );
}

#[test]
fn an_upstream_whose_connection_breaks_mid_line_gets_the_closure_terminal() {
    let (url, _seen) = harness(Script::Broken {
        scenario: "plain-text-answer",
        n: 3,
    });
    let audit =
        std::env::temp_dir().join(format!("lce-upstream-broken-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    let server = Server::start(&["--upstream", &url, "--audit-log", audit.to_str().unwrap()]);
    let resp = start(&server, "demo", "agui-v1", &[]);
    assert_eq!(resp.status, 200);
    let text = String::from_utf8(resp.body).unwrap();
    assert!(text.contains("TEXT_MESSAGE_START"), "{text}");
    assert!(text.contains(r#""type":"RUN_ERROR""#), "{text}");
    // Rule 12 (D9), not a bad line (D8): the half line is not an event.
    let record = first_audit_record(&audit);
    assert_eq!(record["code"], "provider_stream_closed", "{record}");
    assert_eq!(record["rule"], "12", "{record}");
    let _ = std::fs::remove_file(&audit);
}

#[test]
fn cancel_on_any_route_ends_the_running_run_once_the_upstream_accepts() {
    let (url, seen) = harness(Script::Hang {
        scenario: "plain-text-answer",
        n: 3,
    });
    let audit =
        std::env::temp_dir().join(format!("lce-upstream-audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&audit);
    let server = Server::start(&["--upstream", &url, "--audit-log", audit.to_str().unwrap()]);
    // Nothing runs yet.
    let cancel = serde_json::json!({"conversation_id": "conv-up", "agent_id": "demo"}).to_string();
    let none = request(
        &server.addr,
        "POST",
        "/api/v1/chat/stream/cancel",
        &[],
        cancel.as_bytes(),
    );
    assert_eq!(none.status, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&none.body).unwrap(),
        serde_json::json!({"cancelled": false})
    );
    let addr = server.addr.clone();
    let reader = std::thread::spawn(move || {
        let body = serde_json::json!({
            "message": "m", "conversation_id": "conv-up", "agent_id": "demo", "protocol": "agui-v1",
        });
        request(
            &addr,
            "POST",
            "/api/v1/chat/stream/start",
            &[],
            body.to_string().as_bytes(),
        )
    });
    let started = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    let run_id = started.body["run_id"].as_str().unwrap().to_owned();
    // The run is logged and running: cancel it, forwarding the caller's auth.
    let mut answer = serde_json::Value::Null;
    for _ in 0..100 {
        let r = request(
            &server.addr,
            "POST",
            "/api/v1/chat/stream/cancel",
            &[("Authorization", "Bearer u")],
            cancel.as_bytes(),
        );
        answer = serde_json::from_slice(&r.body).unwrap();
        if answer["cancelled"] == true {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(answer, serde_json::json!({"cancelled": true}));
    let to_harness = seen.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        to_harness
            .head
            .starts_with(&format!("POST /runs/{run_id}/cancel HTTP/1.1")),
        "{}",
        to_harness.head
    );
    assert_eq!(
        to_harness.header("authorization").as_deref(),
        Some("Bearer u")
    );
    let resp = reader.join().unwrap();
    let text = String::from_utf8(resp.body).unwrap();
    assert!(
        text.trim_end()
            .ends_with(r#""outcome":{"type":"cancelled"}}"#),
        "{text}"
    );
    assert_eq!(text.matches("RUN_FINISHED").count(), 1);
    // The coordinator ended it for the client's request (D11).
    let record = first_audit_record(&audit);
    assert_eq!(record["terminal"], "run.cancelled", "{record}");
    assert_eq!(record["code"], "client_request", "{record}");
    let _ = std::fs::remove_file(&audit);
}

/// The first audit record, once the server has written it whole: the
/// response can end before the server has finished writing the record.
fn first_audit_record(audit: &std::path::Path) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(audit).unwrap_or_default();
        if let Some((line, _)) = text.split_once('\n') {
            return serde_json::from_str(line).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no audit record in {}",
            audit.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Peak resident memory (`VmHWM`) of process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// A harness that sends a 64 MiB line: the run ends at the 4 MiB line
/// bound (D8) and lce's peak memory grows by less than 24 MiB (it holds
/// at most the bound of the line, never the whole).
#[test]
fn a_64_mib_line_from_the_harness_raises_peak_memory_by_less_than_24_mib() {
    let (url, _seen) = harness(Script::HugeLine {
        scenario: "plain-text-answer",
        n: 2,
        bytes: 64 * 1024 * 1024,
    });
    let server = serve(&url);
    let pid = server.child.id();
    let before = peak_rss_kib(pid);
    let resp = start(&server, "demo", "agui-v1", &[]);
    assert_eq!(resp.status, 200);
    let text = String::from_utf8(resp.body).unwrap();
    assert!(
        text.contains(r#""type":"RUN_ERROR""#),
        "{}",
        &text[..text.len().min(2000)]
    );
    let grew = peak_rss_kib(pid).saturating_sub(before);
    assert!(
        grew < 24 * 1024,
        "peak RSS grew by {grew} KiB for a 64 MiB line"
    );
}
