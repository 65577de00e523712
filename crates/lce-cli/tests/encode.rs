//! `lce encode` runs the whole pipeline: whatever the input, its output is a
//! well-formed stream ending with the coordinator's terminal, and when the
//! coordinator had to intervene the reason is reported as `lce check`
//! reports it, with exit status 1.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::root;
use std::path::PathBuf;
use std::process::{Command, Output};

fn lce(args: &[&str]) -> Output {
    lce_env(args, &[])
}

/// `lce ARGS...` with the environment variables `env` set.
fn lce_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

/// Inputs the coordinator accepts as they are (D10a: it commits thread
/// state itself) or after cleaning them (the sanitizer truncates an
/// over-long tool result, D19): `lce check` (full mode) still flags them.
const ACCEPTED_BY_THE_COORDINATOR: &[&str] = &[
    "r11-tool-result-70000-chars.jsonl",
    "r13-run-finished-durability-pending.jsonl",
    "r13-run-finished-uncommitted.jsonl",
    "r13-run-finished-without-thread-state.jsonl",
];

#[test]
fn interventions_are_reported_as_lce_check_reports_them() {
    let mut checked = 0;
    for path in files("fixtures/invalid")
        .into_iter()
        .chain(files("fixtures/malformed"))
    {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let file = path.to_str().unwrap();
        let check = lce(&["check", file]);
        assert_eq!(check.status.code(), Some(1), "{name}");
        let check_json: serde_json::Value =
            serde_json::from_slice(&lce(&["check", "--json", file]).stdout).unwrap();
        for format in ["custom", "agui", "agui-v1"] {
            let out = lce(&["encode", "--to", format, file]);
            let stdout = String::from_utf8(out.stdout).unwrap();
            if ACCEPTED_BY_THE_COORDINATOR.contains(&name.as_str()) {
                assert_eq!(out.status.code(), Some(0), "{name} {format}");
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{name} {format}");
            let first_check_line = String::from_utf8(check.stderr.clone()).unwrap();
            let first_check_line = first_check_line.lines().next().unwrap();
            // A malformed line: `lce check` locates it by column and shows
            // an excerpt of it; `lce encode` keeps the payload-free message,
            // the one `lce check --json` reports.
            let first_check_line = match &check_json["errors"][0] {
                serde_json::Value::Null => first_check_line.to_owned(),
                e => format!("{file}:{}: {}", e["line"], e["message"].as_str().unwrap()),
            };
            assert_eq!(
                String::from_utf8(out.stderr).unwrap().trim_end(),
                first_check_line,
                "{name} {format}"
            );
            // Whole frames only; AG-UI 1.0 is never silent at the end (DA's
            // formats close silently on a cancel, by design).
            assert!(
                stdout.is_empty() || stdout.ends_with("\n\n"),
                "{name} {format}"
            );
            if format == "agui-v1" {
                let last = stdout.trim_end().rsplit("\n\n").next().unwrap_or("");
                assert!(
                    last.contains("\"type\":\"RUN_FINISHED\"")
                        || last.contains("\"type\":\"RUN_ERROR\""),
                    "{name}: last frame {last:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn a_run_cut_short_gets_the_coordinators_error_in_every_format() {
    let full = std::fs::read_to_string(
        root().join("fixtures/scenarios/tool-call-arguments-at-start.jsonl"),
    )
    .unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let dir = std::env::temp_dir().join(format!("lce-encode-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, lines[..lines.len() - 2].join("\n") + "\n").unwrap();
    for (format, want) in [
        (
            "custom",
            "event: error\ndata: {\"error\": \"Agent execution failed. Check server logs for details.\"}\n\n",
        ),
        (
            "agui",
            "\"type\": \"RUN_ERROR\", \"message\": \"Agent execution failed. Check server logs for details.\"",
        ),
        ("agui-v1", "\"type\":\"RUN_ERROR\""),
    ] {
        let out = lce(&["encode", "--to", format, cut.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let last = stdout.trim_end_matches('\n').rsplit("\n\n").next().unwrap();
        assert!(
            format!("{last}\n\n").ends_with(want) || last.contains(want),
            "{format}: {last}"
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("rule 12 (missing_terminal)"), "{stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn limits_come_from_a_file_then_the_environment() {
    let dir = std::env::temp_dir().join(format!("lce-encode-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let limits = dir.join("limits.toml");
    std::fs::write(&limits, "events_per_run = 3\n").unwrap();
    let scenario = root().join("fixtures/scenarios/plain-text-answer.jsonl");
    let scenario = scenario.to_str().unwrap();
    let limits = limits.to_str().unwrap();
    let encode = |limits| ["encode", "--to", "custom", "--limits", limits, scenario];

    let out = lce(&encode(limits));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("rule 11 (limits): more than 3 events"),
        "{stderr}"
    );

    // The environment overrides the file.
    let out = lce_env(&encode(limits), &[("LCE_LIMIT_EVENTS_PER_RUN", "1000")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = lce(&encode("/nonexistent.toml"));
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fractional_retry_after_is_a_valid_run_not_the_coordinators_error() {
    // Issue 16 item 3: `retry_after_seconds: 0.25` was "integer out of range",
    // so the run became the coordinator's generic error. It is valid (D19).
    let full = std::fs::read_to_string(
        root().join("fixtures/scenarios/run-error-capacity-retryable.jsonl"),
    )
    .unwrap();
    assert!(full.contains("\"retry_after_seconds\":30,"));
    let dir = std::env::temp_dir().join(format!("lce-encode-retry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = dir.join("fraction.jsonl");
    std::fs::write(
        &run,
        full.replace(
            "\"retry_after_seconds\":30,",
            "\"retry_after_seconds\":0.25,",
        ),
    )
    .unwrap();
    let out = lce(&["encode", "--to", "custom", run.to_str().unwrap()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout,
        "event: error\ndata: {\"error\": \"The model is at capacity. Please try again shortly.\"}\n\n"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let check = lce(&["check", run.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
