//! `lce serve`'s limits and shutdown, on the real binary over loopback: a
//! header that does not arrive closes the connection, `--max-connections`
//! holds further connections back, a body that stops arriving gets a 408
//! JSON error, and SIGTERM ends every run properly (whole streams, audited,
//! exit 0) without accepting new connections.
//!
//! Waits are generous bounds, never timing assertions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::raw::{
    ReadEnd, half_header, read_until_closed, read_until_in_body, sigterm, wait_exit,
};
use common::{Server, parse_response, post, root, send};

/// A bound for what should happen "soon": far above any expected time.
const SOON: Duration = Duration::from_secs(20);

fn scenarios_dir() -> String {
    root()
        .join("fixtures/scenarios")
        .to_str()
        .unwrap()
        .to_owned()
}

/// `lce serve --speed SPEED --scenarios` of the bundled scenarios, `flags`
/// after.
fn serve_scenarios(speed: &str, flags: &[&str]) -> Server {
    let scenarios = scenarios_dir();
    let mut args = vec!["--speed", speed, "--scenarios", &scenarios];
    args.extend_from_slice(flags);
    Server::start(&args)
}

/// The conversation id of a bundled scenario (its golden files use it).
fn conversation_of(name: &str) -> String {
    let text =
        std::fs::read_to_string(root().join(format!("fixtures/scenarios/{name}.jsonl"))).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["conversation_id"].as_str().unwrap().to_owned()
}

fn start_body(name: &str, conversation: &str, protocol: &str) -> String {
    serde_json::json!({
        "message": "m", "conversation_id": conversation, "agent_id": name, "protocol": protocol,
    })
    .to_string()
}

fn golden(protocol: &str, name: &str) -> Vec<u8> {
    std::fs::read(root().join(format!("fixtures/golden/{protocol}/{name}.sse"))).unwrap()
}

/// The golden file as `resp` should carry it: when the server names the
/// run it played (`X-Run-Id`, a fresh id per play), with the scenario's
/// recorded run id replaced by that one.
fn golden_for(resp: &common::HttpResponse, protocol: &str, name: &str) -> Vec<u8> {
    let golden = golden(protocol, name);
    let Some(run_id) = resp.header("x-run-id") else {
        return golden;
    };
    let text =
        std::fs::read_to_string(root().join(format!("fixtures/scenarios/{name}.jsonl"))).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let recorded = first["run_id"].as_str().unwrap();
    String::from_utf8(golden)
        .unwrap()
        .replace(recorded, run_id)
        .into_bytes()
}

/// A fresh temporary folder for one test.
fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lce-limits-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The audit log's records, once it has `n` lines (bounded wait).
fn audit_records(path: &std::path::Path, n: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + SOON;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() >= n && text.ends_with('\n') {
            return lines
                .iter()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        assert!(Instant::now() < deadline, "audit log: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A complete SSE body: whole frames only, every `data:` line JSON.
fn assert_whole_frames(body: &[u8], what: &str) {
    let text = std::str::from_utf8(body).unwrap();
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "{what}: the body ends inside a frame: {text:?}"
    );
    for frame in text.split("\n\n").filter(|f| !f.is_empty()) {
        for line in frame.lines() {
            if let Some(data) = line.strip_prefix("data: ") {
                serde_json::from_str::<serde_json::Value>(data)
                    .unwrap_or_else(|e| panic!("{what}: {e}: {data}"));
            }
        }
    }
}

/// A whole chunked response read to its end: the terminating chunk is there.
fn assert_chunked_and_terminated(raw: &[u8], what: &str) {
    let resp = parse_response(raw);
    assert_eq!(resp.status, 200, "{what}");
    assert!(
        resp.header("transfer-encoding")
            .is_some_and(|v| v.contains("chunked")),
        "{what}: not chunked"
    );
    assert!(
        raw.ends_with(b"\r\n0\r\n\r\n"),
        "{what}: the chunked body has no terminating chunk"
    );
}

#[test]
fn a_header_that_does_not_arrive_in_time_closes_the_connection() {
    let server = serve_scenarios("0", &["--header-timeout", "1"]);
    // Half a header, then nothing.
    let mut half = half_header(&server.addr);
    assert!(
        matches!(read_until_closed(&mut half, SOON), ReadEnd::Closed(_)),
        "a half header was held open"
    );
    // No byte at all.
    let mut silent = TcpStream::connect(&server.addr).unwrap();
    assert!(
        matches!(read_until_closed(&mut silent, SOON), ReadEnd::Closed(_)),
        "a silent connection was held open"
    );
    // A kept-alive connection that sends no second request.
    let mut kept = TcpStream::connect(&server.addr).unwrap();
    kept.write_all(b"POST /no-such-route HTTP/1.1\r\nHost: lce\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    match read_until_closed(&mut kept, SOON) {
        ReadEnd::Closed(raw) => {
            let resp = parse_response(&raw);
            assert_eq!(resp.status, 404);
        }
        ReadEnd::Open(raw) => panic!(
            "an idle kept-alive connection was held open: {}",
            String::from_utf8_lossy(&raw)
        ),
    }
    // A whole request on a fresh connection is still served.
    let name = "plain-text-answer";
    let resp = post(
        &server.addr,
        "/api/v1/chat/stream/start",
        &start_body(name, &conversation_of(name), "custom"),
    );
    assert_eq!(resp.status, 200);
    assert!(resp.body == golden_for(&resp, "custom", name));
}

#[test]
fn beyond_max_connections_a_connection_waits_for_a_free_slot() {
    let server = serve_scenarios("0", &["--max-connections", "2", "--header-timeout", "600"]);
    // Two connections that never finish their header hold both slots.
    let first = half_header(&server.addr);
    let _second = half_header(&server.addr);
    let name = "plain-text-answer";
    let mut third = send(
        &server.addr,
        "/api/v1/chat/stream/start",
        &start_body(name, &conversation_of(name), "custom"),
    );
    // Not answered while they are held (the kernel queues it).
    match read_until_closed(&mut third, Duration::from_secs(2)) {
        ReadEnd::Open(got) => assert!(got.is_empty(), "answered beyond the limit"),
        ReadEnd::Closed(_) => panic!("the third connection was closed"),
    }
    // One slot frees: the third is answered, in full.
    drop(first);
    match read_until_closed(&mut third, SOON) {
        ReadEnd::Closed(raw) => {
            let resp = parse_response(&raw);
            assert_eq!(resp.status, 200);
            assert!(resp.body == golden_for(&resp, "custom", name));
        }
        ReadEnd::Open(_) => panic!("not answered after a slot was freed"),
    }
}

#[test]
fn a_body_that_stops_arriving_gets_a_408_json_error() {
    let server = serve_scenarios("0", &["--body-idle-timeout", "1"]);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(
        b"POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: lce\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"message\": ",
    )
    .unwrap();
    let ReadEnd::Closed(raw) = read_until_closed(&mut s, SOON) else {
        panic!("a stalled body was held open");
    };
    let resp = parse_response(&raw);
    assert_eq!(resp.status, 408);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let body: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(body["code"], "body_timeout");
    assert!(body["error"].is_string());
}

#[test]
fn a_body_that_keeps_arriving_slowly_is_served() {
    // Every gap is shorter than the idle timeout; the whole body takes longer.
    let server = serve_scenarios("0", &["--body-idle-timeout", "2"]);
    let name = "plain-text-answer";
    let body = start_body(name, &conversation_of(name), "custom");
    let mut s = TcpStream::connect(&server.addr).unwrap();
    write!(
        s,
        "POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: lce\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    let bytes = body.as_bytes();
    let step = bytes.len().div_ceil(6);
    for piece in bytes.chunks(step) {
        std::thread::sleep(Duration::from_millis(500));
        s.write_all(piece).unwrap();
    }
    let ReadEnd::Closed(raw) = read_until_closed(&mut s, SOON) else {
        panic!("no whole answer");
    };
    let resp = parse_response(&raw);
    assert_eq!(resp.status, 200);
    assert!(resp.body == golden_for(&resp, "custom", name));
}

#[test]
fn a_body_declared_larger_than_16_mib_gets_a_413_json_error() {
    let server = Server::with_bundled_scenarios();
    let mut s = TcpStream::connect(&server.addr).unwrap();
    write!(
        s,
        "POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: lce\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        16 * 1024 * 1024 + 1
    )
    .unwrap();
    let ReadEnd::Closed(raw) = read_until_closed(&mut s, SOON) else {
        panic!("no answer");
    };
    let resp = parse_response(&raw);
    assert_eq!(resp.status, 413);
    let body: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(body["code"], "body_too_large");
}

#[test]
fn sigterm_ends_runs_in_flight_as_cancelled_after_the_grace_period() {
    let dir = temp_dir("sigterm");
    let audit = dir.join("audit.jsonl");
    // Paced slowly (about 30 s per run): still going when the grace ends.
    let mut server = serve_scenarios(
        "0.2",
        &[
            "--shutdown-grace",
            "1",
            "--audit-log",
            audit.to_str().unwrap(),
        ],
    );
    let name = "nested-subagents-two-levels";
    // Three runs at once, one per protocol.
    let protocols = ["custom", "agui", "agui-v1"];
    let mut streams: Vec<(TcpStream, Vec<u8>)> = protocols
        .iter()
        .map(|p| {
            let mut s = send(
                &server.addr,
                "/api/v1/chat/stream/start",
                &start_body(name, &format!("conv-term-{p}"), p),
            );
            // A first whole frame: the run is going.
            let got = read_until_in_body(&mut s, b"\n\n", SOON);
            (s, got)
        })
        .collect();
    sigterm(&server.child);
    for ((s, got), protocol) in streams.iter_mut().zip(protocols) {
        let ReadEnd::Closed(rest) = read_until_closed(s, Duration::from_secs(60)) else {
            panic!("{protocol}: the stream did not end");
        };
        got.extend_from_slice(&rest);
        assert_chunked_and_terminated(got, protocol);
        let body = parse_response(got).body;
        assert_whole_frames(&body, protocol);
        assert!(
            body.len() < golden(protocol, name).len(),
            "{protocol}: the run was not cut short"
        );
        if protocol == "agui-v1" {
            let text = String::from_utf8(body).unwrap();
            let last = text.trim_end().rsplit("\n\n").next().unwrap();
            let data: serde_json::Value =
                serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], "RUN_FINISHED", "{last}");
            assert_eq!(data["outcome"]["type"], "cancelled", "{last}");
        }
    }
    assert_eq!(wait_exit(&mut server.child, SOON), Some(0));
    let records = audit_records(&audit, 3);
    for protocol in protocols {
        let conversation = format!("conv-term-{protocol}");
        let record = records
            .iter()
            .find(|r| r["conversation_id"] == conversation.as_str())
            .unwrap_or_else(|| panic!("no audit record for {protocol}"));
        assert_eq!(record["terminal"], "run.cancelled", "{protocol}");
        assert_eq!(record["code"], "shutdown", "{protocol}");
        assert_eq!(record["coordinator_terminal"], true, "{protocol}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_lets_a_run_that_ends_within_the_grace_period_finish() {
    // A grace far longer than the test waits: the server exits because the
    // run ended, not because the grace ran out.
    let mut server = serve_scenarios("1", &["--shutdown-grace", "600"]);
    let name = "plain-text-answer";
    let conversation = conversation_of(name);
    let mut streams: Vec<(TcpStream, Vec<u8>, &str)> = ["custom", "agui-v1"]
        .into_iter()
        .map(|p| {
            let mut s = send(
                &server.addr,
                "/api/v1/chat/stream/start",
                &start_body(name, &conversation, p),
            );
            let mut head = [0u8; 1];
            s.read_exact(&mut head).unwrap();
            (s, head.to_vec(), p)
        })
        .collect();
    sigterm(&server.child);
    for (s, got, protocol) in &mut streams {
        let ReadEnd::Closed(rest) = read_until_closed(s, Duration::from_secs(60)) else {
            panic!("{protocol}: the stream did not end");
        };
        got.extend_from_slice(&rest);
        assert_chunked_and_terminated(got, protocol);
        let resp = parse_response(got);
        assert!(
            resp.body == golden_for(&resp, protocol, name),
            "{protocol}: the bytes differ from the golden file"
        );
    }
    assert_eq!(
        wait_exit(&mut server.child, Duration::from_secs(60)),
        Some(0)
    );
}

#[test]
fn after_sigterm_no_connection_is_accepted_and_a_second_signal_ends_the_grace() {
    let mut server = serve_scenarios(
        "0.2",
        &["--shutdown-grace", "600", "--header-timeout", "600"],
    );
    // A kept-alive connection between requests.
    let mut kept = TcpStream::connect(&server.addr).unwrap();
    kept.write_all(b"POST /no-such-route HTTP/1.1\r\nHost: lce\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let answer = read_until_in_body(&mut kept, b"", SOON);
    assert_eq!(parse_response(&answer).status, 404);
    let name = "nested-subagents-two-levels";
    let mut s = send(
        &server.addr,
        "/api/v1/chat/stream/start",
        &start_body(name, "conv-refused", "agui-v1"),
    );
    let mut got = read_until_in_body(&mut s, b"\n\n", SOON);
    sigterm(&server.child);
    // The listener closes: connecting is refused (bounded wait).
    let deadline = Instant::now() + SOON;
    loop {
        match TcpStream::connect(&server.addr) {
            // Refused; or reset, when the attempt was in the backlog as the
            // listener closed: either way not accepted.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                break;
            }
            Err(e) => panic!("connect: {e}"),
            Ok(_) => {
                assert!(Instant::now() < deadline, "still accepting after SIGTERM");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    // The kept-alive connection is closed (not by its header timeout).
    assert!(
        matches!(read_until_closed(&mut kept, SOON), ReadEnd::Closed(_)),
        "a kept-alive connection was held open after SIGTERM"
    );
    // ... while the server is still running the response in flight.
    assert_eq!(server.child.try_wait().unwrap(), None);
    // A second signal ends the grace period: the run ends as cancelled.
    sigterm(&server.child);
    let ReadEnd::Closed(rest) = read_until_closed(&mut s, Duration::from_secs(60)) else {
        panic!("the stream did not end after a second signal");
    };
    got.extend_from_slice(&rest);
    assert_chunked_and_terminated(&got, "agui-v1");
    let text = String::from_utf8(parse_response(&got).body).unwrap();
    assert!(
        text.ends_with("\"outcome\":{\"type\":\"cancelled\"}}\n\n"),
        "{text}"
    );
    assert_eq!(wait_exit(&mut server.child, SOON), Some(0));
}
