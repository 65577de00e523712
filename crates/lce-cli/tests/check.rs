//! `lce check` over the fixtures: valid scenarios pass, each invalid run
//! reports its rule as `FILE:LINE: seq S: rule R (name): message`, and the
//! JSON report lists the violation with its rule id.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::lce;

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

/// Runs `lce ARGS` with `stdin` as its standard input.
fn lce_stdin(args: &[&str], stdin: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A command that refuses its arguments exits without reading stdin:
    // then the write finds the pipe closed, which is no error of the test's.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A scratch folder for one test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("lce-check-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Writes `text` to `name` in the folder; its path.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A valid run of 8 events.
fn good_run() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/scenarios/plain-text-answer.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.lines().count(), 8);
    text
}

/// The first line of a valid run, then `bad` as line 2.
fn broken_at_line_2(bad: &str) -> String {
    format!("{}\n{bad}\n", good_run().lines().next().unwrap())
}

/// A line 2 that is not JSON: no `:` at byte 20.
const NOT_JSON: &str = r#"{"version":1,"type" "x"}"#;

/// A scratch folder for `test` with [`good_run`] as `good.jsonl` and a run
/// whose line 2 is [`NOT_JSON`] as `bad.jsonl`; the folder and both paths.
fn good_and_bad(test: &str) -> (Scratch, String, String) {
    let dir = Scratch::new(test);
    let good = dir.file("good.jsonl", &good_run());
    let bad = dir.file("bad.jsonl", &broken_at_line_2(NOT_JSON));
    (dir, good, bad)
}

/// The JSON values of `out`, one a line.
fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The run of [`good_run`] without its terminal: a rule violation.
fn without_terminal() -> String {
    let run = good_run();
    let lines: Vec<&str> = run.lines().collect();
    lines[..lines.len() - 1].join("\n") + "\n"
}

#[test]
fn several_files_each_problem_prefixed_with_its_file() {
    let (dir, good, bad) = good_and_bad("several");
    let cut = dir.file("cut.jsonl", &without_terminal());
    let (code, out, err) = lce(&["check", &good, &bad, &cut]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "");
    let firsts: Vec<&str> = err.lines().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(firsts.len(), 2, "{err}");
    assert!(firsts[0].starts_with(&format!("{bad}:2:")), "{err}");
    // The missing terminal is reported after the last line (7).
    assert!(firsts[1].starts_with(&format!("{cut}:7: seq ")), "{err}");
    assert!(!err.contains(&good), "{err}");
    // Every file accepted: 0.
    assert_eq!(lce(&["check", &good, &good]).0, 0);
}

#[test]
fn an_unreadable_file_is_reported_and_the_others_still_checked() {
    let (dir, _, bad) = good_and_bad("unreadable");
    let missing = dir.0.join("missing.jsonl");
    let missing = missing.to_str().unwrap();
    let (code, _, err) = lce(&["check", missing, &bad]);
    assert_eq!(code, 2, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with(&format!("lce: cannot open {missing}: ")),
        "{err}"
    );
    assert!(lines[1].starts_with(&format!("{bad}:2:21: ")), "{err}");
    // The JSON report has an object for it too.
    let (code, out, _) = lce(&["check", "--json", missing, &bad]);
    assert_eq!(code, 2);
    let reports = json_lines(&out);
    assert_eq!(reports.len(), 2, "{out}");
    assert_eq!(reports[0]["file"], missing);
    assert_eq!(reports[0]["ok"], false);
    assert!(
        reports[0]["io_error"]
            .as_str()
            .unwrap()
            .contains("cannot open")
    );
    assert_eq!(reports[1]["file"], bad.as_str());
}

#[test]
fn a_dash_reads_stdin_among_files() {
    let dir = Scratch::new("stdin");
    let good = dir.file("good.jsonl", &good_run());
    let (code, _, err) = lce_stdin(&["check", &good, "-"], &without_terminal());
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("<stdin>:7: seq "), "{err}");
    let (code, _, err) = lce_stdin(&["check", "-", &good], &good_run());
    assert_eq!(code, 0, "{err}");
    // Stdin can be read only once.
    let (code, _, err) = lce_stdin(&["check", "-", "-"], &good_run());
    assert_eq!(code, 2, "{err}");
}

#[test]
fn summary_counts_files_runs_events_and_problems() {
    let (dir, good, bad) = good_and_bad("summary");
    let (code, out, _) = lce(&["check", "--summary", &good, &bad]);
    assert_eq!(code, 1);
    assert_eq!(out, "summary: 2 files, 2 runs, 9 events, 1 problem\n");
    let (code, out, _) = lce(&["check", "--summary", &good]);
    assert_eq!(code, 0);
    assert_eq!(out, "summary: 1 file, 1 run, 8 events, 0 problems\n");
    let missing = dir.0.join("missing.jsonl");
    let (code, out, _) = lce(&["check", "--summary", &good, missing.to_str().unwrap(), &bad]);
    assert_eq!(code, 2);
    assert_eq!(
        out,
        "summary: 3 files (1 unreadable), 2 runs, 9 events, 1 problem\n"
    );
    // With --json: one report per file, then the summary object.
    let (_, out, _) = lce(&["check", "--json", "--summary", &good, &bad]);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[2],
        serde_json::json!({"summary": {"files": 2, "unreadable": 0, "runs": 2,
            "events": 9, "problems": 1, "ok": false}})
    );
}

#[test]
fn json_is_one_report_per_file_and_unchanged_for_one() {
    let (_dir, good, bad) = good_and_bad("json");
    let (_, out, _) = lce(&["check", "--json", &bad]);
    assert_eq!(out.lines().count(), 1);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let keys: Vec<&String> = report.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["errors", "events", "file", "lines", "ok", "violations"]
    );
    // The JSON message keeps the library's payload-free words.
    assert_eq!(
        report["errors"][0]["message"],
        "syntax at $ (byte 20): expected `:`"
    );
    let (code, out, _) = lce(&["check", "--json", &good, &bad]);
    assert_eq!(code, 1);
    let reports = json_lines(&out);
    assert_eq!(reports.len(), 2);
    assert_eq!(
        (&reports[0]["file"], &reports[0]["ok"]),
        (&serde_json::json!(good), &serde_json::json!(true))
    );
    assert_eq!(reports[1], report);
}

/// `lce check` on a file whose line 2 is `bad`: its stderr.
fn check_line_2(test: &str, bad: &str) -> (String, String) {
    let dir = Scratch::new(test);
    let path = dir.file("run.jsonl", &broken_at_line_2(bad));
    let (code, _, err) = lce(&["check", &path]);
    assert_eq!(code, 1, "{err}");
    (path, err)
}

#[test]
fn a_syntax_error_shows_line_column_excerpt_and_caret() {
    let (path, err) = check_line_2("syntax", NOT_JSON);
    assert_eq!(
        err,
        format!(
            "{path}:2:21: syntax error: expected `:`\n\
             \x20 {{\"version\":1,\"type\" \"x\"}}\n\
             \x20 {}^\n",
            " ".repeat(20)
        )
    );
    // A line cut short: the caret is just after its end.
    let (path, err) = check_line_2("syntax-end", r#"{"version":1,"type":"#);
    assert_eq!(
        err,
        format!(
            "{path}:2:21: syntax error: unexpected end of input\n\
             \x20 {{\"version\":1,\"type\":\n\
             \x20 {}^\n",
            " ".repeat(20)
        )
    );
}

#[test]
fn control_characters_in_the_excerpt_are_escaped() {
    // A tab outside strings is whitespace: the error is at the `"` after it.
    let (path, err) = check_line_2("tab", "{\"version\":1\t\"type\":\"x\"}");
    assert_eq!(
        err,
        format!(
            "{path}:2:14: syntax error: expected `,` or `}}`\n\
             \x20 {{\"version\":1\\t\"type\":\"x\"}}\n\
             \x20 {}^\n",
            " ".repeat(14)
        )
    );
    // A raw escape character inside a string is the error itself.
    let (path, err) = check_line_2("esc", "{\"version\":1,\"type\":\"a\u{1b}[31m\"}");
    assert_eq!(
        err,
        format!(
            "{path}:2:23: syntax error: control character (\\u0000-\\u001F) found while parsing a string\n\
             \x20 {{\"version\":1,\"type\":\"a\\u{{1b}}[31m\"}}\n\
             \x20 {}^\n",
            " ".repeat(22)
        )
    );
}

#[test]
fn columns_count_characters_not_bytes() {
    // 日本語 are three bytes and two terminal columns each, é two bytes:
    // column 37 is byte 44, and the caret stands under the `"`.
    let (path, err) = check_line_2("utf8", r#"{"version":1,"type":"日本語é","run_id" "r"}"#);
    assert_eq!(
        err,
        format!(
            "{path}:2:37: syntax error: expected `:`\n\
             \x20 {{\"version\":1,\"type\":\"日本語é\",\"run_id\" \"r\"}}\n\
             \x20 {}^\n",
            " ".repeat(39)
        )
    );
}

#[test]
fn a_long_line_shows_80_characters_around_the_column() {
    let a = "a".repeat(2000);
    let b = "é".repeat(2000);
    let (path, err) = check_line_2(
        "long",
        &format!(r#"{{"version":1,"type":"{a}","run_id" "{b}"}}"#),
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert_eq!(
        lines[0],
        format!("{path}:2:2033: syntax error: expected `:`")
    );
    let excerpt = lines[1].strip_prefix("  ").unwrap();
    assert_eq!(excerpt.chars().count(), 80);
    assert_eq!(
        excerpt,
        format!("...{}\",\"run_id\" \"{}...", "a".repeat(26), "é".repeat(36))
    );
    assert_eq!(lines[2], format!("  {}^", " ".repeat(40)));
}

#[test]
fn a_decision_is_reported_as_the_contract_rule_it_refines() {
    // D4 refines rule 8: the text and the JSON name rule 8, the decision is
    // the detail (issue 16 item 3).
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/invalid/d4-tool-started-after-interrupt-requested.jsonl");
    let file = file.to_str().unwrap();
    let (code, _, stderr) = lce(&["check", file]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(": rule 8 (interrupt_close_events, D4): "),
        "{stderr}"
    );
    let (code, stdout, _) = lce(&["check", "--json", file]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let v = &report["violations"][0];
    assert_eq!(v["rule"], "8");
    assert_eq!(v["decision"], "D4");
    assert_eq!(v["rule_name"], "interrupt_close_events");
}
