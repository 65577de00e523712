//! Stack traces in `run.error`, `tool.error` and `warning` messages are
//! removed whole (D20, issue 16 item 4): header, frames and final exception
//! line, with no marker. The text before a trace stays (without a dangling
//! `: `); when nothing is left the message is the `internal` error's safe
//! message. Every case goes through the sanitizer in all three event types
//! and asserts the exact message and the redaction count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lce_sanitize::{AdapterErrorKind, Sanitizer, redact, redact_counted};
use lce_types::*;
use proptest::prelude::*;

const INTERNAL: &str = "An internal error occurred.";

const PYTHON: &str = concat!(
    "Traceback (most recent call last):\n",
    "  File \"/srv/app/agent.py\", line 42, in run\n",
    "    result = client.call(payload)\n",
    "  File \"/srv/app/client.py\", line 7, in call\n",
    "    raise ValueError(\"boom\")\n",
    "ValueError: boom",
);

const JAVA: &str = concat!(
    "Exception in thread \"main\" java.lang.IllegalStateException: pool closed\n",
    "\tat com.acme.pool.Pool.take(Pool.java:118)\n",
    "\tat com.acme.Main.main(Main.java:7)\n",
    "Caused by: java.io.IOException: disk full\n",
    "\tat com.acme.io.Disk.write(Disk.java:88)\n",
    "\t... 3 more",
);

const NODE: &str = concat!(
    "TypeError: Cannot read properties of undefined (reading 'id')\n",
    "    at handler (/srv/app/index.js:10:15)\n",
    "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
);

const GO: &str = concat!(
    "panic: runtime error: index out of range [5] with length 3\n",
    "\n",
    "goroutine 1 [running]:\n",
    "main.main()\n",
    "\t/src/main.go:5 +0x1d\n",
    "exit status 2",
);

const RUST: &str = concat!(
    "thread 'main' panicked at src/main.rs:2:5:\n",
    "called `Option::unwrap()` on a `None` value\n",
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
);

const RUST_BACKTRACE: &str = concat!(
    "thread 'tokio-runtime-worker' panicked at src/vault/keys.rs:55:9:\n",
    "boom\n",
    "stack backtrace:\n",
    "   0: std::panicking::begin_panic\n",
    "             at /rustc/90b35a62/library/std/src/panicking.rs:652:5\n",
    "   1: vault::keys::load\n",
    "             at ./src/vault/keys.rs:55:9\n",
    "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.",
);

/// The sanitized message and redaction count, for `message` in each of
/// `warning`, `tool.error` and `run.error`; all three must agree.
fn sanitized(message: &str) -> (String, u32) {
    let s = Sanitizer::new(Limits::default());
    let payloads = [
        Payload::Warning(Warning {
            code: "w".into(),
            message: message.into(),
            details: None,
        }),
        Payload::ToolError(ToolError {
            tool_call_id: "tc-1".into(),
            code: "tool_error".into(),
            message: message.into(),
            retryable: false,
        }),
        Payload::RunError(RunError {
            code: "internal_error".into(),
            message: message.into(),
            retryable: false,
            retry_after_seconds: None,
            side_effect_status: SideEffectStatus::Possible,
        }),
    ];
    let mut got: Vec<(String, u32)> = Vec::new();
    for payload in payloads {
        let event = Event {
            run_id: "r".into(),
            conversation_id: "c".into(),
            sequence: 1,
            timestamp: Timestamp::parse("2026-08-17T00:00:00Z").unwrap(),
            namespace: vec![],
            payload,
        };
        let out = s.sanitize(event).unwrap();
        let m = match &out.event.payload {
            Payload::Warning(w) => w.message.clone(),
            Payload::ToolError(t) => t.message.clone(),
            Payload::RunError(r) => r.message.clone(),
            p => panic!("unexpected payload {p:?}"),
        };
        if out.report.redactions > 0 {
            assert_eq!(out.report.fields, ["data.message"]);
        } else {
            assert!(out.report.is_clean(), "{:?}", out.report);
        }
        // A second pass changes and reports nothing.
        let again = s.sanitize(out.event.clone()).unwrap();
        assert_eq!(again.event, out.event);
        assert!(again.report.is_clean(), "{:?}", again.report);
        got.push((m, out.report.redactions));
    }
    assert!(got.windows(2).all(|w| w[0] == w[1]), "{got:?}");
    got.swap_remove(0)
}

fn removed(message: &str, want: &str, count: u32) {
    assert_eq!(
        sanitized(message),
        (want.to_owned(), count),
        "for {message:?}"
    );
}

/// Alone, after `upstream: ` on the same line, after a line of its own
/// (with a trailing newline after the trace too).
fn each_placement(trace: &str) {
    removed(trace, INTERNAL, 1);
    removed(&format!("{trace}\n"), INTERNAL, 1);
    removed(&format!("upstream: {trace}"), "upstream", 1);
    removed(
        &format!("tool call failed:\n{trace}\n"),
        "tool call failed",
        1,
    );
    removed(
        &format!("tool call failed\r\n{}", trace.replace('\n', "\r\n")),
        "tool call failed",
        1,
    );
}

#[test]
fn internal_message_is_the_adapter_error_one() {
    assert_eq!(AdapterErrorKind::Internal.message(), INTERNAL);
}

#[test]
fn python_trace_is_removed_whole() {
    each_placement(PYTHON);
}

#[test]
fn java_trace_is_removed_whole() {
    each_placement(JAVA);
    // Without the `Exception in thread` header: the exception line goes.
    let bare = JAVA.replacen("Exception in thread \"main\" ", "", 1);
    each_placement(&bare);
}

#[test]
fn node_trace_is_removed_whole() {
    each_placement(NODE);
    removed(
        "Uncaught Error [ERR_STREAM_DESTROYED]: write after end\n    at Socket.write (node:net:812:11)\n    at /srv/app/x.js:3:9\n\nNode.js v18.17.0",
        INTERNAL,
        1,
    );
    // A custom error whose name says nothing: the line above the frames goes.
    removed(
        "upstream failed\nQuotaExceeded: daily limit\n    at check (/srv/app/quota.js:4:11)",
        "upstream failed",
        1,
    );
}

#[test]
fn go_trace_is_removed_whole() {
    each_placement(GO);
    removed(
        "worker crashed\npanic: assignment to entry in nil map\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4553a1]\n\ngoroutine 1 [running]:\nmain.store(...)\n\t/src/store.go:12\nmain.main()\n\t/src/main.go:5 +0x1d\n\ngoroutine 18 [chan receive]:\nmain.worker()\n\t/src/worker.go:9 +0x3a\ncreated by main.main in goroutine 1\n\t/src/main.go:4 +0x25\nexit status 2\n",
        "worker crashed",
        1,
    );
    removed(
        "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nmain.main()\n\t/src/main.go:6 +0x2d",
        INTERNAL,
        1,
    );
}

#[test]
fn rust_panic_is_removed_whole() {
    each_placement(RUST);
    each_placement(RUST_BACKTRACE);
    // The old message form.
    removed(
        "job 7: thread '<unnamed>' panicked at 'index out of bounds', src/lib.rs:9:3\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "job 7",
        1,
    );
}

#[test]
fn chained_python_traces_are_one_trace() {
    let during = "Traceback (most recent call last):\n  File \"/srv/app/db.py\", line 10, in load\n    row = rows[key]\nKeyError: 'id'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"/srv/app/agent.py\", line 5, in run\n    load(key)\nRuntimeError: could not load";
    removed(during, INTERNAL, 1);
    removed(&format!("agent failed: {during}\n"), "agent failed", 1);
    let cause = during.replace(
        "During handling of the above exception, another exception occurred:",
        "The above exception was the direct cause of the following exception:",
    );
    removed(&format!("agent failed:\n\n{cause}"), "agent failed", 1);
    // Python 3.11 exception groups.
    removed(
        "run failed\n  + Exception Group Traceback (most recent call last):\n  |   File \"/srv/app/x.py\", line 3, in <module>\n  | ExceptionGroup: many (2 sub-exceptions)\n  +-+---------------- 1 ----------------\n    | ValueError: 1\n    +------------------------------------",
        "run failed",
        1,
    );
}

#[test]
fn text_after_a_blank_line_stays() {
    removed(
        &format!("before the call\n{PYTHON}\n\nretrying with a smaller model"),
        "before the call\nretrying with a smaller model",
        1,
    );
    removed(
        &format!("{NODE}\n\n\nretrying with a smaller model\n"),
        "retrying with a smaller model\n",
        1,
    );
    // Two traces, each counted, the text between them kept.
    removed(
        &format!("first: {NODE}\n\nthen: {GO}\n\nend"),
        "first\nthen\nend",
        2,
    );
}

#[test]
fn text_right_after_a_trace_goes_with_it() {
    // No blank line: it cannot be told from a multi-line exception message.
    removed(&format!("a\n{PYTHON}\nretrying"), "a", 1);
    removed(&format!("a\n{JAVA}\nretrying"), "a", 1);
}

#[test]
fn prose_that_mentions_traces_survives() {
    for prose in [
        "Could not parse the Traceback section of the job log.",
        "Don't panic: the worker panicked at startup and was restarted.",
        "TypeError: x is not a function",
        "the goroutine leak [fixed]: see the changelog",
        "at least one File \"report.csv\" was missing",
        "See the stack trace in the server log.",
    ] {
        removed(prose, prose, 0);
    }
}

#[test]
fn secrets_beside_a_trace_are_still_redacted() {
    removed(
        &format!("auth failed for Bearer abcdefghijklmnop: {PYTHON}"),
        "auth failed for Bearer [REDACTED]",
        2,
    );
    assert_eq!(
        redact_counted(&format!("password=hunter2\n{RUST}")),
        (std::borrow::Cow::Owned("password=[REDACTED]".to_owned()), 2)
    );
}

// ------------------------------------------------------------ properties

/// Lines that open a trace wherever they are (each must never survive), and
/// what of each line must not come out.
const OPENERS: &[(&str, &str)] = &[
    (
        "Traceback (most recent call last):",
        "most recent call last",
    ),
    ("  File \"/x.py\", line 3, in f", "/x.py"),
    (
        "Exception in thread \"main\" java.lang.X: y",
        "Exception in thread",
    ),
    ("\tat com.x.Y.z(Y.java:1)", "Y.java:1"),
    ("    at fn (/srv/x.js:1:2)", "/srv/x.js"),
    ("\t... 3 more", "3 more"),
    ("goroutine 1 [running]:", "goroutine 1 [running]"),
    ("\t/src/main.go:5 +0x1d", "/src/main.go"),
    (
        "thread 'main' panicked at src/main.rs:2:5:",
        "src/main.rs:2:5",
    ),
    ("stack backtrace:", "stack backtrace"),
    (
        "             at /rustc/abc/library/std/src/panicking.rs:652:5",
        "/rustc/",
    ),
    (
        "note: run with `RUST_BACKTRACE=1` environment variable",
        "RUST_BACKTRACE",
    ),
];

/// Lines that belong to a trace only inside one.
const INSIDE: &[&str] = &[
    "ValueError: boom",
    "    raise ValueError(\"boom\")",
    "Caused by: java.io.IOException: disk",
    "During handling of the above exception, another exception occurred:",
    "TypeError: x",
    "panic: boom",
    "main.main()",
    "exit status 2",
    "   0: std::rt::lang_start",
    "",
    "   ",
];

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => "[ a-zA-Z:.\\-\n\r\t]{0,30}",
        1 => prop::sample::select(vec![
            "upstream: ", "Error", "Traceback", "panicked at", "goroutine 7 [", "]:", "\n\n",
            "thread '", "File \"", "\", line 9", "at ", ":1", "panic: ", "->",
        ]).prop_map(str::to_owned),
    ]
}

/// A piece of a message: free text, an opener line (by index), or a line
/// that belongs inside a trace.
#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Opener(usize),
    Inside(usize),
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        any_text().prop_map(Piece::Text),
        (0..OPENERS.len()).prop_map(Piece::Opener),
        (0..INSIDE.len()).prop_map(Piece::Inside),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_and_redaction_is_idempotent(s in any::<String>()) {
        let once = redact(&s).into_owned();
        prop_assert_eq!(redact(&once), once.as_str());
    }

    #[test]
    fn no_opener_survives_and_nothing_shows_a_trace_was_there(
        pieces in prop::collection::vec(piece(), 0..12),
        crlf in any::<bool>(),
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut lines = Vec::new();
        let mut planted = Vec::new();
        for p in &pieces {
            match p {
                Piece::Text(t) => lines.push(t.clone()),
                Piece::Opener(i) => {
                    lines.push(OPENERS[*i].0.to_owned());
                    planted.push(OPENERS[*i].1);
                }
                Piece::Inside(i) => lines.push(INSIDE[*i].to_owned()),
            }
        }
        let input = lines.join(nl);
        let (out, n) = redact_counted(&input);
        for core in &planted {
            prop_assert!(!out.contains(core), "{:?} survived in {:?} from {:?}", core, out, input);
        }
        prop_assert!(!out.contains("stack trace removed"));
        if !planted.is_empty() {
            prop_assert!(n >= 1);
        }
        prop_assert_eq!(redact(&out), out.as_ref(), "not idempotent for {:?}", input);
    }

    #[test]
    fn a_message_of_only_trace_lines_becomes_the_internal_message(
        first in 0..OPENERS.len(),
        rest in prop::collection::vec(prop_oneof![
            (0..OPENERS.len()).prop_map(|i| OPENERS[i].0),
            (0..INSIDE.len()).prop_map(|i| INSIDE[i]),
        ], 0..10),
    ) {
        // Blank lines only inside (a message does not start with one).
        let mut lines = vec![OPENERS[first].0];
        lines.extend(rest.iter().copied().filter(|l| !l.trim().is_empty()));
        let input = lines.join("\n");
        let (out, n) = sanitized(&input);
        prop_assert_eq!(out, INTERNAL, "for {:?}", input);
        prop_assert!(n >= 1);
    }
}
