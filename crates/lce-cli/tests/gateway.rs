//! `lce serve` as a gateway with the embedded (memory) run log, over real
//! loopback HTTP: `GET /api/v1/runs/{id}/stream` replays a run byte for
//! byte and resumes after any `Last-Event-ID`; read tokens, push ingest and
//! its tokens, `--sse-ids` and `lce token` behave as `gateway.md` says.
//! The Redis log across replicas is `gateway_redis.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{HttpResponse, Server, frame_ids, lce, post, request, root, strip_ids};

fn start(server: &Server, agent: &str, protocol: &str) -> HttpResponse {
    let body = serde_json::json!({
        "message": "hi", "conversation_id": "conv-gw", "agent_id": agent, "protocol": protocol,
    })
    .to_string();
    let resp = post(&server.addr, "/api/v1/chat/stream/start", &body);
    assert_eq!(resp.status, 200);
    resp
}

fn get_stream(
    server: &Server,
    run_id: &str,
    protocol: &str,
    headers: &[(&str, &str)],
) -> HttpResponse {
    request(
        &server.addr,
        "GET",
        &format!("/api/v1/runs/{run_id}/stream?protocol={protocol}"),
        headers,
        b"",
    )
}

fn text(resp: &HttpResponse) -> String {
    String::from_utf8(resp.body.clone()).unwrap()
}

#[test]
fn a_run_read_back_equals_its_live_answer_and_resumes_after_every_frame() {
    let server = Server::with_bundled_scenarios();
    for protocol in ["custom", "agui", "agui-v1"] {
        let live = start(&server, "tool-approval-interrupt", protocol);
        let run_id = live.header("x-run-id").unwrap().to_owned();
        let token = live.header("x-run-token").unwrap().to_owned();
        let replay = get_stream(&server, &run_id, protocol, &[("X-Run-Token", &token)]);
        assert_eq!(replay.status, 200);
        assert_eq!(replay.header("content-type"), live.header("content-type"));
        let replay = text(&replay);
        // Every frame carries an id; without them the bytes are the live ones.
        assert_eq!(strip_ids(&replay), text(&live), "{protocol}");
        let ids = frame_ids(&replay);
        assert_eq!(
            ids.len(),
            replay.matches("\n\n").count(),
            "{protocol}: a frame without id"
        );
        for (id, end) in &ids {
            let rest = get_stream(
                &server,
                &run_id,
                protocol,
                &[("X-Run-Token", &token), ("Last-Event-ID", id)],
            );
            assert_eq!(rest.status, 200);
            assert_eq!(text(&rest), replay[*end..], "{protocol} after {id}");
        }
        // The token may come as ?token= (browser EventSource).
        let by_query = request(
            &server.addr,
            "GET",
            &format!("/api/v1/runs/{run_id}/stream?protocol={protocol}&token={token}"),
            &[],
            b"",
        );
        assert_eq!(text(&by_query), replay);
    }
}

#[test]
fn unknown_runs_wrong_tokens_and_bad_ids_are_refused() {
    let server = Server::with_bundled_scenarios();
    let live = start(&server, "plain-text-answer", "custom");
    let run_id = live.header("x-run-id").unwrap().to_owned();
    let token = live.header("x-run-token").unwrap().to_owned();
    let unknown = get_stream(
        &server,
        "0123456789abcdef0123456789abcdef",
        "custom",
        &[("X-Run-Token", &token)],
    );
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.header("content-type"), Some("application/json"));
    // A missing or wrong token is exactly an unknown run.
    let mut wrong = token.clone();
    wrong.replace_range(0..1, if token.starts_with('0') { "1" } else { "0" });
    for headers in [
        vec![],
        vec![("X-Run-Token", wrong.as_str())],
        vec![("X-Run-Token", "zz")],
    ] {
        let resp = get_stream(&server, &run_id, "custom", &headers);
        assert_eq!(resp.status, 404);
        assert_eq!(resp.body, unknown.body);
    }
    for (bad, code) in [
        ("banana", "bad_last_event_id"),
        ("1", "bad_last_event_id"),
        ("0.0", "bad_last_event_id"),
        ("999.0", "unknown_last_event_id"),
        ("1.99", "unknown_last_event_id"),
    ] {
        let resp = get_stream(
            &server,
            &run_id,
            "custom",
            &[("X-Run-Token", &token), ("Last-Event-ID", bad)],
        );
        assert_eq!(resp.status, 400, "{bad}");
        let body: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
        assert_eq!(body["code"], code, "{bad}");
    }
    let resp = get_stream(&server, &run_id, "klingon", &[("X-Run-Token", &token)]);
    assert_eq!(resp.status, 400);
}

#[test]
fn the_single_process_default_takes_a_push_and_reads_it_back() {
    // `lce serve --allow-anonymous-ingest`: nothing installed, no files.
    let dir = root().join("fixtures/scenarios");
    let server = Server::start(&[
        "--scenarios",
        dir.to_str().unwrap(),
        "--allow-anonymous-ingest",
    ]);
    let run = std::fs::read(dir.join("parallel-tool-calls.jsonl")).unwrap();
    let pushed = request(&server.addr, "POST", "/api/v1/runs", &[], &run);
    assert_eq!(pushed.status, 200);
    let run_id = pushed.header("x-run-id").unwrap().to_owned();
    let token = pushed.header("x-run-token").unwrap().to_owned();
    let back = get_stream(&server, &run_id, "agui", &[("X-Run-Token", &token)]);
    let golden =
        std::fs::read_to_string(root().join("fixtures/golden/agui/parallel-tool-calls.sse"))
            .unwrap();
    assert_eq!(strip_ids(&text(&back)), golden);
}

#[test]
fn sse_ids_add_ids_to_the_post_routes_only_when_asked() {
    let dir = root().join("fixtures/scenarios");
    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        dir.to_str().unwrap(),
        "--sse-ids",
    ]);
    let with = start(&server, "plain-text-answer", "custom");
    let plain = Server::with_bundled_scenarios();
    let without = start(&plain, "plain-text-answer", "custom");
    assert!(!text(&without).contains("id: "));
    let with_text = text(&with);
    assert_eq!(
        frame_ids(&with_text).len(),
        with_text.matches("\n\n").count()
    );
    let a = strip_ids(&with_text).replace(with.header("x-run-id").unwrap(), "RUN");
    let b = text(&without).replace(without.header("x-run-id").unwrap(), "RUN");
    assert_eq!(a, b);
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lce-gw-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn pushed_runs_need_the_ingest_token_and_read_back_as_encoded() {
    let dir = scratch("push");
    let token_file = dir.join("ingest");
    std::fs::write(&token_file, "ingest-token-0123456789\n").unwrap();
    let secret_file = dir.join("secret");
    std::fs::write(&secret_file, "a secret of more than sixteen bytes\n").unwrap();
    let scenarios = root().join("fixtures/scenarios");
    let scenario = std::fs::read(scenarios.join("tool-approval-interrupt.jsonl")).unwrap();
    let off = Server::with_bundled_scenarios();
    let resp = request(&off.addr, "POST", "/api/v1/runs", &[], &scenario);
    assert_eq!(resp.status, 404, "push is off without a token file");

    let server = Server::start(&[
        "--speed",
        "0",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--ingest-token-file",
        token_file.to_str().unwrap(),
        "--token-secret-file",
        secret_file.to_str().unwrap(),
    ]);
    for auth in [None, Some("Bearer nope"), Some("ingest-token-0123456789")] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        let resp = request(&server.addr, "POST", "/api/v1/runs", &headers, &scenario);
        assert_eq!(resp.status, 401, "{auth:?}");
        assert!(!String::from_utf8_lossy(&resp.body).contains("ingest-token"));
    }
    let auth = [
        ("Authorization", "Bearer ingest-token-0123456789"),
        ("Content-Type", "application/x-ndjson"),
    ];
    let resp = request(&server.addr, "POST", "/api/v1/runs", &auth, &scenario);
    assert_eq!(resp.status, 200);
    let summary: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    assert_eq!(summary["run_id"], "run-appr-0009", "{summary}");
    assert_eq!(summary["terminal"], "run.interrupted", "{summary}");
    assert_eq!(
        summary["events_in"],
        scenario.iter().filter(|b| **b == b'\n').count(),
        "{summary}"
    );
    assert_eq!(summary["dropped"], 0);
    assert_eq!(resp.header("x-run-id"), Some("run-appr-0009"));
    let pushed_token = resp.header("x-run-token").unwrap().to_owned();
    assert_eq!(summary["violations"], serde_json::json!([]));
    // The same run id again: 409.
    let again = request(&server.addr, "POST", "/api/v1/runs", &auth, &scenario);
    assert_eq!(again.status, 409);
    // Read back with the push answer's token: the bytes `lce encode` gives
    // for the file (its run id kept).
    let token = pushed_token.as_str();
    assert_eq!(token.len(), 64);
    let back = get_stream(
        &server,
        "run-appr-0009",
        "custom",
        &[("X-Run-Token", token)],
    );
    assert_eq!(back.status, 200);
    let golden =
        std::fs::read_to_string(root().join("fixtures/golden/custom/tool-approval-interrupt.sse"))
            .unwrap();
    assert_eq!(strip_ids(&text(&back)), golden);
    // `lce token` reads the run's nonce from a shared log: it needs one.
    let (code, _, err) = lce(&[
        "token",
        "run-appr-0009",
        "--token-secret-file",
        secret_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--log"), "{err}");
    // A secret file too short is a usage error.
    std::fs::write(dir.join("short"), "short").unwrap();
    let (code, _, err) = lce(&[
        "token",
        "r",
        "--token-secret-file",
        dir.join("short").to_str().unwrap(),
        "--log",
        "redis://127.0.0.1:1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("at least 16 bytes"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
