//! Backpressure in `lce serve` (gateway.md, guarantee 6): a client that
//! stops reading a long run neither slows the run nor makes the server
//! buffer what it has not read.
//!
//! The run goes on into the run log whatever its clients do; a subscriber
//! reads the log at its own pace. The HTTP stack pulls the response body one
//! chunk at a time and only when the socket takes more, so a stalled client
//! holds at most the kernel's socket buffers (a few MiB on loopback with
//! autotuning) plus one read batch of the log (docs/gateway.md). The log here
//! is Redis, so the server's memory holds no copy of the run either (the
//! in-memory log would, by design: the run is kept for the client's return).
//!
//! The run here is 24 MiB of SSE; while the client stalls, the run must end
//! (audited as finished) and the server's RSS must grow by less than
//! [`STALL_GROWTH_BOUND_KIB`]. Then the client reads on and gets every frame.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::Server;
use lce_testkit::redis_server::RedisServer;

/// Deltas in the run, and bytes of text in each.
const DELTAS: usize = 12_000;
const DELTA_BYTES: usize = 2_000;

/// How much the server may grow while the client stalls (KiB).
const STALL_GROWTH_BOUND_KIB: u64 = 16 * 1024;

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn write_long_run(dir: &PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("long.jsonl")).unwrap());
    let head = |seq: usize, ty: &str| {
        format!(
            r#"{{"version":1,"type":"{ty}","run_id":"run-long","conversation_id":"conv-long","sequence":{seq},"timestamp":"2026-08-17T09:00:00.000Z","namespace":[],"data":"#
        )
    };
    let text = "x".repeat(DELTA_BYTES);
    writeln!(
        f,
        r#"{}{{"harness_id":"h","adapter_version":"1"}}}}"#,
        head(0, "run.started")
    )
    .unwrap();
    writeln!(
        f,
        r#"{}{{"message_id":"m","role":"assistant"}}}}"#,
        head(1, "text.started")
    )
    .unwrap();
    for i in 0..DELTAS {
        writeln!(
            f,
            r#"{}{{"message_id":"m","delta":"{text}"}}}}"#,
            head(2 + i, "text.delta")
        )
        .unwrap();
    }
    writeln!(
        f,
        r#"{}{{"message_id":"m"}}}}"#,
        head(2 + DELTAS, "text.finished")
    )
    .unwrap();
    writeln!(
        f,
        r#"{}{{"outcome":"success"}}}}"#,
        head(3 + DELTAS, "run.finished")
    )
    .unwrap();
    f.flush().unwrap();
}

#[test]
fn a_client_that_stops_reading_neither_slows_the_run_nor_makes_the_server_buffer_it() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("lce-backpressure-{}", std::process::id()));
    let scenarios = dir.join("scenarios");
    write_long_run(&scenarios);
    let audit = dir.join("audit.jsonl");
    let secret = dir.join("token-secret");
    std::fs::write(&secret, "the replica's token secret\n").unwrap();
    let server = Server::start(&[
        "--speed".as_ref(),
        "0".as_ref(),
        "--scenarios".as_ref(),
        scenarios.as_os_str(),
        "--audit-log".as_ref(),
        audit.as_os_str(),
        "--log".as_ref(),
        redis.url().as_ref(),
        "--token-secret-file".as_ref(),
        secret.as_os_str(),
        // The client stalls for as long as the run takes: not a slow
        // reader to disconnect (that is serve_limits.rs's).
        "--write-timeout".as_ref(),
        "3600".as_ref(),
    ]);
    let pid = server.child.id();
    std::thread::sleep(Duration::from_millis(300));
    let baseline = rss_kib(pid);

    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let body =
        r#"{"message":"go","conversation_id":"conv-long","agent_id":"long","protocol":"custom"}"#;
    write!(
        s,
        "POST /api/v1/chat/stream/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // Read the first bytes, then stop reading.
    let mut first = vec![0u8; 4096];
    let n = s.read(&mut first).unwrap();
    assert!(
        first[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&first[..n])
    );

    // Stalled: the run goes on to its end (bounded wait, not a timing
    // assertion) while the subscriber fills the socket buffers and stops.
    let mut peak = baseline;
    let stall = Instant::now();
    let mut audited = String::new();
    while audited.is_empty() {
        assert!(
            stall.elapsed() < Duration::from_secs(120),
            "the run did not end while its client was not reading"
        );
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(100));
        audited = std::fs::read_to_string(&audit).unwrap_or_default();
    }
    assert!(
        audited.contains(r#""terminal":"run.finished""#),
        "{audited}"
    );
    for _ in 0..10 {
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    let growth = peak.saturating_sub(baseline);
    assert!(
        growth < STALL_GROWTH_BOUND_KIB,
        "server RSS grew by {growth} KiB (baseline {baseline} KiB) while the client stalled on a {} MiB run",
        DELTAS * DELTA_BYTES / (1024 * 1024)
    );

    // Reading on: the whole run arrives.
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    let received = n + rest.len();
    assert!(received > DELTAS * DELTA_BYTES, "only {received} bytes");
    let mut all = first[..n].to_vec();
    all.extend_from_slice(&rest);
    let marker = b"event: content\n";
    let content_frames = all.windows(marker.len()).filter(|w| *w == marker).count();
    assert_eq!(content_frames, DELTAS);
    eprintln!(
        "backpressure: baseline RSS {baseline} KiB, peak while stalled {peak} KiB (+{growth} KiB), {received} bytes delivered after the stall"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
