//! The plain-`fetch` client of `examples/resume-fetch` (what
//! `docs/gateway.md` shows a DA client doing) against a live `lce serve
//! --sse-ids`: a start whose connection drops after three frames, resumed
//! through `GET /api/v1/runs/{id}/stream` with `Last-Event-ID`, gives the
//! frames of an unbroken run, in `custom` and `agui`.
//!
//! Needs Node.js 20 (`fetch`, web streams): without it the test says
//! `SKIPPED` loudly and passes, except in CI (`CI` set), where it fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

mod common;

use common::{Server, root};

#[test]
fn a_fetch_client_resumes_das_protocols_after_a_dropped_connection() {
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        assert!(std::env::var_os("CI").is_none(), "node is required in CI");
        eprintln!("SKIPPED: node not installed");
        return;
    }
    let scenarios = root().join("fixtures/scenarios");
    // Paced, so that the drop comes mid-run.
    let server = Server::start(&[
        "--speed",
        "0.2",
        "--sse-ids",
        "--scenarios",
        scenarios.to_str().unwrap(),
    ]);
    for protocol in ["custom", "agui"] {
        let out = std::process::Command::new("node")
            .arg(root().join("examples/resume-fetch/check.mjs"))
            .arg(format!("http://{}", server.addr))
            .arg(protocol)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{protocol}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["dropped"], true, "{protocol}: {report}");
        assert_eq!(report["same"], true, "{protocol}: {report}");
        assert!(
            report["whole"].as_u64().unwrap() > 3,
            "{protocol}: {report}"
        );
    }
}
