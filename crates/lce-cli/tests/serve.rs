//! `lce serve` over real loopback HTTP: every scenario in every protocol
//! equals its golden file; bad requests get a JSON 4xx; a run cut short ends
//! with the coordinator's `run.error`; a disconnect leaves the run going
//! (cancelled only under `--cancel-on-disconnect`).
//!
//! Runs are played with `--speed 0` (no pacing) except where pacing is the
//! point; pacing never changes the bytes (timestamps come from the events).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::{Server, post, root, send};

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

/// The run id a scenario was recorded with.
fn recorded_run_id(name: &str) -> String {
    let text =
        std::fs::read_to_string(root().join(format!("fixtures/scenarios/{name}.jsonl"))).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["run_id"].as_str().unwrap().to_owned()
}

#[test]
fn every_scenario_in_every_protocol_equals_its_golden_file() {
    let server = Server::with_bundled_scenarios();
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
            let golden = std::fs::read_to_string(
                root().join(format!("fixtures/golden/{protocol}/{name}.sse")),
            )
            .unwrap();
            // Each play is a new run with a fresh 128-bit id (docs/gateway.md):
            // the golden file, made from the scenario under its recorded run
            // id, with that id replaced by the served one.
            let run_id = resp.header("x-run-id").expect("X-Run-Id").to_owned();
            assert_eq!(run_id.len(), 32, "{run_id}");
            assert!(run_id.bytes().all(|b| b.is_ascii_hexdigit()), "{run_id}");
            assert!(resp.header("x-run-token").is_some_and(|t| t.len() == 64));
            let recorded = recorded_run_id(&name);
            let want = golden.replace(&recorded, &run_id);
            assert!(
                resp.body == want.as_bytes(),
                "{name} {protocol}: served bytes differ from the golden file"
            );
            checked += 1;
        }
    }
    assert!(checked >= 3 * 14);
}

#[test]
fn standard_agui_endpoint_takes_run_agent_input() {
    let server = Server::with_bundled_scenarios();
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
    let server = Server::with_bundled_scenarios();
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
    // Not `.jsonl`: the directory is also the scenario directory.
    let audit = dir.join("audit.log");
    let _ = std::fs::remove_file(&audit);
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        dir.to_str().unwrap(),
        "--audit-log",
        audit.to_str().unwrap(),
    ]);
    let resp = post(
        &server.addr,
        "/api/v1/chat/stream/start",
        r#"{"message":"m","conversation_id":"c-1","agent_id":"cut","protocol":"custom"}"#,
    );
    let text = String::from_utf8(resp.body).unwrap();
    assert!(text.ends_with("event: error\ndata: {\"error\": \"Agent execution failed. Check server logs for details.\"}\n\n"), "{text}");
    assert!(!text.contains("event: done"));
    // The audit names the rule by its id, as text (rule 12: no terminal).
    let deadline = Instant::now() + Duration::from_secs(20);
    let line = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        // A whole line: the server may be writing it.
        if let Some((line, _)) = text.split_once('\n') {
            break line.to_owned();
        }
        assert!(Instant::now() < deadline, "no audit record for the cut run");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        line.contains(r#""code":"provider_stream_closed""#),
        "{line}"
    );
    assert!(line.contains(r#""rule":"12""#), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Plays a slow run, reads its first bytes and hangs up; returns the run's
/// audit record once the server wrote it.
fn disconnect_mid_run(extra: &[&str], conversation: &str) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!(
        "lce-serve-audit-{}-{conversation}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let audit = dir.join("audit.jsonl");
    let scenarios_dir = root().join("fixtures/scenarios");
    // Paced, so the run is still going when the client leaves.
    let mut args = vec![
        "--speed",
        "2",
        "--scenarios",
        scenarios_dir.to_str().unwrap(),
        "--audit-log",
        audit.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let server = Server::start(&args);
    let body = format!(
        r#"{{"message":"m","conversation_id":"{conversation}","agent_id":"nested-subagents-two-levels","protocol":"agui"}}"#
    );
    let mut s = send(&server.addr, "/api/v1/chat/stream/start", &body);
    let mut first = [0u8; 64];
    let n = s.read(&mut first).unwrap();
    assert!(n > 0);
    drop(s);
    // Bounded wait for the run's end (not a timing assertion).
    let deadline = Instant::now() + Duration::from_secs(60);
    let record = loop {
        let text = std::fs::read_to_string(&audit).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(conversation)) {
            break serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        assert!(Instant::now() < deadline, "no audit record for the run");
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    record
}

#[test]
fn a_client_that_disconnects_does_not_end_its_run() {
    // The run goes on into the log for the client's return (D11 amended).
    let record = disconnect_mid_run(&[], "conv-gone");
    assert_eq!(record["terminal"], "run.finished", "{record}");
    assert_eq!(record["coordinator_terminal"], false, "{record}");
}

#[test]
fn under_cancel_on_disconnect_a_client_that_leaves_cancels_its_run() {
    let record = disconnect_mid_run(&["--cancel-on-disconnect"], "conv-cancel");
    assert_eq!(record["terminal"], "run.cancelled", "{record}");
    assert_eq!(record["code"], "disconnect", "{record}");
    assert_eq!(record["coordinator_terminal"], true, "{record}");
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

#[test]
fn resume_plays_the_scenario_that_continues_the_interrupted_one() {
    let server = Server::with_bundled_scenarios();
    let body = serde_json::json!({
        "conversation_id": "conv-approval-0009", "agent_id": "tool-approval-interrupt",
        "resume_data": r#"{"type": "tool_approval", "decision": "reject"}"#, "protocol": "custom",
    })
    .to_string();
    let resp = post(&server.addr, "/api/v1/chat/stream/resume", &body);
    assert_eq!(resp.status, 200);
    let run_id = resp.header("x-run-id").unwrap().to_owned();
    let golden = std::fs::read_to_string(
        root().join("fixtures/golden/custom/resumed-after-rejected-approval.sse"),
    )
    .unwrap()
    .replace(&recorded_run_id("resumed-after-rejected-approval"), &run_id);
    assert_eq!(String::from_utf8(resp.body).unwrap(), golden);
    // An agent whose scenario continues nothing: 404, before any stream.
    let body = body.replace("tool-approval-interrupt", "plain-text-answer");
    let resp = post(&server.addr, "/api/v1/chat/stream/resume", &body);
    assert_eq!(resp.status, 404);
    let err: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(err["code"], "nothing_to_resume");
}
