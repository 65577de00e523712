//! DA's non-streaming invoke: `lce invoke` on every scenario equals its
//! golden answer `fixtures/golden/invoke/<scenario>.json`; the
//! content/thinking split with subagent text, suppressed rejected calls and
//! no tool calls at all; the options and exit statuses; and
//! `POST /api/v1/chat/invoke` through `lce serve` answering the same bytes.
//!
//! Golden format (one JSON object, in the one layout `golden_text` checks):
//! `{"status": N, "headers": {"retry-after": "S"}, "body": "<the exact body>"}`
//! with `headers` only when the answer has one besides
//! `Content-Type: application/json`. The body is a JSON string, so its bytes
//! are exact (UTF-8 raw, every escape of the body kept as text). This test
//! only compares; to rewrite the goldens after an intended change run
//! `cargo xtask bless --only invoke` and review the diff it prints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Server, post, root};

fn scenarios() -> Vec<PathBuf> {
    common::scenario_files()
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_str().unwrap().to_owned()
}

/// What `lce invoke` answered.
#[derive(Debug)]
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: String,
    exit: i32,
    stderr: String,
}

fn invoke(args: &[&str], stdin: Option<&str>) -> Answer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lce"))
        .arg("invoke")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let status = stderr
        .lines()
        .find_map(|l| l.strip_prefix("status "))
        .unwrap_or_else(|| panic!("no status on stderr: {stderr}"))
        .parse()
        .unwrap();
    let retry_after = stderr
        .lines()
        .find_map(|l| l.strip_prefix("retry-after "))
        .map(str::to_owned);
    Answer {
        status,
        retry_after,
        body: String::from_utf8(out.stdout).unwrap(),
        exit: out.status.code().unwrap(),
        stderr,
    }
}

/// The golden file's text for an answer (the one canonical layout).
fn golden_text(status: u16, retry_after: Option<&str>, body: &str) -> String {
    let mut s = format!("{{\n  \"status\": {status},\n");
    if let Some(secs) = retry_after {
        s += &format!(
            "  \"headers\": {{\"retry-after\": {}}},\n",
            serde_json::json!(secs)
        );
    }
    s += &format!("  \"body\": {}\n}}\n", serde_json::to_string(body).unwrap());
    s
}

/// A golden answer: (status, retry-after, body).
fn golden(name: &str) -> (u16, Option<String>, String) {
    let path = root().join(format!("fixtures/golden/invoke/{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (write it with `cargo xtask bless --only invoke`)",
            path.display()
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let status = u16::try_from(v["status"].as_u64().unwrap()).unwrap();
    let retry = v["headers"]["retry-after"].as_str().map(str::to_owned);
    let body = v["body"].as_str().unwrap().to_owned();
    assert_eq!(
        text,
        golden_text(status, retry.as_deref(), &body),
        "{name}: golden not in the canonical layout"
    );
    (status, retry, body)
}

/// `plain-text-answer`'s whole answer text (no tool call: all content).
const PLAIN_ANSWER: &str = "RBAC stands for role-based access control: permissions are granted to roles, and users receive roles.";

fn body_json(name: &str) -> serde_json::Value {
    serde_json::from_str(&golden(name).2).unwrap()
}

#[test]
fn every_scenario_answers_its_golden() {
    let dir = root().join("fixtures/golden/invoke");
    let mut names = Vec::new();
    for scenario in scenarios() {
        let name = stem(&scenario);
        let a = invoke(&[scenario.to_str().unwrap()], None);
        assert_eq!(a.exit, i32::from(a.status != 200), "{name}: {}", a.stderr);
        // The body is compact JSON with DA's first keys.
        let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(v["success"], a.status == 200, "{name}");
        let (status, retry, body) = golden(&name);
        assert_eq!(
            (a.status, a.retry_after.as_deref()),
            (status, retry.as_deref()),
            "{name}"
        );
        assert!(
            a.body == body,
            "{name}: body differs from the golden\n got: {}\nwant: {body}",
            a.body
        );
        names.push(name);
    }
    // No golden without a scenario.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            names.contains(&stem(&path)),
            "{}: no scenario (`cargo xtask bless --only invoke` removes it)",
            path.display()
        );
    }
}

#[test]
fn bodies_are_compact_with_keys_in_das_order() {
    let keys = |name: &str| -> Vec<String> {
        // serde_json's Map sorts keys: read the order from the text instead.
        let body = golden(name).2;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let mut ks: Vec<(usize, String)> = v
            .as_object()
            .unwrap()
            .keys()
            .map(|k| (body.find(&format!("\"{k}\":")).unwrap(), k.clone()))
            .collect();
        ks.sort();
        ks.into_iter().map(|(_, k)| k).collect()
    };
    let ids = ["agent_id", "conversation_id", "trace_id"];
    let with = |first: &[&str]| -> Vec<String> {
        first
            .iter()
            .chain(ids.iter())
            .map(|s| (*s).to_owned())
            .collect()
    };
    assert_eq!(
        keys("plain-text-answer"),
        with(&["success", "content", "thinking"])
    );
    assert_eq!(
        keys("tool-approval-interrupt"),
        with(&["success", "error", "interrupt_type"])
    );
    assert_eq!(
        keys("run-error-capacity-retryable"),
        with(&["success", "error"])
    );
    assert_eq!(keys("cancelled-mid-text"), with(&["success", "error"]));
    // Compact separators, UTF-8 raw (no `\u` escape).
    assert_eq!(
        golden("unicode-everywhere").2,
        r#"{"success":true,"content":"Traduction : « 5ユーロかかります » 💶","thinking":"Voilà, café crème à São Paulo — naïve façade. 日本語のテキスト、中文，한국어. Emoji: 😀🚀👩‍💻 𝄞 العربية: مرحبا بالعالم עברית: שלום עולם","agent_id":"unicode-everywhere","conversation_id":"conv-unicode-0015","trace_id":null}"#
    );
}

#[test]
fn content_and_thinking_splits() {
    // No tool calls at all: everything is content, thinking is null.
    let v = body_json("plain-text-answer");
    assert_eq!(v["content"], PLAIN_ANSWER);
    assert!(v["thinking"].is_null());
    // Reasoning is never text: still no thinking.
    assert!(body_json("reasoning-then-text")["thinking"].is_null());

    // Subagent text counts, in every namespace; the last shown tool_start
    // (the inner subagent's own call) is the boundary.
    let v = body_json("nested-subagents-two-levels");
    assert_eq!(
        v["thinking"],
        "I will ask the research agent.Delegating the lookup to the search agent."
    );
    assert_eq!(
        v["content"],
        "The policy is in audit-policy.md, revision 14.Audit logs are retained 400 days (audit-policy.md rev 14).Audit logs are kept for 400 days, per audit-policy.md revision 14."
    );

    // Suppressed re-emissions of rejected calls are no boundary; the other
    // calls of the resumed run are.
    let v = body_json("resumed-after-rejected-approval");
    assert_eq!(
        v["content"],
        "Understood: I did not delete /tmp/report-draft.txt. The file is unchanged."
    );
    assert!(v["thinking"].is_null());
    let v = body_json("resumed-mixed-approval-decisions");
    assert_eq!(
        v["content"],
        "Restarted billing-api and emailed on-call; the worker stays at its current scale."
    );
    assert!(v["thinking"].is_null());

    // Text before a tool call is thinking.
    let v = body_json("tool-call-arguments-at-start");
    assert_eq!(v["thinking"], "Let me search the docs.");
    assert_eq!(
        v["content"],
        "I found three pages: roles.md, bindings.md and audit.md."
    );
}

/// `resumed-after-rejected-approval` with a text span before the re-emitted
/// start, its tool error's code replaced by `code`.
fn resumed_with_text_first(code: &str) -> String {
    let full = std::fs::read_to_string(
        root().join("fixtures/scenarios/resumed-after-rejected-approval.jsonl"),
    )
    .unwrap();
    let mut lines: Vec<serde_json::Value> = full
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut span = Vec::new();
    for (ty, data) in [
        (
            "text.started",
            serde_json::json!({"message_id": "msg-pre", "role": "assistant"}),
        ),
        (
            "text.delta",
            serde_json::json!({"message_id": "msg-pre", "delta": "Resuming. "}),
        ),
        (
            "text.finished",
            serde_json::json!({"message_id": "msg-pre"}),
        ),
    ] {
        let mut e = lines[0].clone();
        e["type"] = ty.into();
        e["data"] = data;
        span.push(e);
    }
    lines.splice(1..1, span);
    let mut out = String::new();
    for (i, mut e) in lines.into_iter().enumerate() {
        e["sequence"] = i.into();
        if e["type"] == "tool.error" {
            e["data"]["code"] = code.into();
        }
        out += &e.to_string();
        out.push('\n');
    }
    out
}

#[test]
fn a_suppressed_rejected_start_is_no_boundary_a_shown_one_is() {
    // Rejected: the re-emitted start is never shown, so no boundary.
    let a = invoke(&["-"], Some(&resumed_with_text_first("tool_rejected")));
    assert_eq!(a.status, 200, "{}", a.stderr);
    let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(
        v["content"],
        "Resuming. Understood: I did not delete /tmp/report-draft.txt. The file is unchanged."
    );
    assert!(v["thinking"].is_null());
    // Any other error: the start is shown (custom writes its tool_start), so
    // the text before it is thinking.
    let a = invoke(&["-"], Some(&resumed_with_text_first("tool_error")));
    assert_eq!(a.status, 200, "{}", a.stderr);
    let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["thinking"], "Resuming. ");
    assert_eq!(
        v["content"],
        "Understood: I did not delete /tmp/report-draft.txt. The file is unchanged."
    );
}

#[test]
fn options_ids_statuses_and_exit_codes() {
    let file = root().join("fixtures/scenarios/plain-text-answer.jsonl");
    let a = invoke(
        &[
            "--agent-id",
            "my-agent",
            "--trace-id",
            "tr-1",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!((a.status, a.exit), (200, 0));
    assert_eq!(
        a.body,
        format!(
            r#"{{"success":true,"content":"{PLAIN_ANSWER}","thinking":null,"agent_id":"my-agent","conversation_id":"conv-plain-0001","trace_id":"tr-1"}}"#
        )
    );
    // stdin: the agent is the run's harness.
    let text = std::fs::read_to_string(&file).unwrap();
    let a = invoke(&[], Some(&text));
    assert_eq!(
        a.body,
        format!(
            r#"{{"success":true,"content":"{PLAIN_ANSWER}","thinking":null,"agent_id":"deepagents","conversation_id":"conv-plain-0001","trace_id":null}}"#
        )
    );
    // 400 and 503 exit 1; 503 says its Retry-After (the run's 30 > 5).
    let f = root().join("fixtures/scenarios/form-input-interrupt.jsonl");
    let a = invoke(&[f.to_str().unwrap()], None);
    assert_eq!((a.status, a.exit), (400, 1));
    let f = root().join("fixtures/scenarios/run-error-capacity-retryable.jsonl");
    let a = invoke(&[f.to_str().unwrap()], None);
    assert_eq!(
        (a.status, a.exit, a.retry_after.as_deref()),
        (503, 1, Some("30"))
    );
    // A run cut short: the coordinator's run.error is a generic 500, and it
    // says why on stderr.
    let cut: Vec<&str> = text.lines().take(3).collect();
    let a = invoke(&[], Some(&(cut.join("\n") + "\n")));
    assert_eq!((a.status, a.exit), (500, 1));
    assert_eq!(
        a.stderr,
        "<stdin>: seq 2: rule 12 (missing_terminal): input ended without a run terminal\nstatus 500\n"
    );
    assert_eq!(
        a.body,
        format!(
            r#"{{"success":false,"error":"{}","agent_id":"deepagents","conversation_id":"conv-plain-0001","trace_id":null}}"#,
            lce::custom::invoke::FAILURE_MESSAGE
        )
    );
    // Usage errors exit 2.
    let out = Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(["invoke", "--nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn capacity_codes_are_the_sanitizers() {
    use lce::custom::invoke::{CAPACITY_CODES, is_capacity_code};
    use lce::sanitize::AdapterErrorKind;
    assert_eq!(
        CAPACITY_CODES,
        [
            AdapterErrorKind::Capacity.code(),
            AdapterErrorKind::Throttled.code()
        ]
    );
    for kind in AdapterErrorKind::ALL {
        assert_eq!(
            is_capacity_code(kind.code()),
            matches!(
                kind,
                AdapterErrorKind::Capacity | AdapterErrorKind::Throttled
            ),
            "{kind}"
        );
    }
}

// ---- through `lce serve` ----

fn conversation_id(scenario: &Path) -> String {
    let text = std::fs::read_to_string(scenario).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["conversation_id"].as_str().unwrap().to_owned()
}

#[test]
fn serve_answers_every_scenario_with_its_golden() {
    let server = Server::with_bundled_scenarios();
    for scenario in scenarios() {
        let name = stem(&scenario);
        let req = serde_json::json!({
            "message": "hello", "conversation_id": conversation_id(&scenario), "agent_id": name,
        })
        .to_string();
        let resp = post(&server.addr, "/api/v1/chat/invoke", &req);
        let (status, retry, body) = golden(&name);
        assert_eq!(resp.status, status, "{name}");
        assert_eq!(
            resp.header("content-type"),
            Some("application/json"),
            "{name}"
        );
        assert_eq!(resp.header("retry-after"), retry.as_deref(), "{name}");
        assert_eq!(
            resp.header("content-length"),
            Some(body.len().to_string().as_str()),
            "{name}"
        );
        assert!(
            resp.body == body.as_bytes(),
            "{name}: served body differs from the golden\n got: {}\nwant: {body}",
            String::from_utf8_lossy(&resp.body)
        );
    }
    // The request's conversation id is the answer's.
    let resp = post(
        &server.addr,
        "/api/v1/chat/invoke",
        r#"{"message":"m","conversation_id":"conv-other","agent_id":"plain-text-answer"}"#,
    );
    assert_eq!(resp.status, 200);
    assert_eq!(
        String::from_utf8(resp.body).unwrap(),
        format!(
            r#"{{"success":true,"content":"{PLAIN_ANSWER}","thinking":null,"agent_id":"plain-text-answer","conversation_id":"conv-other","trace_id":null}}"#
        )
    );
}

#[test]
fn serve_refuses_bad_invoke_requests_with_a_json_4xx() {
    let server = Server::with_bundled_scenarios();
    let invalid = "The request body is not a valid request.";
    for (body, status, code, error) in [
        ("{not json", 400, "malformed_json", invalid),
        (
            r#"{"message":"m","agent_id":"plain-text-answer"}"#,
            422,
            "invalid_request",
            invalid,
        ),
        (
            r#"{"message":"m","conversation_id":"c","agent_id":"no-such-agent"}"#,
            404,
            "unknown_agent",
            "No agent with this id.",
        ),
    ] {
        let resp = post(&server.addr, "/api/v1/chat/invoke", body);
        assert_eq!(resp.status, status, "{body}");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error": error, "code": code}),
            "{body}"
        );
    }
}
