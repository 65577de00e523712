//! `lce check` over the fixtures: valid scenarios pass, each invalid run
//! reports its rule as `FILE:LINE: seq S: rule R (name): message`, and the
//! JSON report lists the violation with its rule id.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures(dir: &str, ext: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn lce(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn scenarios_pass() {
    for f in fixtures("scenarios", "jsonl") {
        let (code, _, err) = lce(&["check", f.to_str().unwrap()]);
        assert_eq!(code, 0, "{}: {err}", f.display());
    }
}

#[test]
fn invalid_runs_report_their_rule() {
    for f in fixtures("invalid", "jsonl") {
        let exp: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f.with_extension("expect")).unwrap())
                .unwrap();
        let rule = exp["rule"].as_str().unwrap();
        let seq = exp["sequence"].as_u64().unwrap();
        let path = f.to_str().unwrap();
        let (code, _, err) = lce(&["check", path]);
        assert_eq!(code, 1, "{path}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "{path}: stops at the first violation: {err}"
        );
        let want = format!(": seq {seq}: rule {rule} (");
        assert!(
            lines[0].starts_with(&format!("{path}:")) && lines[0].contains(&want),
            "{path}: {err}"
        );

        let (code, out, _) = lce(&["check", "--json", path]);
        assert_eq!(code, 1);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["ok"], false);
        assert_eq!(report["violations"][0]["rule"], rule, "{path}");
        assert_eq!(report["violations"][0]["sequence"], seq, "{path}");
        assert!(report["violations"][0]["line"].as_u64().unwrap() >= 1 || rule == "12");

        let (code, _, err) = lce(&["check", "--all", path]);
        assert_eq!(code, 1);
        assert!(err.lines().next().unwrap().contains(&want), "{path}: {err}");
    }
}

#[test]
fn modes_from_the_command_line() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/invalid");
    let bare = dir.join("r13-run-finished-without-thread-state.jsonl");
    let bare = bare.to_str().unwrap();
    assert_eq!(lce(&["check", "--adapter", bare]).0, 0);
    assert_eq!(lce(&["check", "--ephemeral", bare]).0, 0);
    assert_eq!(lce(&["check", bare]).0, 1);
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/scenarios/plain-text-answer.jsonl");
    // An ephemeral harness commits nothing: thread_state is a rule 13 violation.
    let (code, _, err) = lce(&["check", "--ephemeral", scenario.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("rule 13 (thread_durability)"), "{err}");
    assert_eq!(lce(&["check", "--schemas", "/nonexistent-dir", bare]).0, 2);
}

#[test]
fn malformed_lines_stay_parse_errors() {
    for f in fixtures("malformed", "jsonl") {
        let (code, out, _) = lce(&["check", "--json", f.to_str().unwrap()]);
        assert_eq!(code, 1);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            report["errors"].as_array().unwrap().len(),
            1,
            "{}",
            f.display()
        );
        assert_eq!(
            report["violations"].as_array().unwrap().len(),
            0,
            "{}",
            f.display()
        );
    }
}

/// A run that restarts a text span 1100 spans after it finished.
fn restart_long_after() -> String {
    let line = |seq: u64, ty: &str, data: &str| {
        format!(
            "{{\"version\":1,\"type\":\"{ty}\",\"run_id\":\"run-w\",\"conversation_id\":\"conv-w\",\"sequence\":{seq},\"timestamp\":\"2026-08-17T09:00:00.000Z\",\"namespace\":[],\"data\":{data}}}\n"
        )
    };
    let mut s = line(
        0,
        "run.started",
        r#"{"harness_id":"deepagents","adapter_version":"1.0.0"}"#,
    );
    let mut seq = 1;
    for i in 0..1100 {
        let data = format!(r#"{{"message_id":"m{i}","role":"assistant"}}"#);
        s += &line(seq, "text.started", &data);
        s += &line(
            seq + 1,
            "text.finished",
            &format!(r#"{{"message_id":"m{i}"}}"#),
        );
        seq += 2;
    }
    s += &line(
        seq,
        "text.started",
        r#"{"message_id":"m0","role":"assistant"}"#,
    );
    s += &line(seq + 1, "text.finished", r#"{"message_id":"m0"}"#);
    s += &line(
        seq + 2,
        "run.finished",
        r#"{"outcome":"success","stop_reason":"end_turn","thread_state":{"durability":"committed","durable_revision":1,"head_ref":"h"}}"#,
    );
    s
}

#[test]
fn check_remembers_every_closed_id_unless_windowed() {
    let dir = std::env::temp_dir().join(format!("lce-check-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("restart.jsonl");
    std::fs::write(&path, restart_long_after()).unwrap();
    let path = path.to_str().unwrap();
    // Exact by default: the restart of m0 is a second start.
    let (code, _, err) = lce(&["check", path]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("seq 2201: rule 5 (text_span)"), "{err}");
    // With a window of 16 closed ids, m0 was forgotten: accepted.
    let (code, _, err) = lce(&["check", "--window", "16", path]);
    assert_eq!(code, 0, "{err}");
    // A window that is not a count is a usage error.
    assert_eq!(lce(&["check", "--window", "many", path]).0, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}
