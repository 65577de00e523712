//! `lce serve`'s limits and shutdown, on the real binary over loopback: a
//! header that does not arrive closes the connection, `--max-connections`
//! holds further connections back and `--max-connections-per-ip` closes
//! those of an address beyond its share, a JSON body that stops arriving
//! gets a 408 JSON error while a push is a stream (no 16 MiB cap, ended as
//! a closure after `--ingest-idle-timeout`), a reader that stops reading is
//! disconnected after `--write-timeout`, and SIGTERM ends every run
//! properly (whole streams, audited, exit 0) without accepting new
//! connections.
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

/// The lines of the bundled scenario `name`, each with its newline.
fn scenario_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(root().join(format!("fixtures/scenarios/{name}.jsonl")))
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A valid run `run_id` of `deltas` text deltas of 32 KiB each (D19 allows
/// 64 KiB of display text per event), as canonical JSON Lines: the
/// scenario `plain-text-answer` with its deltas replaced.
fn big_run(run_id: &str, deltas: usize) -> Vec<u8> {
    let lines = scenario_lines("plain-text-answer");
    let event = |line: &str, sequence: usize| {
        let mut event: serde_json::Value = serde_json::from_str(line).unwrap();
        event["run_id"] = run_id.into();
        event["sequence"] = sequence.into();
        event
    };
    let text: String = "lorem ipsum dolor sit amet, "
        .chars()
        .cycle()
        .take(32 * 1024)
        .collect();
    let mut out = Vec::new();
    let mut push = |event: serde_json::Value| {
        serde_json::to_writer(&mut out, &event).unwrap();
        out.push(b'\n');
    };
    push(event(&lines[0], 0)); // run.started
    push(event(&lines[1], 1)); // text.started
    for i in 0..deltas {
        let mut delta = event(&lines[2], 2 + i);
        delta["data"]["delta"] = text.clone().into();
        push(delta);
    }
    let n = lines.len();
    push(event(&lines[n - 2], 2 + deltas)); // text.finished
    push(event(&lines[n - 1], 3 + deltas)); // run.finished
    out
}

/// Opens a push of `length` bytes (`Content-Length`) and sends `first`.
fn open_push(addr: &str, length: usize, first: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /api/v1/runs HTTP/1.1\r\nHost: lce\r\nContent-Type: application/x-ndjson\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    s.write_all(first).unwrap();
    s
}

/// The push's answer, read to the end: status and JSON summary.
fn push_answer(s: &mut TcpStream, wait: Duration) -> (u16, serde_json::Value) {
    let ReadEnd::Closed(raw) = read_until_closed(s, wait) else {
        panic!("the push was not answered in time");
    };
    let resp = parse_response(&raw);
    (resp.status, serde_json::from_slice(&resp.body).unwrap())
}

#[test]
fn a_push_whose_harness_stops_sending_ends_as_a_closure_after_the_ingest_idle_timeout() {
    let server = serve_scenarios(
        "0",
        &["--allow-anonymous-ingest", "--ingest-idle-timeout", "1"],
    );
    // The run up to its last delta; the body declared far longer, never
    // finished, the connection held open.
    let mut lines = scenario_lines("plain-text-answer");
    lines.truncate(lines.len() - 2);
    let sent = lines.len();
    let mut s = open_push(&server.addr, 1024 * 1024, lines.concat().as_bytes());
    let (status, summary) = push_answer(&mut s, SOON);
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.error", "{summary}");
    assert_eq!(summary["events_in"], sent, "{summary}");
    assert_eq!(summary["violations"][0]["rule"], "12", "{summary}");
    assert_eq!(summary["outcome"], "ended", "{summary}");
}

#[test]
fn a_push_is_not_cut_by_the_body_idle_timeout() {
    // A gap three times the body idle timeout, far under the ingest one.
    let server = serve_scenarios(
        "0",
        &[
            "--allow-anonymous-ingest",
            "--body-idle-timeout",
            "1",
            "--ingest-idle-timeout",
            "60",
        ],
    );
    let lines = scenario_lines("plain-text-answer");
    let (head, tail) = lines.split_at(3);
    let (head, tail) = (head.concat(), tail.concat());
    let mut s = open_push(&server.addr, head.len() + tail.len(), head.as_bytes());
    std::thread::sleep(Duration::from_secs(3));
    s.write_all(tail.as_bytes()).unwrap();
    let (status, summary) = push_answer(&mut s, SOON);
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.finished", "{summary}");
    assert_eq!(summary["events_in"], lines.len(), "{summary}");
}

#[test]
fn a_push_body_over_16_mib_of_valid_events_is_taken_whole() {
    let server = serve_scenarios("0", &["--allow-anonymous-ingest"]);
    // 17 MiB of text: past the 16 MiB every body had, far under D19's
    // 256 MiB per run.
    let deltas = 17 * 32;
    let run = big_run("run-big-push", deltas);
    assert!(run.len() > 17 * 1024 * 1024);
    let mut s = open_push(&server.addr, run.len(), &run);
    let (status, summary) = push_answer(&mut s, Duration::from_secs(300));
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.finished", "{summary}");
    assert_eq!(summary["events_in"], deltas + 4, "{summary}");
    assert_eq!(summary["violations"], serde_json::json!([]), "{summary}");
}

#[test]
fn beyond_max_connections_per_ip_a_connection_is_closed_at_once() {
    let server = serve_scenarios(
        "0",
        &["--max-connections-per-ip", "2", "--header-timeout", "600"],
    );
    // Two connections that never finish their header hold the address's
    // share (accepted in order, so before the third).
    let first = half_header(&server.addr);
    let _second = half_header(&server.addr);
    let mut third = TcpStream::connect(&server.addr).unwrap();
    match read_until_closed(&mut third, SOON) {
        ReadEnd::Closed(got) => assert!(got.is_empty(), "the third was answered"),
        ReadEnd::Open(_) => panic!("a third connection from the address was held open"),
    }
    // One closes: the address is served again (once the server has seen
    // the close; bounded wait).
    drop(first);
    let name = "plain-text-answer";
    let body = start_body(name, &conversation_of(name), "custom");
    let deadline = Instant::now() + SOON;
    loop {
        let mut s = send(&server.addr, "/api/v1/chat/stream/start", &body);
        match read_until_closed(&mut s, SOON) {
            ReadEnd::Closed(raw) if !raw.is_empty() => {
                let resp = parse_response(&raw);
                assert_eq!(resp.status, 200);
                assert!(resp.body == golden_for(&resp, "custom", name));
                break;
            }
            ReadEnd::Closed(_) => {
                assert!(Instant::now() < deadline, "never served again");
                std::thread::sleep(Duration::from_millis(50));
            }
            ReadEnd::Open(_) => panic!("not answered"),
        }
    }
}

/// `GET /api/v1/runs/{run_id}/stream` with the run's token, once the run
/// exists (bounded wait): the connection, its response header read.
fn open_stream(addr: &str, run_id: &str, token: &str) -> TcpStream {
    let deadline = Instant::now() + SOON;
    loop {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET /api/v1/runs/{run_id}/stream HTTP/1.1\r\nHost: lce\r\nX-Run-Token: {token}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let head = read_until_in_body(&mut s, b"", SOON);
        if head.starts_with(b"HTTP/1.1 200") {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&head)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_reader_that_stops_reading_is_disconnected_after_the_write_timeout() {
    let dir = temp_dir("write-timeout");
    let secret = dir.join("secret");
    std::fs::write(&secret, "a secret of more than sixteen bytes\n").unwrap();
    let logs = dir.join("stderr.log");
    let server = Server::start_logging(
        &[
            "--speed",
            "0",
            "--scenarios",
            &scenarios_dir(),
            "--allow-anonymous-ingest",
            "--token-secret-file",
            secret.to_str().unwrap(),
            // Long enough that the reading client, descheduled on a busy
            // machine, is not taken for a stalled one.
            "--write-timeout",
            "3",
        ],
        std::fs::File::create(&logs).unwrap().into(),
    );
    let run_id = "run-slow-reader";
    // A run of 24 MiB: far more than the stalled reader's socket buffers
    // hold (a few MiB on loopback). Its first lines first, so the run
    // exists while it is read.
    let run = big_run(run_id, 24 * 32);
    let first_lines = run
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(3)
        .unwrap()
        .0
        + 1;
    let mut push = open_push(&server.addr, run.len(), &run[..first_lines]);
    // The push answer's header comes once the run's log exists: its token
    // lets the readers in while the run is pushed.
    let head = read_until_in_body(&mut push, b"", SOON);
    let token = String::from_utf8_lossy(&head)
        .split("\r\n")
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("x-run-token")
                .then(|| value.trim().to_owned())
        })
        .expect("the push answer's X-Run-Token");
    // One reader reads on; the other never reads past the header.
    let mut reader = open_stream(&server.addr, run_id, &token);
    let reading =
        std::thread::spawn(move || read_until_closed(&mut reader, Duration::from_secs(300)));
    let mut stalled = open_stream(&server.addr, run_id, &token);
    push.write_all(&run[first_lines..]).unwrap();
    let ReadEnd::Closed(rest) = read_until_closed(&mut push, Duration::from_secs(300)) else {
        panic!("the push was not answered in time");
    };
    let answer = parse_response(&[head, rest].concat());
    let summary: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(answer.status, 200, "{summary}");
    assert_eq!(summary["terminal"], "run.finished", "{summary}");
    // The reader gets the whole run, to its terminal.
    let ReadEnd::Closed(raw) = reading.join().unwrap() else {
        panic!("the reading client's stream did not end");
    };
    assert!(
        raw.ends_with(b"\r\n0\r\n\r\n"),
        "the reading client's stream was cut"
    );
    assert!(
        raw.windows(14).any(|w| w == b"event: done\nda"),
        "no terminal frame"
    );
    // The server gave up on the stalled one, and says so.
    let deadline = Instant::now() + SOON;
    while !std::fs::read_to_string(&logs)
        .unwrap_or_default()
        .contains("write timeout")
    {
        assert!(Instant::now() < deadline, "no write timeout logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    // What the stalled one reads now ends early: closed, without the
    // chunked body's end.
    let ReadEnd::Closed(rest) = read_until_closed(&mut stalled, SOON) else {
        panic!("the stalled reader's connection is still open");
    };
    assert!(
        !rest.ends_with(b"\r\n0\r\n\r\n"),
        "the stalled reader got the whole run"
    );
    let logged = std::fs::read_to_string(&logs).unwrap();
    assert!(!logged.contains("lorem ipsum"), "a payload reached the log");
    let _ = std::fs::remove_dir_all(&dir);
}
