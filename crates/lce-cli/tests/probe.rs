//! `lce probe URL` against real processes: `examples/harness-python` passes
//! it; scripted harnesses, each broken in one way, fail it with the finding
//! that names that way; an unreachable URL exits 2.
//!
//! The broken harnesses are written here, over `std::net`: one server whose
//! [`Fault`] chooses what it gets wrong, otherwise a correct upstream
//! (`docs/upstream.md`): a start says one short text, a message with
//! "slow" streams deltas until cancelled, a cancel of a running run answers
//! `200`, of any other `404` with a JSON error.
//!
//! Needs `python3` for the first test: without it the test says SKIPPED and
//! passes, except in CI (`CI` set), where it fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::PythonHarness;
use serde_json::json;

/// `lce probe ARGS`: (exit code, stdout, stderr).
fn probe(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lce"))
        .arg("probe")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The checks of `--json`'s findings.
fn checks(json: &str) -> Vec<String> {
    let report: serde_json::Value = serde_json::from_str(json).unwrap();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap().to_owned())
        .collect()
}
/// The Python harness, paced, in `framing`, with `extra` options.
fn python_harness(framing: &str, extra: &[&str]) -> Option<PythonHarness> {
    let mut args = vec!["--pace", "0.05", "--framing", framing];
    args.extend(extra);
    PythonHarness::start(&args)
}

#[test]
fn the_python_harness_passes_in_sse_too() {
    let Some(harness) = python_harness("sse", &[]) else {
        return;
    };
    let (code, out, err) = probe(&[&harness.url, "--json"]);
    assert_eq!(checks(&out), Vec::<String>::new(), "{out}\n{err}");
    assert_eq!(code, 0, "{out}\n{err}");
}

#[test]
fn the_python_harness_passes() {
    let Some(harness) = python_harness("ndjson", &[]) else {
        return;
    };
    let (code, out, err) = probe(&[
        &harness.url,
        "--message",
        "hi",
        "--message",
        "please tidy up",
        "--json",
    ]);
    assert_eq!(checks(&out), Vec::<String>::new(), "{out}\n{err}");
    assert_eq!(code, 0, "{out}\n{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["passed"], true);
    // Two starts, each resumed once (the approval), the cancel, the
    // disconnect and the run after it.
    assert!(report["runs"].as_u64().unwrap() >= 7, "{out}");
    assert!(err.contains("passed"), "{err}");
}

#[test]
fn a_harness_that_checks_authorization_gets_the_bearer_file() {
    const SECRET: &str = "probe-bearer-0123456789";
    let Some(harness) = python_harness("ndjson", &["--require-auth", SECRET]) else {
        return;
    };
    let (code, out, err) = probe(&[&harness.url, "--json"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(checks(&out).iter().any(|c| c == "status"), "{out}");
    let file = std::env::temp_dir().join(format!("lce-probe-bearer-{}", std::process::id()));
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let (code, out, err) = probe(&[&harness.url, "--bearer-file", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains(SECRET) && !err.contains(SECRET));
}

#[test]
fn an_unreachable_harness_exits_2() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, out, err) = probe(&[&format!("http://127.0.0.1:{port}"), "--timeout", "5"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("could not be reached"), "{err}");
    let (code, _, err) = probe(&["https://127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = probe(&["http://127.0.0.1:1", "--timeout", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--timeout"), "{err}");
}

// ------------------------------------------------------------ broken harnesses

/// What a scripted harness gets wrong.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    /// Nothing.
    None,
    /// A start's body ends without a terminal.
    MissingTerminal,
    /// A start's sequences go 0, 1, 3.
    SequenceGap,
    /// A cancel is answered 200 and the run goes on to `run.finished`.
    IgnoredCancel,
    /// A start ends with `run.error` whose message holds a Python traceback
    /// and an `Authorization: Bearer` value.
    LeakyError,
    /// A start answers an HTML page.
    Html,
    /// A start asks for an approval; the resume is refused (404).
    Unresumable,
    /// Every answer is SSE (`text/event-stream`), correctly framed.
    Sse,
    /// A start's NDJSON has a blank line between two events.
    BlankLine,
    /// A start sends a line over the 4 MiB bound.
    HugeLine,
}

/// The bearer token `Fault::LeakyError` leaks.
const LEAKED_TOKEN: &str = "zq8Xw3LeakedToken0123456789";

struct Scripted {
    url: String,
    listener_addr: std::net::SocketAddr,
    stop: Arc<Mutex<bool>>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        *self.stop.lock().unwrap() = true;
        // Wakes the accept loop.
        let _ = TcpStream::connect(self.listener_addr);
    }
}

fn scripted(fault: Fault) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(Mutex::new(false));
    let running: Arc<Mutex<HashSet<String>>> = Arc::default();
    let stop2 = stop.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            if *stop2.lock().unwrap() {
                break;
            }
            let Ok(conn) = conn else { continue };
            let running = running.clone();
            thread::spawn(move || serve(conn, fault, &running));
        }
    });
    Scripted {
        url: format!("http://{addr}"),
        listener_addr: addr,
        stop,
    }
}

/// Reads one request: (path, JSON body).
fn read_request(conn: &mut TcpStream) -> Option<(String, serde_json::Value)> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        if header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((path, serde_json::from_slice(&body).unwrap_or_default()))
}

fn json_answer(conn: &mut TcpStream, status: &str, body: &str) {
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn event(req: &serde_json::Value, seq: u64, ty: &str, data: serde_json::Value) -> String {
    let mut line = serde_json::json!({
        "version": 1, "type": ty, "run_id": req["run_id"], "conversation_id": req["conversation_id"],
        "sequence": seq, "timestamp": "2026-12-05T00:00:00.000Z", "namespace": [], "data": data,
    })
    .to_string();
    line.push('\n');
    line
}

fn serve(mut conn: TcpStream, fault: Fault, running: &Mutex<HashSet<String>>) {
    let Some((path, req)) = read_request(&mut conn) else {
        return;
    };
    if let Some(run_id) = path
        .strip_prefix("/runs/")
        .and_then(|p| p.strip_suffix("/cancel"))
    {
        let known = running.lock().unwrap().remove(run_id);
        if !known && fault == Fault::LeakyError {
            // An untyped error page with a trace and the token in it.
            let page = format!(
                "Traceback (most recent call last):\n  File \"h.py\", line 9, in cancel\nKeyError: run\n\nAuthorization: Bearer {LEAKED_TOKEN}\n"
            );
            let _ = write!(
                conn,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
            return;
        }
        if known {
            json_answer(&mut conn, "200 OK", r#"{"cancelled": true}"#);
        } else {
            json_answer(&mut conn, "404 Not Found", r#"{"cancelled": false}"#);
        }
        return;
    }
    if fault == Fault::Html {
        let page = "<html><body>It works!</body></html>";
        let _ = write!(
            conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        return;
    }
    if req.get("resume_data").is_some() && fault == Fault::Unresumable {
        json_answer(
            &mut conn,
            "404 Not Found",
            r#"{"error": "nothing to resume"}"#,
        );
        return;
    }
    let media = if fault == Fault::Sse {
        "text/event-stream"
    } else {
        "application/x-ndjson"
    };
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: {media}\r\nConnection: close\r\n\r\n"
    );
    let run_id = req["run_id"].as_str().unwrap_or("").to_owned();
    running.lock().unwrap().insert(run_id.clone());
    let message = req["message"].as_str().unwrap_or("");
    let mut emit = |line: String| {
        let framed = match fault {
            // A comment (a keep-alive), an event name, two data lines.
            Fault::Sse => {
                // Split between two members: the joining newline is JSON whitespace.
                let line = line.trim_end();
                let at = line.find(',').map_or(0, |i| i + 1);
                let (head, tail) = line.split_at(at);
                format!(": keep-alive\nevent: lce\ndata: {head}\ndata:{tail}\n\n")
            }
            Fault::BlankLine => format!("{line}\n"),
            Fault::HugeLine if line.contains("\"Hello.\"") => {
                format!("{}\n{line}", "x".repeat(4 * 1024 * 1024 + 10))
            }
            _ => line,
        };
        conn.write_all(framed.as_bytes()).is_ok()
    };
    run_lines(&req, fault, message.contains("slow"), &mut emit, || {
        !running.lock().unwrap().contains(&run_id)
    });
    running.lock().unwrap().remove(&run_id);
}

/// Writes a run's lines with `emit` as they come (`false`: the client is gone).
fn run_lines(
    req: &serde_json::Value,
    fault: Fault,
    slow: bool,
    emit: &mut dyn FnMut(String) -> bool,
    cancelled: impl Fn() -> bool,
) {
    let mut out = Vec::new();
    emit(event(
        req,
        0,
        "run.started",
        json!({"harness_id": "scripted", "adapter_version": "1.0.0"}),
    ));
    emit(event(
        req,
        1,
        "text.started",
        json!({"message_id": "m1", "role": "assistant"}),
    ));
    let mut seq = 2;
    if slow {
        // Deltas while the run is not cancelled (with IgnoredCancel, in any case).
        for _ in 0..40 {
            if cancelled() && fault != Fault::IgnoredCancel {
                emit(event(
                    req,
                    seq,
                    "text.finished",
                    json!({"message_id": "m1"}),
                ));
                emit(event(
                    req,
                    seq + 1,
                    "run.cancelled",
                    json!({"reason": "client_request", "side_effect_status": "none"}),
                ));
                return;
            }
            if !emit(event(
                req,
                seq,
                "text.delta",
                json!({"message_id": "m1", "delta": "more "}),
            )) {
                return;
            }
            seq += 1;
            thread::sleep(Duration::from_millis(50));
        }
    }
    if fault == Fault::SequenceGap && !slow {
        seq += 1;
    }
    out.push(event(
        req,
        seq,
        "text.delta",
        json!({"message_id": "m1", "delta": "Hello."}),
    ));
    out.push(event(
        req,
        seq + 1,
        "text.finished",
        json!({"message_id": "m1"}),
    ));
    seq += 2;
    if slow {
        out.push(event(
            req,
            seq,
            "run.finished",
            json!({"outcome": "success", "stop_reason": "end_turn"}),
        ));
    } else {
        end(req, fault, seq, &mut out);
    }
    for line in out {
        emit(line);
    }
}

/// The end of a quick run, as `fault` makes it.
fn end(req: &serde_json::Value, fault: Fault, seq: u64, out: &mut Vec<String>) {
    match fault {
        Fault::MissingTerminal => {}
        Fault::LeakyError => {
            let message = format!(
                "Traceback (most recent call last):\n  File \"agent.py\", line 12, in call\n    raise RuntimeError(\"401\")\nRuntimeError: 401\n\nrequest had Authorization: Bearer {LEAKED_TOKEN}"
            );
            out.push(event(req, seq, "run.error", json!({"code": "provider_error", "message": message, "retryable": false, "side_effect_status": "none"})));
        }
        Fault::Unresumable if req.get("message").is_some() => {
            out.push(event(req, seq, "interrupt.requested", json!({"interrupt_id": "i1", "interrupt_type": "tool_approval", "agent_id": "a", "tool_approvals": [{"tool_call_id": "c1", "tool_name": "t", "tool_args": {}}]})));
            out.push(event(
                req,
                seq + 1,
                "run.interrupted",
                json!({"interrupt_id": "i1", "reason": "tool_approval"}),
            ));
        }
        _ => out.push(event(
            req,
            seq,
            "run.finished",
            json!({"outcome": "success", "stop_reason": "end_turn"}),
        )),
    }
}

/// Probes a harness with `fault`: (exit code, checks, stdout and stderr).
fn probe_fault(fault: Fault) -> (i32, Vec<String>, String) {
    let harness = scripted(fault);
    let (code, out, err) = probe(&[
        &harness.url,
        "--json",
        "--cancel-bound",
        "1",
        "--timeout",
        "20",
    ]);
    let (_, text, _) = probe(&[&harness.url, "--cancel-bound", "1", "--timeout", "20"]);
    (code, checks(&out), format!("{out}\n{text}\n{err}"))
}

#[test]
fn a_correct_scripted_harness_passes() {
    let (code, checks, all) = probe_fault(Fault::None);
    assert_eq!(checks, Vec::<String>::new(), "{all}");
    assert_eq!(code, 0, "{all}");
}

#[test]
fn sse_framing_is_read_as_the_spec_says() {
    let (code, checks, all) = probe_fault(Fault::Sse);
    assert_eq!(checks, Vec::<String>::new(), "{all}");
    assert_eq!(code, 0, "{all}");
}

#[test]
fn a_blank_line_in_ndjson_is_a_framing_finding() {
    let (code, checks, all) = probe_fault(Fault::BlankLine);
    assert_eq!(code, 1, "{all}");
    assert!(checks.iter().any(|c| c == "ndjson_framing"), "{all}");
    assert!(all.contains("a blank line"), "{all}");
}

#[test]
fn a_line_over_4_mib_is_a_line_bound_finding() {
    let (code, checks, all) = probe_fault(Fault::HugeLine);
    assert_eq!(code, 1, "{all}");
    assert!(checks.iter().any(|c| c == "line_bound"), "{all}");
    assert!(!all.contains("xxxxxxxx"), "the line is not shown");
}

#[test]
fn a_missing_terminal_is_rule_12() {
    let (code, checks, all) = probe_fault(Fault::MissingTerminal);
    assert_eq!(code, 1, "{all}");
    assert!(
        checks.iter().any(|c| c == "rule 12 (missing_terminal)"),
        "{all}"
    );
    assert!(
        all.contains("rule 12 (missing_terminal): start 1: run "),
        "{all}"
    );
}

#[test]
fn a_sequence_gap_is_rule_1_d3() {
    let (code, checks, all) = probe_fault(Fault::SequenceGap);
    assert_eq!(code, 1, "{all}");
    assert!(
        checks
            .iter()
            .any(|c| c.starts_with("rule 1 (") && c.contains("D3")),
        "{all}"
    );
    // The gap is at the third event.
    assert!(all.contains(": seq 3: "), "{all}");
}

#[test]
fn an_ignored_cancel_is_found() {
    let (code, checks, all) = probe_fault(Fault::IgnoredCancel);
    assert_eq!(code, 1, "{all}");
    assert!(checks.iter().any(|c| c == "cancel_ignored"), "{all}");
}

#[test]
fn a_leaked_traceback_and_token_are_found_and_not_shown() {
    let (code, checks, all) = probe_fault(Fault::LeakyError);
    assert_eq!(code, 1, "{all}");
    assert!(checks.iter().any(|c| c == "error_leak"), "{all}");
    // The cancel of an unknown run answered a text/plain 500 with both.
    assert!(checks.iter().any(|c| c == "error_untyped"), "{all}");
    assert!(
        all.contains("the 500 answer's body holds a stack trace"),
        "{all}"
    );
    assert!(all.contains("a stack trace"), "{all}");
    assert!(all.contains("bearer token"), "{all}");
    assert!(!all.contains(LEAKED_TOKEN), "the token was printed: {all}");
    assert!(!all.contains("Traceback"), "the trace was printed: {all}");
}

#[test]
fn html_instead_of_events_is_a_content_type_finding() {
    let (code, checks, all) = probe_fault(Fault::Html);
    assert_eq!(code, 1, "{all}");
    assert!(checks.iter().any(|c| c == "content_type"), "{all}");
    assert!(all.contains("text/html"), "{all}");
}

#[test]
fn an_unresumable_interrupt_is_found() {
    let (code, checks, all) = probe_fault(Fault::Unresumable);
    assert_eq!(code, 1, "{all}");
    assert!(checks.iter().any(|c| c == "resume_failed"), "{all}");
    assert!(all.contains("resume 1 of start 1"), "{all}");
}
