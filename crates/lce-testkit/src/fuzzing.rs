//! Fuzz harnesses (feature `fuzzing`): one function per fuzz target, each
//! taking raw bytes and asserting the invariants the target is about.
//!
//! The `fuzz/` crate (outside the workspace, `cargo fuzz`) calls these in
//! one-line targets; `tests/fuzz_corpus.rs` replays every committed corpus
//! file and crash artifact through them in a normal `cargo test` (this
//! crate's dev-dependencies enable the feature on itself). A panic is a
//! finding: invariants are checked with `assert!`. They drive the published
//! crates through their public API only, plus one seam: the hidden
//! `lce_gateway::fuzzing`, which hands them the upstream's private body
//! reader (the real code, with its line bound a parameter).
//!
//! Structured input: the harnesses over event sequences read their bytes in
//! one of two ways.
//! - Input starting with `{` is canonical JSON Lines (how the seed corpora
//!   from `fixtures/` look); lines that do not parse are skipped.
//! - Anything else drives a small generator through
//!   [`arbitrary::Unstructured`]: a flags byte, then events picked by type,
//!   with identifiers from tiny pools (so spans, calls, namespaces and
//!   interrupts meet), sequences that mostly increase, and text from a pool
//!   of awkward strings (controls, bidi, secrets, stack traces, partial JSON)
//!   or raw fuzzer bytes. Events are built as JSON and parsed strictly, so
//!   every generated event is one the parser accepts.
//!
//! Not a stable API: changed whenever the fuzzing needs it.
#![allow(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    clippy::missing_panics_doc
)]

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use arbitrary::Unstructured;
use bytes::BytesMut;
use futures::{Stream, StreamExt};
use lce_encode_agui::{AguiOptions, AguiSseEncoder};
use lce_encode_custom::{CustomOptions, CustomSseEncoder};
use lce_sanitize::{Sanitizer, redact};
use lce_types::{CancelReason, Event, EventType, Limits, Payload};
use lce_validate::{Mode, RunValidator, ValidatorOptions, validate_run};
use serde_json::{Value, json};
use tokio_util::codec::Decoder;

use lce_stream::codec::{SseDecoder, SseFrame};
use lce_stream::{
    CancelHandle, Coordinator, CoordinatorOptions, FrameEncoder, LceError, LifecycleStreamExt,
    MemoryAudit, MemoryStore, ThreadStore, WireEncoder, WireFormat,
};

use crate::store::{Fault, FaultyStore};

/// The most events one input may make (keeps every run fast).
const MAX_EVENTS: usize = 300;

// ------------------------------------------------------------ the generator

const RUN: &str = "r";
const CONV: &str = "c";
const MESSAGES: [&str; 3] = ["m0", "m1", "m2"];
const TOOLS: [&str; 3] = ["t0", "t1", "t2"];
const AGENTS: [&str; 2] = ["a0", "a1"];
const INTERRUPTS: [&str; 2] = ["i0", "i1"];
const TOOL_NAMES: [&str; 4] = ["search", "delete_file", "task", "x\u{202E}y"];
const CODES: [&str; 5] = [
    "internal",
    "tool_error",
    "capacity_exceeded",
    "tool_rejected",
    "bad\tcode",
];

/// Awkward text: the generator's vocabulary for free text and deltas.
const TEXTS: &[&str] = &[
    "",
    "hi",
    "Let me search the docs.",
    "é😀日本語",
    "a\u{7}b\u{1b}[31m",
    "\u{202E}gnp.exe\u{2066}",
    "line\nbreak\r\n",
    "quote\" back\\slash </script>",
    "event: x\ndata: y\n\n",
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "password=hunter2 api_key: 'abc123'",
    "postgres://admin:s3cr3t@db.internal:5432/app",
    "AKIAABCDEFGHIJKLMNOP and ghp_abcdefghijklmnopqrstuvwxyz0123",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    boom()\nValueError: no",
    "Error\n    at run (/srv/app.js:10:5)\n    at main (/srv/app.js:20:1)",
    "thread 'main' panicked at src/main.rs:2:5:\nboom",
    "0123456789abcdef0123456789abcdef01",
    "{",
    "{\"q\": ",
    "\"rbac\", \"n\": 5}",
    "}",
    "[1, 2]",
    "\u{FFFD}\u{0}",
];

const ARGUMENTS: &[&str] = &[
    "{}",
    r#"{"query":"rbac roles","limit":5}"#,
    r#"{"deep":{"a":[1,2.5,{"b":null}],"t":true}}"#,
    r#"{"n":1e300,"m":-0.0,"s":"é\u0000"}"#,
    r#"{"path":"/tmp/x","__proto__":{}}"#,
];

/// A byte-driven event generator.
struct Gen<'a> {
    u: Unstructured<'a>,
    seq: u64,
    first: bool,
}

impl<'a> Gen<'a> {
    fn new(data: &'a [u8]) -> Self {
        Gen {
            u: Unstructured::new(data),
            seq: 0,
            first: true,
        }
    }

    fn byte(&mut self) -> u8 {
        self.u.arbitrary::<u8>().unwrap_or(0)
    }

    fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// `true` about one time in `n`.
    fn one_in(&mut self, n: u8) -> bool {
        self.byte() % n.max(1) == 0
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        let i = usize::from(self.byte()) % xs.len();
        xs[i]
    }

    fn text(&mut self) -> String {
        if self.one_in(4) {
            let len = usize::from(self.byte() % 48);
            let raw = self.u.bytes(len.min(self.u.len())).unwrap_or(&[]);
            String::from_utf8_lossy(raw).into_owned()
        } else {
            let a = self.pick(TEXTS);
            if self.one_in(8) {
                let b = self.pick(TEXTS);
                format!("{a}{b}")
            } else {
                a.to_owned()
            }
        }
    }

    fn number(&mut self) -> u64 {
        u64::from(self.byte()) * u64::from(self.byte())
    }

    fn arguments(&mut self) -> Value {
        let a = self.pick(ARGUMENTS);
        serde_json::from_str(a).unwrap_or_else(|_| json!({}))
    }

    fn namespace(&mut self) -> Vec<&'static str> {
        match self.byte() % 8 {
            0 => vec![self.pick(&TOOLS)],
            1 => vec![self.pick(&TOOLS), self.pick(&TOOLS)],
            _ => vec![],
        }
    }

    fn side_effect_status(&mut self) -> &'static str {
        self.pick(&["none", "possible", "known"])
    }

    /// The JSON of one generated event, or `None` when the bytes are used up.
    fn event_json(&mut self) -> Option<Value> {
        if self.u.is_empty() {
            return None;
        }
        let kind = self.byte() % 21;
        let (ty, data): (&str, Value) = match kind {
            0 => {
                let mut d = json!({"harness_id": "h", "adapter_version": "1.0.0"});
                if self.bool() {
                    d["message_id"] = json!(self.pick(&MESSAGES));
                }
                ("run.started", d)
            }
            1 => {
                let mut d = json!({"outcome": "success"});
                if self.bool() {
                    d["stop_reason"] = json!("end_turn");
                }
                if self.bool() {
                    let durability = self.pick(&["committed", "uncommitted"]);
                    d["thread_state"] = json!({"durability": durability,
                        "durable_revision": self.number(), "head_ref": "head"});
                }
                ("run.finished", d)
            }
            2 => (
                "run.interrupted",
                json!({"interrupt_id": self.pick(&INTERRUPTS),
                    "reason": self.pick(&["human_input", "tool_approval"])}),
            ),
            3 => (
                "run.cancelled",
                json!({"reason": self.pick(&["client_request", "disconnect", "shutdown", "deadline"]),
                    "side_effect_status": self.side_effect_status()}),
            ),
            4 => {
                let mut d = json!({"code": self.pick(&CODES), "message": self.text(),
                    "retryable": self.bool(), "side_effect_status": self.side_effect_status()});
                if self.bool() {
                    d["retry_after_seconds"] = json!(self.byte());
                }
                ("run.error", d)
            }
            5 | 8 => (
                if kind == 5 {
                    "text.started"
                } else {
                    "reasoning.started"
                },
                json!({"message_id": self.pick(&MESSAGES), "role": "assistant"}),
            ),
            6 | 9 => (
                if kind == 6 {
                    "text.delta"
                } else {
                    "reasoning.delta"
                },
                json!({"message_id": self.pick(&MESSAGES), "delta": self.text()}),
            ),
            7 | 10 => (
                if kind == 7 {
                    "text.finished"
                } else {
                    "reasoning.finished"
                },
                json!({"message_id": self.pick(&MESSAGES)}),
            ),
            11 => {
                let args = if self.bool() {
                    json!({})
                } else {
                    self.arguments()
                };
                let mut d = json!({"tool_call_id": self.pick(&TOOLS),
                    "tool_name": self.pick(&TOOL_NAMES), "arguments": args});
                if self.one_in(4) {
                    d["parent_message_id"] = json!(self.pick(&MESSAGES));
                }
                ("tool.started", d)
            }
            12 => {
                let delta =
                    self.pick(&["{", "\"q\": \"x\"", ", \"n\": 5", "}", "{}", "[", "", "\"é"]);
                (
                    "tool.arguments.delta",
                    json!({"tool_call_id": self.pick(&TOOLS), "delta": delta}),
                )
            }
            13 => {
                let mut d = json!({"tool_call_id": self.pick(&TOOLS), "result": self.text()});
                if self.one_in(4) {
                    d["result_ref"] = json!("ref-1");
                }
                ("tool.finished", d)
            }
            14 => (
                "tool.error",
                json!({"tool_call_id": self.pick(&TOOLS), "code": self.pick(&CODES),
                    "message": self.text(), "retryable": self.bool()}),
            ),
            15 => {
                let form = self.bool();
                let mut d = json!({"interrupt_id": self.pick(&INTERRUPTS),
                    "interrupt_type": if form { "form_input" } else { "tool_approval" },
                    "agent_id": self.pick(&AGENTS)});
                if self.bool() {
                    d["prompt"] = json!(self.text());
                }
                if form || self.one_in(4) {
                    d["fields"] = json!([{"field_name": "name", "field_type": "text",
                        "field_label": self.text(), "required": self.bool()}]);
                }
                if !form || self.one_in(4) {
                    let mut approval = json!({"tool_call_id": self.pick(&TOOLS),
                        "tool_name": self.pick(&TOOL_NAMES), "tool_args": self.arguments()});
                    if self.bool() {
                        approval["allowed_decisions"] = json!(["approve", "reject"]);
                    }
                    d["tool_approvals"] = json!([approval]);
                }
                ("interrupt.requested", d)
            }
            16 => (
                "namespace.entered",
                json!({"agent_id": self.pick(&AGENTS), "agent_name": self.text(),
                    "parent_tool_call_id": self.pick(&TOOLS)}),
            ),
            17 => (
                "namespace.exited",
                json!({"agent_id": self.pick(&AGENTS), "parent_tool_call_id": self.pick(&TOOLS),
                    "outcome": self.pick(&["success", "interrupted", "cancelled", "error"])}),
            ),
            18 => {
                let mut d = json!({"code": self.pick(&CODES), "message": self.text()});
                if self.bool() {
                    d["details"] = json!({"server": self.text(), "n": self.byte()});
                }
                ("warning", d)
            }
            19 => {
                let mut d = json!({});
                if self.bool() {
                    d["input_tokens"] = json!(self.number());
                }
                if self.bool() {
                    d["output_tokens"] = json!(self.number());
                }
                if self.bool() {
                    d["cost"] = json!(f64::from(self.byte()) / 7.0);
                    d["currency"] = json!("USD");
                }
                if self.bool() {
                    d["is_final"] = json!(self.bool());
                }
                ("usage.updated", d)
            }
            _ => {
                let mut d = json!({"provider": "openai", "metadata": {"request_id": self.text()}});
                if self.bool() {
                    d["model"] = json!("gpt");
                }
                ("provider.metadata", d)
            }
        };
        // Sequences mostly increase by one; sometimes repeat or jump.
        if !self.first {
            match self.byte() % 32 {
                0 => {}
                1 => self.seq += 2,
                _ => self.seq += 1,
            }
        }
        self.first = false;
        let run_id = if self.byte() == 0 { "r2" } else { RUN };
        let ms = self.seq * 37;
        let timestamp = format!(
            "2026-08-17T{:02}:{:02}:{:02}.{:03}Z",
            (ms / 3_600_000) % 24,
            (ms / 60_000) % 60,
            (ms / 1000) % 60,
            ms % 1000
        );
        Some(
            json!({"version": 1, "type": ty, "run_id": run_id, "conversation_id": CONV,
            "sequence": self.seq, "timestamp": timestamp, "namespace": self.namespace(),
            "data": data}),
        )
    }

    fn event(&mut self) -> Option<Option<Event>> {
        let v = self.event_json()?;
        Some(Event::from_json(&v.to_string()).ok())
    }
}

/// The events of an input (see the module docs) and a flags byte.
fn events_of(data: &[u8]) -> (u8, Vec<Event>) {
    if data.first() == Some(&b'{') {
        let events = data
            .split(|&b| b == b'\n')
            .filter_map(|line| Event::from_slice(line).ok())
            .take(MAX_EVENTS)
            .collect();
        // Flags from the input's length: both settings get exercised.
        #[allow(clippy::cast_possible_truncation)]
        return ((data.len() % 251) as u8 & 0xF0, events);
    }
    let mut g = Gen::new(data);
    let flags = g.byte();
    let mut events = Vec::new();
    while events.len() < MAX_EVENTS {
        match g.event() {
            None => break,
            Some(Some(e)) => events.push(e),
            Some(None) => {}
        }
    }
    (flags, events)
}

/// Whether the run passes the validator in full mode (either ephemerality).
fn is_valid_run(events: &[Event]) -> bool {
    [false, true]
        .into_iter()
        .any(|eph| validate_run(events, ValidatorOptions::new().ephemeral(eph)).is_ok())
}

// ------------------------------------------------------------ parse_line

/// Parses one line; an accepted event must serialize back to canonical JSON
/// that parses to the same event, and serialize stably.
pub fn parse_line(data: &[u8]) {
    let Ok(event) = Event::from_slice(data) else {
        return;
    };
    let json = event.to_json();
    let again = Event::from_json(&json).unwrap_or_else(|e| panic!("re-parse failed: {e}"));
    assert_eq!(again, event, "round trip changed the event");
    assert_eq!(again.to_json(), json, "serialization is not stable");
}

// ------------------------------------------------------------ validator

/// The validator over an event sequence: never panics, is deterministic,
/// and `clear_failure` (what `lce check --all` does) can go on after any
/// violation.
pub fn validator(data: &[u8]) {
    let (flags, events) = events_of(data);
    let mode = if flags & 1 == 1 {
        Mode::Adapter
    } else {
        Mode::Full
    };
    let options = ValidatorOptions::new()
        .mode(mode)
        .ephemeral(flags & 2 != 0)
        .contiguous(flags & 4 != 0);
    let mut v = RunValidator::new(options.clone());
    let mut first = None;
    for e in &events {
        if let Err(violation) = v.push(e) {
            first.get_or_insert(violation);
            break;
        }
    }
    if first.is_none() {
        first = v.finish().err();
    }
    let again = validate_run(&events, options.clone()).err();
    assert_eq!(
        again.as_ref().map(ToString::to_string),
        first.as_ref().map(ToString::to_string),
        "the validator is not deterministic"
    );
    // Recovery mode: report, clear, go on.
    let mut v = RunValidator::new(options);
    let mut accepted = 0u64;
    for e in &events {
        match v.push(e) {
            Ok(()) => accepted += 1,
            Err(violation) => {
                let text = violation.to_string();
                assert!(!text.contains('\n'), "multi-line violation message");
                v.clear_failure();
                assert!(v.failure().is_none());
            }
        }
    }
    assert!(v.events() <= accepted + events.len() as u64);
    let _ = v.finish();
    let _ = v.footprint();
}

// ------------------------------------------------------------ sanitizer

/// The sanitizer and `redact`: both idempotent; a sanitized event is still
/// a canonical event; the messages it redacts hold nothing `redact` would
/// still find.
pub fn sanitizer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let once = redact(&text);
    let twice = redact(&once);
    assert_eq!(once, twice, "redact is not idempotent");

    let (flags, events) = events_of(data);
    let mut limits = Limits::default();
    if flags & 1 == 1 {
        // Small bounds, so truncation paths run on small inputs.
        limits.display_bytes = 24;
        limits.tool_result_bytes = 20;
        limits.name_bytes = 12;
    }
    let Ok(sanitizer) = Sanitizer::try_new(limits) else {
        return;
    };
    for event in events {
        let Ok(out) = sanitizer.sanitize(event) else {
            continue;
        };
        let clean = out.event;
        let json = clean.to_json();
        let reparsed = Event::from_json(&json)
            .unwrap_or_else(|e| panic!("a sanitized event does not re-parse: {e}"));
        assert_eq!(reparsed, clean, "a sanitized event does not round-trip");
        let again = sanitizer
            .sanitize(clean.clone())
            .unwrap_or_else(|r| panic!("a sanitized event was rejected: {r}"));
        assert_eq!(again.event, clean, "the sanitizer is not idempotent");
        let message = match &clean.payload {
            Payload::Warning(w) => Some(&w.message),
            Payload::ToolError(t) => Some(&t.message),
            Payload::RunError(r) => Some(&r.message),
            _ => None,
        };
        if let Some(m) = message {
            assert_eq!(
                redact(m),
                m.as_str(),
                "a sanitized message still holds a secret"
            );
        }
    }
}

// ------------------------------------------------------------ encoders

/// Decodes `bytes` with [`SseDecoder`] in one buffer; every byte must belong
/// to a complete, well-formed frame.
fn decode_all(bytes: &[u8]) -> Vec<SseFrame> {
    let mut decoder = SseDecoder::new();
    let mut buf = BytesMut::from(bytes);
    let mut frames = Vec::new();
    loop {
        match decoder.decode(&mut buf) {
            Ok(Some(f)) => frames.push(f),
            Ok(None) => break,
            Err(e) => panic!("encoder output does not decode: {e}"),
        }
    }
    assert!(buf.is_empty(), "encoder output ends inside a frame");
    frames
}

/// Checks what one encoder call appended: whole frames, each an `event:`
/// and/or `data:` frame whose data is one JSON value.
fn check_frames(chunk: &[u8]) -> Vec<SseFrame> {
    if chunk.is_empty() {
        return Vec::new();
    }
    assert!(chunk.ends_with(b"\n\n"), "a call left a frame open");
    assert!(
        !chunk.windows(3).any(|w| w == b"\n\n\n") && !chunk.starts_with(b"\n"),
        "empty lines between frames"
    );
    let written = chunk.windows(2).filter(|w| *w == b"\n\n").count();
    let frames = decode_all(chunk);
    assert_eq!(
        frames.len(),
        written,
        "frame count differs from frames written"
    );
    for f in &frames {
        if f.comment_only {
            continue;
        }
        assert!(!f.data.is_empty(), "a frame without data");
        if let Err(e) = serde_json::from_str::<Value>(&f.data) {
            panic!("frame data is not JSON ({e}): {:?}", f.data);
        }
    }
    frames
}

/// Encodes `events` with `encoder`, letting it release held frames where
/// `flags` says the upstream would have waited; checks every call's output
/// and that the whole output decodes to the same frames. A run that passes
/// the validator must encode without error. Returns the output.
fn encode_run<E: FrameEncoder>(mut encoder: E, events: &[Event], flags: u8) -> Vec<u8> {
    let must_encode = is_valid_run(events);
    let mut out = BytesMut::new();
    let mut frames = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let before = out.len();
        if let Err(e) = encoder.encode_frame(event, &mut out) {
            assert!(!must_encode, "a valid run failed to encode: {e}");
            assert_eq!(out.len(), before, "a failed call left bytes behind");
        }
        frames.extend(check_frames(&out[before..]));
        if (flags >> (4 + i % 4)) & 1 == 1 {
            let before = out.len();
            if let Err(e) = encoder.on_idle(&mut out) {
                assert!(!must_encode, "a valid run failed to release: {e}");
                assert_eq!(out.len(), before, "a failed release left bytes behind");
            }
            frames.extend(check_frames(&out[before..]));
        }
    }
    assert_eq!(decode_all(&out), frames, "whole output decodes differently");
    out.to_vec()
}

/// DA's `custom` encoder over an event sequence.
pub fn encode_custom(data: &[u8]) {
    let (flags, events) = events_of(data);
    let agent_name = (flags & 2 != 0).then(|| "Ops \"agent\"\u{2028}".to_owned());
    encode_run(
        CustomSseEncoder::new(CustomOptions { agent_name }),
        &events,
        flags,
    );
}

/// The AG-UI encoder (DA dialect or 1.0, by a flag) over an event sequence.
pub fn encode_agui(data: &[u8]) {
    let (flags, events) = events_of(data);
    let mut options = AguiOptions::default();
    if flags & 2 != 0 {
        options = options.with_agent_name("Ops \"agent\"\u{2028}");
    }
    let encoder = if flags & 1 == 1 {
        AguiSseEncoder::v1(options)
    } else {
        AguiSseEncoder::da(options)
    };
    encode_run(encoder, &events, flags);
}

// ------------------------------------------------------------ coordinator

/// One step of a generated adapter.
#[derive(Debug)]
enum Step {
    Event(Box<Event>),
    Error,
    Pending,
    Sleep(u64),
    Cancel(CancelReason),
}

/// An adapter stream: plays its steps, returning `Pending` (and waking
/// itself) where told to.
struct Adapter {
    steps: std::vec::IntoIter<Step>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    cancel: CancelHandle,
}

impl Stream for Adapter {
    type Item = Result<Event, LceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(sleep) = &mut self.sleep {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            match self.steps.next() {
                None => return Poll::Ready(None),
                Some(Step::Event(e)) => return Poll::Ready(Some(Ok(*e))),
                Some(Step::Error) => {
                    return Poll::Ready(Some(Err(LceError::Io(std::io::Error::other(
                        "adapter failed: password=hunter2",
                    )))));
                }
                Some(Step::Pending) => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Some(Step::Sleep(ms)) => {
                    self.sleep = Some(Box::pin(tokio::time::sleep(Duration::from_millis(ms))));
                }
                Some(Step::Cancel(reason)) => {
                    self.cancel.cancel(reason);
                }
            }
        }
    }
}

/// A coordinated run of `events` with faults mixed in by `flags`.
struct Plan {
    steps: Vec<Step>,
    run_id: String,
    conversation_id: String,
    flags: u8,
    extra: u8,
}

fn plan_of(data: &[u8]) -> Plan {
    if data.first() == Some(&b'{') {
        let (flags, events) = events_of(data);
        let (run_id, conversation_id) = events.first().map_or_else(
            || (RUN.to_owned(), CONV.to_owned()),
            |e| (e.run_id.to_string(), e.conversation_id.to_string()),
        );
        // Fixture runs: play them as they are (flags pick the store only).
        return Plan {
            steps: events
                .into_iter()
                .map(|e| Step::Event(Box::new(e)))
                .collect(),
            run_id,
            conversation_id,
            flags: flags & 0x30,
            extra: 0,
        };
    }
    let mut g = Gen::new(data);
    let flags = g.byte();
    let extra = g.byte();
    let mut steps = Vec::new();
    while steps.len() < MAX_EVENTS {
        let step = match g.byte() {
            0..=3 => Step::Error,
            4..=11 => Step::Pending,
            12..=15 => Step::Sleep(u64::from(g.byte())),
            16 => Step::Cancel(g.pick(&[
                CancelReason::ClientRequest,
                CancelReason::Shutdown,
                CancelReason::Deadline,
                CancelReason::Disconnect,
            ])),
            _ => match g.event() {
                None => break,
                Some(Some(e)) => Step::Event(Box::new(e)),
                Some(None) => continue,
            },
        };
        steps.push(step);
    }
    Plan {
        steps,
        run_id: RUN.to_owned(),
        conversation_id: CONV.to_owned(),
        flags,
        extra,
    }
}

/// The coordinator over an adapter stream (events, errors, waits,
/// cancellations; stores that fail, hang or are slow; deadlines; consumers
/// that go away): it yields events only, its output passes the validator in
/// full mode with exactly one terminal, last; the audit gets exactly one
/// record, naming that terminal (or the disconnect); the output encodes in
/// the format the flags pick.
pub fn coordinator(data: &[u8]) {
    let plan = plan_of(data);
    let flags = plan.flags;
    let ephemeral = flags & 1 != 0;
    let store: Arc<dyn ThreadStore> = match (flags >> 4) & 3 {
        0 => Arc::new(MemoryStore::new()),
        1 => Arc::new(FaultyStore::new(Fault::Fail)),
        2 => Arc::new(FaultyStore::new(Fault::Hang)),
        _ => Arc::new(FaultyStore::new(Fault::Delay(Duration::from_millis(
            u64::from(plan.extra) * 100,
        )))),
    };
    let mut options = CoordinatorOptions::new(plan.run_id, plan.conversation_id)
        .ephemeral(ephemeral)
        .commit_timeout(Duration::from_secs(10));
    if flags & 2 != 0 {
        options = options.deadline(Some(Duration::from_millis(u64::from(plan.extra) * 3)));
    }
    let take = if flags & 4 != 0 {
        usize::from(plan.extra % 16)
    } else {
        usize::MAX
    };
    let format = WireFormat::ALL[usize::from(flags >> 6) % 3];
    let audit = Arc::new(MemoryAudit::new());
    let cancel = CancelHandle::new();
    let coordinator = Coordinator::new(options)
        .store(store)
        .audit(audit.clone())
        .cancel_handle(cancel.clone());
    let adapter = Adapter {
        steps: plan.steps.into_iter(),
        sleep: None,
        cancel,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime");
    let items: Vec<Result<Event, LceError>> = runtime.block_on(
        lce_stream::source(adapter)
            .enforced(coordinator)
            .take(take)
            .collect(),
    );
    let out: Vec<Event> = items
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("the coordinator yielded an error: {e}")))
        .collect();
    let records = audit.records();
    assert_eq!(records.len(), 1, "audit records: {records:?}");
    let record = &records[0];
    let terminals = out.iter().filter(|e| e.event_type().is_terminal()).count();
    if take != usize::MAX && terminals == 0 {
        // The consumer went away before the terminal reached it: audited as
        // a disconnect, or as the terminal the coordinator had already
        // decided (and queued) when the consumer left. What it got is a
        // valid beginning of a run.
        assert!(record.terminal.is_terminal());
        if record.terminal == EventType::RunCancelled
            && record.code.as_deref() != Some("disconnect")
        {
            assert!(record.coordinator_terminal || record.sequence.is_some());
        }
        let mut v = RunValidator::new(ValidatorOptions::new().ephemeral(ephemeral));
        for e in &out {
            if let Err(violation) = v.push(e) {
                panic!("coordinator output breaks the contract: {violation}\n{out:#?}");
            }
        }
        return;
    }
    assert_eq!(terminals, 1, "terminals in {out:?}");
    let last = out.last().expect("a terminal");
    assert!(last.event_type().is_terminal(), "the terminal is not last");
    assert_eq!(
        record.terminal,
        last.event_type(),
        "audit names another terminal"
    );
    let mut v = RunValidator::new(ValidatorOptions::new().ephemeral(ephemeral));
    for e in &out {
        if let Err(violation) = v.push(e) {
            panic!("coordinator output breaks the contract: {violation}\n{out:#?}");
        }
    }
    v.finish()
        .unwrap_or_else(|v| panic!("coordinator output: {v}"));
    encode_run(WireEncoder::new(format, None), &out, flags);
}

// ------------------------------------------------------------ SSE decoder

/// Decodes `input` fed in chunks of the sizes `sizes` cycles through (0 =
/// all at once); checks the buffer stays bounded while waiting.
fn decode_chunked(input: &[u8], max: usize, sizes: &[usize]) -> Vec<Result<SseFrame, String>> {
    let mut decoder = SseDecoder::with_max_frame_bytes(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < input.len() {
        let size = match sizes[i % sizes.len()] {
            0 => input.len(),
            n => n,
        };
        i += 1;
        let end = (pos + size).min(input.len());
        buf.extend_from_slice(&input[pos..end]);
        pos = end;
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(f)) => out.push(Ok(f)),
                Ok(None) => break,
                Err(e) => out.push(Err(e.to_string())),
            }
        }
        assert!(
            buf.len() <= max + 1,
            "decoder holds {} bytes with a bound of {max}",
            buf.len()
        );
    }
    out
}

/// The SSE decoder over arbitrary bytes: the same frames and errors
/// whatever the chunking, and bounded memory. Input: a byte choosing the
/// frame bound, four chunk sizes, then the stream.
pub fn sse_decoder(data: &[u8]) {
    if data.len() < 5 {
        return;
    }
    let max = match data[0] {
        255 => lce_stream::codec::DEFAULT_MAX_FRAME_BYTES,
        b => usize::from(b) + 1,
    };
    let sizes: Vec<usize> = data[1..5].iter().map(|&b| usize::from(b % 64)).collect();
    let input = &data[5..];
    let whole = decode_chunked(input, max, &[0]);
    let chunked = decode_chunked(input, max, &sizes);
    assert_eq!(chunked, whole, "chunking {sizes:?} changed the frames");
    let bytewise = decode_chunked(input, max, &[1]);
    assert_eq!(bytewise, whole, "byte-at-a-time changed the frames");
}

// ------------------------------------------------------------ the door

/// `id_check`'s oracle: `gateway.md`, "Limits at the door", written out
/// char by char (not the byte test `is_valid_id` makes).
fn id_oracle(id: &str) -> bool {
    let plain =
        |c: char| matches!(c, 'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | ':' | '@' | '-');
    let mut chars = id.chars();
    match chars.next() {
        None | Some('.') => false,
        Some(first) => plain(first) && chars.all(plain) && id.len() <= 256,
    }
}

fn check_id(id: &str) {
    let valid = lce_gateway::is_valid_id(id);
    assert_eq!(valid, id_oracle(id), "is_valid_id({id:?})");
    if valid {
        // What the rule is for: nothing a path, a Redis key or a log line
        // would read as structure.
        assert!((1..=256).contains(&id.len()), "{id:?}");
        assert!(id.is_ascii() && !id.starts_with('.'), "{id:?}");
        assert!(
            !id.bytes()
                .any(|b| b.is_ascii_control() || b" /\\{}%\"'=".contains(&b)),
            "{id:?}"
        );
    }
}

/// `text` cut (at a char boundary) or padded with `a` to exactly `n` bytes.
fn fit(text: &str, n: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.len() + c.len_utf8() > n {
            break;
        }
        out.push(c);
    }
    while out.len() < n {
        out.push('a');
    }
    out
}

/// `lce_gateway::is_valid_id` never panics and agrees with [`id_oracle`],
/// on the input (lossy UTF-8) and on it cut or padded to 255, 256 and 257
/// bytes (the bound).
pub fn id_check(data: &[u8]) {
    assert_eq!(lce_gateway::MAX_ID_BYTES, 256, "gateway.md's bound");
    let text = String::from_utf8_lossy(data);
    check_id(&text);
    for n in [255, 256, 257] {
        check_id(&fit(&text, n));
    }
}

/// `last_event_id`'s oracle: `<position>.<k>`, two decimal numbers without
/// sign, space or leading zero that fit in a `u64`, the position at least
/// 1; computed digit by digit (not with `str::parse`).
fn frame_id_oracle(s: &str) -> Option<(u64, u64)> {
    fn number(d: &[u8]) -> Option<u64> {
        if d.is_empty() || (d.len() > 1 && d[0] == b'0') {
            return None;
        }
        d.iter().try_fold(0u64, |n, &b| {
            if b.is_ascii_digit() {
                n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
            } else {
                None
            }
        })
    }
    let b = s.as_bytes();
    let dot = b.iter().position(|&c| c == b'.')?;
    let position = number(&b[..dot])?;
    let index = number(&b[dot + 1..])?;
    (position >= 1).then_some((position, index))
}

/// A `Last-Event-ID` read as `lce_runlog::FrameId`: never panics, accepts
/// exactly what [`frame_id_oracle`] accepts, and what it accepts displays
/// back as the same text (the canonical form is the only one taken). The
/// other way round, from 16 input bytes: every `FrameId` with a position of
/// at least 1 displays as text that parses back to it; position 0 (no
/// frame) never reads back.
pub fn last_event_id(data: &[u8]) {
    use lce_runlog::FrameId;
    let text = String::from_utf8_lossy(data);
    let parsed = text.parse::<FrameId>();
    assert_eq!(
        parsed.ok().map(|id| (id.position, id.index)),
        frame_id_oracle(&text),
        "{text:?}"
    );
    if let Ok(id) = parsed {
        assert_eq!(id.to_string(), text, "{text:?} does not display back");
    }
    if let (Some(p), Some(k)) = (data.get(..8), data.get(8..16)) {
        let id = FrameId {
            position: u64::from_le_bytes(p.try_into().unwrap()),
            index: u64::from_le_bytes(k.try_into().unwrap()),
        };
        let back = id.to_string().parse::<FrameId>();
        if id.position >= 1 {
            assert_eq!(back, Ok(id), "{id} does not read back");
        } else {
            assert!(back.is_err(), "{id} read back");
        }
    }
}

/// In `upstream_reader`'s input, `REPEAT b n2 n1 n0` is byte `b` repeated
/// `n` (24 bits, big-endian) times: how a few input bytes make lines
/// around the 4 MiB bound. `0xF5` never occurs in UTF-8.
const REPEAT: u8 = 0xF5;

/// The largest body `upstream_reader` builds with a small bound (many
/// times any of them, and quick to read).
const MAX_SMALL_BODY: usize = 64 * 1024;

/// The largest body `upstream_reader` builds with the real bound: twice it
/// and some (an input this large takes a few hundred milliseconds).
const MAX_BODY: usize = 2 * lce_types::DEFAULT_MAX_LINE_BYTES + 64 * 1024;

/// The most newlines a body `upstream_reader` builds holds: millions of
/// empty lines (a repeated `\n`) would cost the harness gigabytes of
/// items and seconds, and find nothing a few thousand do not.
const MAX_NEWLINES: usize = 10_000;

/// The body `data` describes (literal bytes and [`REPEAT`]s), at most `cap`
/// bytes and [`MAX_NEWLINES`] newlines (nothing after the last of those).
fn expand(data: &[u8], cap: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut newlines = 0;
    let mut i = 0;
    while i < data.len() && out.len() < cap && newlines < MAX_NEWLINES {
        match data[i..] {
            [REPEAT, b, n2, n1, n0, ..] => {
                let mut n = (usize::from(n2) << 16) | (usize::from(n1) << 8) | usize::from(n0);
                n = n.min(cap - out.len());
                if b == b'\n' {
                    n = n.min(MAX_NEWLINES - newlines);
                    newlines += n;
                }
                out.resize(out.len() + n, b);
                i += 5;
            }
            _ => {
                newlines += usize::from(data[i] == b'\n');
                out.push(data[i]);
                i += 1;
            }
        }
    }
    out
}

/// A chunk size from one input byte: 0 (the rest at once), 1-127 bytes, or
/// 1-128 times 32 KiB.
fn chunk_size(b: u8) -> usize {
    if b < 128 {
        usize::from(b)
    } else {
        usize::from(b - 127) * 32 * 1024
    }
}

/// `body` cut into chunks of the sizes `sizes` cycles through (after
/// 20 000 chunks, the rest at once).
fn chunks_of(body: &[u8], sizes: &[usize]) -> Vec<bytes::Bytes> {
    let mut out = Vec::new();
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at == body.len() {
            break;
        }
        let left = body.len() - at;
        let n = if n == 0 || out.len() >= 20_000 {
            left
        } else {
            n.min(left)
        };
        out.push(bytes::Bytes::copy_from_slice(&body[at..at + n]));
        at += n;
    }
    out
}

/// What the upstream's reader hands on, comparable.
#[derive(Debug, PartialEq)]
enum Read {
    Event(Box<Event>),
    Parse(lce_types::ParseError),
    /// Any other error item (the SSE is malformed).
    Failed,
}

impl From<Result<Event, LceError>> for Read {
    fn from(item: Result<Event, LceError>) -> Self {
        match item {
            Ok(e) => Read::Event(Box::new(e)),
            Err(LceError::Parse(p)) => Read::Parse(p),
            Err(_) => Read::Failed,
        }
    }
}

/// The reader's stages over `body` cut as `sizes` says, with a break after
/// the last chunk when `broken`: checks what `whole_lines` hands on, and
/// returns how many bytes of `body` it handed on and the events read.
fn read_upstream(
    body: &[u8],
    sizes: &[usize],
    media: &str,
    max: usize,
    broken: bool,
) -> (usize, Vec<Read>) {
    use futures::FutureExt as _;
    let chunks = chunks_of(body, sizes);
    let largest = chunks.iter().map(bytes::Bytes::len).max().unwrap_or(0);
    let stream = |chunks: Vec<bytes::Bytes>| {
        let end = broken.then(|| Err(std::io::Error::other("the body broke")));
        futures::stream::iter(chunks.into_iter().map(Ok).chain(end))
    };
    let lines: Vec<bytes::Bytes> =
        lce_gateway::fuzzing::upstream_whole_lines(stream(chunks.clone()), max)
            .map(|r| r.expect("whole_lines hands on no error"))
            .collect::<Vec<_>>()
            .now_or_never()
            .expect("a body of ready chunks reads at once");
    let mut handed = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let tail = i + 1 == lines.len() && !broken;
        assert!(!line.is_empty(), "an empty item");
        // Whole lines, then nothing, or a line already over the bound (the
        // start of it), or the clean end's tail; never more held than the
        // bound, so an item is at most the bound and a chunk.
        let unfinished = line.len() - line.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
        assert!(
            unfinished == 0 || unfinished > max || tail,
            "item {i} ends in {unfinished} bytes of an unfinished line, bound {max}"
        );
        assert!(
            line.len() <= max + largest,
            "item {i} of {} bytes: more than the bound {max} and a chunk {largest}",
            line.len()
        );
        handed.extend_from_slice(line);
    }
    assert!(
        body.starts_with(&handed),
        "handed on bytes the body does not have"
    );
    let rest = &body[handed.len()..];
    if broken {
        // A break drops what is after the last line: no line end, and no
        // more than the bound.
        assert!(
            !rest.contains(&b'\n') && rest.len() <= max,
            "{} bytes dropped",
            rest.len()
        );
    } else {
        assert!(rest.is_empty(), "{} bytes lost at a clean end", rest.len());
    }
    let events: Vec<Read> = lce_gateway::fuzzing::upstream_body(stream(chunks), media, max)
        .expect("a media type lce reads")
        .map(Read::from)
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("a body of ready chunks reads at once");
    (handed.len(), events)
}

/// What reading `body` as `media` must give, computed on it whole with the
/// synchronous readers: JSON Lines with `lce_types::EventLines` (and, on
/// line lengths alone, exactly one item per line, an over-long one iff the
/// line is over the bound); SSE with one `SseDecoder` pass, ending at the
/// first malformed frame as the upstream's reader does.
fn read_oracle(body: &[u8], media: &str, max: usize) -> Vec<Read> {
    if media == "text/event-stream" {
        let mut decoder = SseDecoder::with_max_frame_bytes(max);
        let mut buf = BytesMut::from(body);
        let mut out = Vec::new();
        let mut eof = false;
        loop {
            let item = if eof {
                decoder.decode_eof(&mut buf)
            } else {
                decoder.decode(&mut buf)
            };
            match item {
                Ok(Some(f)) if f.comment_only || f.data.is_empty() => {}
                Ok(Some(f)) => out.push(Read::from(
                    Event::from_json(&f.data).map_err(LceError::Parse),
                )),
                Ok(None) if !eof => eof = true,
                Ok(None) | Err(lce_stream::SseDecodeError::Io(_)) => return out,
                Err(_) => {
                    out.push(Read::Failed);
                    return out;
                }
            }
        }
    }
    let out: Vec<Read> = lce_types::EventLines::with_max_line_bytes(body, max)
        .map(|item| Read::from(item.unwrap().map_err(LceError::Parse)))
        .collect();
    let mut lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    assert_eq!(out.len(), lines.len(), "not one item per line");
    for (n, (line, item)) in lines.iter().zip(&out).enumerate() {
        let too_long =
            matches!(item, Read::Parse(p) if p.kind == lce_types::ParseErrorKind::LineTooLong);
        assert_eq!(
            too_long,
            line.len() > max,
            "line {} of {} bytes, bound {max}",
            n + 1,
            line.len()
        );
    }
    out
}

/// The upstream's body reader (`HttpUpstream`: `whole_lines`, then JSON
/// Lines or SSE) over arbitrary bytes in arbitrary chunks: never panics;
/// `whole_lines` hands on whole lines or a line already over the bound,
/// holding at most the bound and a chunk, and loses nothing at a clean end
/// (at a break, only an unfinished line of at most the bound); every line
/// over the bound is reported as such, once; and the events are the ones
/// the synchronous readers find in the bytes handed on, so the same
/// whatever the chunking, even at a break (whole, the input's sizes, and
/// for bodies up to 64 KiB byte by byte or 4 093 at a time). Input: a flags
/// byte (media type, break), a bound byte (0-254 bytes and a body of at
/// most 64 KiB, or 255 for the real 4 MiB and up to twice that), four chunk
/// sizes, then the body, with [`REPEAT`] runs.
pub fn upstream_reader(data: &[u8]) {
    const MEDIA: [&str; 4] = [
        "application/x-ndjson",
        "text/event-stream",
        "application/jsonl",
        "application/json-lines",
    ];
    let [flags, bound, s0, s1, s2, s3, rest @ ..] = data else {
        return;
    };
    let media = MEDIA[usize::from(flags & 3)];
    let broken = flags & 4 != 0;
    let max = match bound {
        255 => lce_types::DEFAULT_MAX_LINE_BYTES,
        &b => usize::from(b),
    };
    let sizes = [s0, s1, s2, s3].map(|&b| chunk_size(b));
    let body = expand(
        rest,
        if *bound == 255 {
            MAX_BODY
        } else {
            MAX_SMALL_BODY
        },
    );
    // Byte by byte, or 4 093 at a time; past the small bodies' size, only
    // the input's own chunking (an input in the megabytes stays quick).
    let fine: &[&[usize]] = match body.len() {
        ..=4096 => &[&[1]],
        4097..=MAX_SMALL_BODY => &[&[4093]],
        _ => &[],
    };
    let mut runs = Vec::new();
    let mut oracle: Option<(usize, Vec<Read>)> = None;
    for sizes in [&[0][..], &sizes].into_iter().chain(fine.iter().copied()) {
        let (handed, events) = read_upstream(&body, sizes, media, max, broken);
        if oracle.as_ref().is_none_or(|(n, _)| *n != handed) {
            oracle = Some((handed, read_oracle(&body[..handed], media, max)));
        }
        let expected = oracle.as_ref().map(|(_, o)| o).unwrap();
        assert_eq!(
            events, *expected,
            "chunks {sizes:?}: not what the bytes hold"
        );
        runs.push(events);
    }
    // Even at a break: an unfinished line over the bound is handed on (and
    // reported) in every chunking, one within it dropped in every one. One
    // exception, SSE at a break: how much of such a line reaches the
    // decoder depends on the chunking (at least the bound and one byte),
    // and `SseDecoder` calls a frame too long only past the bound and two
    // bytes, so a last `Failed` may be there or not (the run ends either
    // as a bad line or as a closure; docs/reliability.md).
    let sse_break = broken && media == "text/event-stream";
    let settled = |r: &[Read]| -> usize {
        match r {
            [.., Read::Failed] if sse_break => r.len() - 1,
            _ => r.len(),
        }
    };
    assert!(
        runs.iter()
            .all(|r| r[..settled(r)] == runs[0][..settled(&runs[0])]),
        "the chunking changed the events"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random bytes (splitmix64), for checking the generator.
    fn noise(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) as u8
            })
            .collect()
    }

    #[test]
    fn the_generator_makes_events_of_every_type_the_parser_accepts() {
        let mut types = std::collections::BTreeSet::new();
        let mut made = 0;
        for seed in 0..200 {
            let mut data = noise(seed, 600);
            data[0] = 0; // not `{`
            let (_, events) = events_of(&data);
            made += events.len();
            types.extend(events.iter().map(Event::event_type));
        }
        assert!(made > 2000, "only {made} events from 200 inputs");
        assert_eq!(types.len(), 21, "types made: {types:?}");
    }

    /// The upstream reader's harness is not vacuous: at the real bound, a
    /// line over it is reported once and the event after it is read, in
    /// any chunking; a line of exactly the bound is parsed (and fails as
    /// JSON, not as too long).
    #[test]
    fn the_upstream_reader_harness_sees_the_bound() {
        let bound = lce_types::DEFAULT_MAX_LINE_BYTES;
        let event = crate::RunBuilder::new("r", "c").run_started().to_json();
        for (n, chunks) in [(bound, &[0][..]), (bound + 1, &[32 * 1024, 1, 4093][..])] {
            let mut body = vec![b'x'; n];
            body.push(b'\n');
            body.extend_from_slice(event.as_bytes());
            let (handed, read) = read_upstream(&body, chunks, "application/x-ndjson", bound, false);
            assert_eq!(handed, body.len());
            let too_long = |r: &Read| matches!(r, Read::Parse(p) if p.kind == lce_types::ParseErrorKind::LineTooLong);
            assert_eq!(read.len(), 2, "{read:?}");
            assert_eq!(too_long(&read[0]), n > bound, "{:?}", read[0]);
            assert!(matches!(read[1], Read::Event(_)), "{:?}", read[1]);
            assert_eq!(read, read_oracle(&body, "application/x-ndjson", bound));
        }
        let mut data = vec![1, 255, 128, 0, 0, 0];
        data.extend_from_slice(b": ");
        data.extend_from_slice(&[REPEAT, b'x', 0x40, 0, 0]);
        data.extend_from_slice(format!("\n\ndata: {event}\n\n").as_bytes());
        assert_eq!(
            expand(&data[6..], MAX_BODY).len(),
            bound + 2 + 2 + 6 + event.len() + 2
        );
        upstream_reader(&data);
    }

    #[test]
    fn harnesses_hold_on_noise() {
        for seed in 0..40 {
            let mut data = noise(seed, 400);
            data[0] = 1;
            parse_line(&data);
            validator(&data);
            sanitizer(&data);
            encode_custom(&data);
            encode_agui(&data);
            coordinator(&data);
            sse_decoder(&data);
            id_check(&data);
            last_event_id(&data);
            upstream_reader(&data);
        }
    }
}
