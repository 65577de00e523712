//! DA's non-streaming invoke (`POST /api/v1/chat/invoke`): a run's
//! accumulated `content` and `thinking`, and the response its terminal gives.
//!
//! # Accumulation (DA's behaviour)
//!
//! DA appends the text of every `content` frame it writes, in any namespace
//! (subagents included), to one buffer; every `tool_start` frame it writes
//! marks a boundary. `content` is the text after the last boundary (the final
//! answer), `thinking` the text before it, or `null` when that is empty.
//!
//! [`InvokeAccumulator`] is driven by the very frame decisions of
//! [`CustomSseEncoder`](crate::CustomSseEncoder) (the crate's shared decision
//! step: the D13 hold, the silence after `input_required` and terminals, D7),
//! so a `tool_start` the `custom` stream would not show (a rejected call
//! re-emitted on resume, a call whose arguments never completed before a
//! `run.error`) is no boundary, and text the stream would not show (after an
//! interrupt, an empty delta) is not counted. Live streams call
//! [`InvokeAccumulator::release_ready`] exactly where they would call the
//! encoder's (D13a); input from a file never does.
//!
//! # Memory
//!
//! Only two strings are kept: `thinking` (the text up to the last boundary)
//! and `content` (the text since). Each keeps at most
//! [`InvokeOptions::max_text_bytes`] bytes: text past the bound is dropped
//! (cut at a character boundary, no marker added) and counted in
//! [`InvokeAccumulator::truncated_bytes`]. The default bound is the run's
//! `bytes_per_run` limit (D19), which the coordinator already enforces on the
//! whole run, so a run it accepts is never cut; a server that wants less
//! memory per invoke sets a smaller bound.
//!
//! # The response
//!
//! [`InvokeAccumulator::response`] maps the run's terminal to DA's answer,
//! compact JSON (`,` `:`, UTF-8 raw, i.e. Python's
//! `json.dumps(separators=(",", ":"), ensure_ascii=False)`), keys in DA's
//! order:
//!
//! | terminal | status | body |
//! |---|---|---|
//! | `run.finished` | 200 | `{"success":true,"content","thinking","agent_id","conversation_id","trace_id"}` |
//! | `run.interrupted` | 400 | `{"success":false,"error":INTERRUPT_MESSAGE,"interrupt_type","agent_id","conversation_id","trace_id"}` |
//! | `run.error` with a [`CAPACITY_CODES`] code | 503, `Retry-After` = max(5, `retry_after_seconds` rounded up to whole seconds) | `{"success":false,"error":CAPACITY_MESSAGE,"agent_id","conversation_id","trace_id"}` |
//! | any other `run.error`, `run.cancelled`, no terminal, an encode error | 500 | `{"success":false,"error":FAILURE_MESSAGE,"agent_id","conversation_id","trace_id"}` |
//!
//! Decisions: `capacity_exceeded` (`AdapterErrorKind::Capacity`) and
//! `rate_limited` (`AdapterErrorKind::Throttled`) are capacity failures: both
//! say "try again in a moment" and may carry `retry_after_seconds`; every
//! other code (unavailable, timeout, the coordinator's own codes, ...) is a
//! generic failure. A cancelled run answers the generic 500: DA's invoke has
//! no cancel, and a run cut by shutdown or a deadline is, to the caller, a run
//! that failed (a client that disconnected gets no answer at all).
//!
//! ```
//! use lce_encode_custom::invoke::{InvokeAccumulator, InvokeIds, InvokeOptions};
//! use lce_types::Event;
//!
//! let ev = |seq: u64, ty: &str, data: &str| {
//!     Event::from_json(&format!(
//!         r#"{{"version":1,"type":"{ty}","run_id":"r","conversation_id":"c","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
//!     ))
//!     .unwrap()
//! };
//! let mut acc = InvokeAccumulator::new(InvokeOptions::default());
//! for e in [
//!     ev(1, "text.delta", r#"{"message_id":"m","delta":"Let me look. "}"#),
//!     ev(2, "tool.started", r#"{"tool_call_id":"t1","tool_name":"search","arguments":{}}"#),
//!     ev(3, "tool.finished", r#"{"tool_call_id":"t1","result":"ok"}"#),
//!     ev(4, "text.delta", r#"{"message_id":"m2","delta":"Café."}"#),
//!     ev(5, "run.finished", r#"{"outcome":"success"}"#),
//! ] {
//!     acc.feed(&e).unwrap();
//! }
//! assert_eq!(acc.thinking(), Some("Let me look. "));
//! assert_eq!(acc.content(), "Café.");
//! let ids = InvokeIds { agent_id: "a", conversation_id: "c", trace_id: None };
//! let resp = acc.response(&ids);
//! assert_eq!(resp.status, 200);
//! assert_eq!(
//!     &resp.body[..],
//!     r#"{"success":true,"content":"Café.","thinking":"Let me look. ","agent_id":"a","conversation_id":"c","trace_id":null}"#.as_bytes()
//! );
//! ```

use bytes::{Bytes, BytesMut};
use lce_types::{Event, InterruptType, Limits, Payload};
use lce_wire::{JsonWriter, Style};

use crate::{Decision, EncodeError, FrameCore, check_start, content_text};

/// The `error` of the 400 answer to a run that stopped on an interrupt.
pub const INTERRUPT_MESSAGE: &str = "Agent requires human interaction which is not supported via the invoke endpoint. Use the streaming chat endpoint or consider disabling tool approvals and the user input tool for this agent.";
/// The `error` of the 503 answer to a capacity failure.
pub const CAPACITY_MESSAGE: &str =
    "This agent is at capacity right now. Please try again in a moment.";
/// The `error` of the 500 answer to any other failure: DA's generic failure
/// text, [`lce_types::AGENT_EXECUTION_FAILED`].
pub const FAILURE_MESSAGE: &str = lce_types::AGENT_EXECUTION_FAILED;
/// The `run.error` codes answered as capacity failures (503): lce-sanitize's
/// `AdapterErrorKind::Capacity` and `AdapterErrorKind::Throttled` codes.
pub const CAPACITY_CODES: &[&str] = &["capacity_exceeded", "rate_limited"];
/// The least `Retry-After` of a 503, in seconds (DA's); a run's longer
/// `retry_after_seconds` wins.
pub const MIN_RETRY_AFTER_SECONDS: u64 = 5;
/// The content type of every invoke answer.
pub const CONTENT_TYPE: &str = "application/json";

/// Options of the [`InvokeAccumulator`].
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvokeOptions {
    /// The most bytes kept of `content`, and of `thinking` (each). Text past
    /// it is dropped and counted ([`InvokeAccumulator::truncated_bytes`]).
    pub max_text_bytes: usize,
}

impl InvokeOptions {
    /// The bound of `limits`: `bytes_per_run`, which no run the coordinator
    /// accepts exceeds.
    pub fn from_limits(limits: &Limits) -> Self {
        InvokeOptions {
            max_text_bytes: usize::try_from(limits.bytes_per_run).unwrap_or(usize::MAX),
        }
    }

    /// Sets [`max_text_bytes`](Self::max_text_bytes).
    pub fn max_text_bytes(mut self, max: usize) -> Self {
        self.max_text_bytes = max;
        self
    }
}

impl Default for InvokeOptions {
    /// [`InvokeOptions::from_limits`] of the default limits (256 MiB).
    fn default() -> Self {
        Self::from_limits(&Limits::default())
    }
}

/// How the run ended, as far as the accumulator saw it.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvokeOutcome {
    /// No terminal yet.
    Running,
    /// `run.finished`.
    Finished,
    /// `run.interrupted`; the type of the `interrupt.requested` before it
    /// (`None` only for a stream that broke rule 14).
    Interrupted {
        /// The pending interrupt's type.
        interrupt_type: Option<InterruptType>,
    },
    /// `run.error`.
    Failed {
        /// The error's code.
        code: String,
        /// The error's retry delay, if any.
        retry_after_seconds: Option<u64>,
    },
    /// `run.cancelled`.
    Cancelled,
}

/// The ids an invoke answer carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvokeIds<'a> {
    /// The agent that was invoked (the request's `agent_id`).
    pub agent_id: &'a str,
    /// The conversation (the request's `conversation_id`).
    pub conversation_id: &'a str,
    /// The trace id, written as `null` when `None`.
    pub trace_id: Option<&'a str>,
}

/// An invoke answer: status, `Retry-After` and the exact body bytes
/// (content type [`CONTENT_TYPE`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvokeResponse {
    /// The HTTP status: 200, 400, 503 or 500.
    pub status: u16,
    /// The `Retry-After` header's seconds (503 only).
    pub retry_after_seconds: Option<u64>,
    /// The compact JSON body.
    pub body: Bytes,
}

/// Accumulates a run's `content` / `thinking` as DA's invoke does; see the
/// [module docs](self).
#[derive(Debug)]
pub struct InvokeAccumulator {
    core: FrameCore,
    max: usize,
    thinking: String,
    content: String,
    truncated_bytes: u64,
    interrupt_type: Option<InterruptType>,
    outcome: InvokeOutcome,
    encode_error: bool,
}

impl InvokeAccumulator {
    /// A new accumulator for one run.
    pub fn new(options: InvokeOptions) -> Self {
        InvokeAccumulator {
            core: FrameCore::new(),
            max: options.max_text_bytes,
            thinking: String::new(),
            content: String::new(),
            truncated_bytes: 0,
            interrupt_type: None,
            outcome: InvokeOutcome::Running,
            encode_error: false,
        }
    }

    /// Feeds the next event of the run (the coordinator's output).
    ///
    /// Errs where the `custom` encoder would (a released start whose
    /// arguments never formed one JSON object, D6); the answer is then the
    /// generic failure, whatever follows. Events after the run's terminal
    /// are ignored.
    pub fn feed(&mut self, event: &Event) -> Result<(), EncodeError> {
        if self.outcome != InvokeOutcome::Running {
            return Ok(());
        }
        let result = self.feed_frames(event);
        if result.is_err() {
            self.encode_error = true;
        }
        match &event.payload {
            Payload::InterruptRequested(i) => {
                self.interrupt_type.get_or_insert(i.interrupt_type);
            }
            Payload::RunFinished(_) => self.outcome = InvokeOutcome::Finished,
            Payload::RunInterrupted(_) => {
                self.outcome = InvokeOutcome::Interrupted {
                    interrupt_type: self.interrupt_type,
                };
            }
            Payload::RunError(e) => {
                self.outcome = InvokeOutcome::Failed {
                    code: e.code.clone(),
                    // `Retry-After` takes whole seconds: a fraction (D19)
                    // is rounded up.
                    retry_after_seconds: e
                        .retry_after_seconds
                        .as_ref()
                        .map(lce_types::RetryAfter::ceil_seconds),
                };
            }
            Payload::RunCancelled(_) => self.outcome = InvokeOutcome::Cancelled,
            _ => {}
        }
        result
    }

    /// What the `custom` stream writes for `event`, reduced to text and
    /// boundaries. It goes through the encoder's own decision step
    /// ([`FrameCore::decide`], as `encode_inner` does), on purpose: the
    /// accumulator must see exactly the starts, events and closes the
    /// stream would write.
    fn feed_frames(&mut self, event: &Event) -> Result<(), EncodeError> {
        let seq = event.sequence;
        let mut boundary = false;
        let decision = self.core.decide(event, |call| -> Result<(), EncodeError> {
            check_start(call, seq)?;
            boundary = true;
            Ok(())
        })?;
        let Some(Decision { emit, closes }) = decision else {
            return Ok(());
        };
        if boundary {
            self.boundary();
        }
        if emit {
            if let Some(text) = content_text(event) {
                push_bounded(&mut self.content, text, self.max, &mut self.truncated_bytes);
            }
        }
        if closes {
            self.core.close();
        }
        Ok(())
    }

    /// D13a, for live streams only: call where the `custom` encoder's
    /// `release_ready` would be called (the upstream has no event ready).
    /// The starts it releases are boundaries.
    pub fn release_ready(&mut self) {
        let released = self.core.release_ready().is_some_and(|r| r.count() > 0);
        if released {
            self.boundary();
        }
    }

    /// A `tool_start` frame went out: the text so far is thinking.
    fn boundary(&mut self) {
        let content = std::mem::take(&mut self.content);
        push_bounded(
            &mut self.thinking,
            &content,
            self.max,
            &mut self.truncated_bytes,
        );
    }

    /// The text after the last boundary (the final answer).
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The text before the last boundary, `None` when empty.
    pub fn thinking(&self) -> Option<&str> {
        (!self.thinking.is_empty()).then_some(self.thinking.as_str())
    }

    /// Bytes of text dropped by the [`InvokeOptions::max_text_bytes`] bound.
    pub fn truncated_bytes(&self) -> u64 {
        self.truncated_bytes
    }

    /// How the run ended so far.
    pub fn outcome(&self) -> &InvokeOutcome {
        &self.outcome
    }

    /// DA's answer for the run as seen so far (call it after the terminal).
    pub fn response(&self, ids: &InvokeIds<'_>) -> InvokeResponse {
        let mut buf = BytesMut::new();
        let mut w = JsonWriter::new(&mut buf, Style::Compact);
        w.begin_object();
        let (status, retry_after_seconds) = match &self.outcome {
            _ if self.encode_error => {
                failure(&mut w, FAILURE_MESSAGE);
                (500, None)
            }
            InvokeOutcome::Finished => {
                w.field_bool("success", true);
                w.field_str("content", &self.content);
                match self.thinking() {
                    Some(t) => w.field_str("thinking", t),
                    None => w.field_null("thinking"),
                }
                (200, None)
            }
            InvokeOutcome::Interrupted { interrupt_type } => {
                failure(&mut w, INTERRUPT_MESSAGE);
                match interrupt_type {
                    Some(t) => w.field_str("interrupt_type", t.as_str()),
                    None => w.field_null("interrupt_type"),
                }
                (400, None)
            }
            InvokeOutcome::Failed {
                code,
                retry_after_seconds,
            } if is_capacity_code(code) => {
                failure(&mut w, CAPACITY_MESSAGE);
                let secs = retry_after_seconds
                    .map_or(MIN_RETRY_AFTER_SECONDS, |s| s.max(MIN_RETRY_AFTER_SECONDS));
                (503, Some(secs))
            }
            _ => {
                failure(&mut w, FAILURE_MESSAGE);
                (500, None)
            }
        };
        w.field_str("agent_id", ids.agent_id);
        w.field_str("conversation_id", ids.conversation_id);
        match ids.trace_id {
            Some(t) => w.field_str("trace_id", t),
            None => w.field_null("trace_id"),
        }
        w.end_object();
        InvokeResponse {
            status,
            retry_after_seconds,
            body: buf.freeze(),
        }
    }
}

/// Whether a `run.error` code is answered as a capacity failure (503).
pub fn is_capacity_code(code: &str) -> bool {
    CAPACITY_CODES.contains(&code)
}

fn failure(w: &mut JsonWriter<'_>, message: &str) {
    w.field_bool("success", false);
    w.field_str("error", message);
}

/// Appends what fits of `text` to `dst` (at most `max` bytes in all, cut at a
/// character boundary) and counts the rest in `truncated`.
fn push_bounded(dst: &mut String, text: &str, max: usize, truncated: &mut u64) {
    let room = max.saturating_sub(dst.len());
    let mut cut = text.len().min(room);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let (kept, dropped) = text.split_at(cut);
    dst.push_str(kept);
    *truncated = truncated.saturating_add(u64::try_from(dropped.len()).unwrap_or(u64::MAX));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use lce_testkit::RunBuilder;

    const IDS: InvokeIds<'static> = InvokeIds {
        agent_id: "agent",
        conversation_id: "conv",
        trace_id: None,
    };

    fn run(events: &[Event]) -> InvokeAccumulator {
        let mut acc = InvokeAccumulator::new(InvokeOptions::default());
        for e in events {
            acc.feed(e).unwrap();
        }
        acc
    }

    fn body(acc: &InvokeAccumulator) -> String {
        String::from_utf8(acc.response(&IDS).body.to_vec()).unwrap()
    }

    #[test]
    fn no_tool_calls_gives_null_thinking() {
        let mut r = RunBuilder::new("r", "c");
        let acc = run(&[
            r.text_delta("m", "Hello, "),
            r.text_delta("m", "world"),
            r.run_finished(),
        ]);
        assert_eq!(acc.thinking(), None);
        assert_eq!(acc.content(), "Hello, world");
        assert_eq!(
            body(&acc),
            r#"{"success":true,"content":"Hello, world","thinking":null,"agent_id":"agent","conversation_id":"conv","trace_id":null}"#
        );
    }

    #[test]
    fn subagent_text_counts_and_every_shown_start_is_a_boundary() {
        let mut r = RunBuilder::new("r", "c");
        let acc = run(&[
            r.text_delta("m", "a"),
            r.tool_started("t1", "t", r#"{"a":1}"#),
            r.at(["t1"]).text_delta("m", "b"),
            r.tool_started("t2", "t", r#"{"a":1}"#),
            r.tool_finished("t2", "ok"),
            r.text_delta("m", "c"),
            r.root().tool_finished("t1", "ok"),
            r.text_delta("m", "d"),
            r.run_finished(),
        ]);
        // The last boundary is the subagent's own `tool_start` (t2): the
        // subagent's answer after it belongs to `content`.
        assert_eq!(acc.thinking(), Some("ab"));
        assert_eq!(acc.content(), "cd");
    }

    #[test]
    fn a_start_with_nothing_after_it_leaves_empty_content() {
        let mut r = RunBuilder::new("r", "c");
        let acc = run(&[
            r.text_delta("m", "x"),
            r.tool_started("t1", "t", r#"{"a":1}"#),
            r.tool_finished("t1", "ok"),
            r.run_finished(),
        ]);
        assert_eq!(acc.thinking(), Some("x"));
        assert_eq!(acc.content(), "");
    }

    #[test]
    fn a_suppressed_rejected_start_is_no_boundary() {
        let mut r = RunBuilder::new("r", "c");
        let acc = run(&[
            r.text_delta("m", "before "),
            r.tool_started("del", "t", r#"{"a":1}"#),
            r.tool_error("del", "tool_rejected", "no"),
            r.text_delta("m", "after"),
            r.run_finished(),
        ]);
        assert_eq!(acc.thinking(), None);
        assert_eq!(acc.content(), "before after");
        // A rejection of a start already shown is an ordinary event: the
        // start was a boundary.
        let mut r = RunBuilder::new("r", "c");
        let acc = run(&[
            r.text_delta("m", "before "),
            r.tool_started("del", "t", r#"{"a":1}"#),
            r.text_delta("m", "x"),
            r.tool_error("del", "tool_rejected", "no"),
            r.text_delta("m", "after"),
            r.run_finished(),
        ]);
        assert_eq!(acc.thinking(), Some("before "));
        assert_eq!(acc.content(), "xafter");
    }

    #[test]
    fn live_release_is_a_boundary_like_the_encoders() {
        let mut r = RunBuilder::new("r", "c");
        let mut acc = InvokeAccumulator::new(InvokeOptions::default());
        acc.feed(&r.text_delta("m", "a")).unwrap();
        acc.feed(&r.tool_started("del", "t", r#"{"a":1}"#)).unwrap();
        acc.release_ready();
        acc.feed(&r.tool_error("del", "tool_rejected", "no"))
            .unwrap();
        acc.feed(&r.text_delta("m", "b")).unwrap();
        acc.feed(&r.run_finished()).unwrap();
        assert_eq!(acc.thinking(), Some("a"));
        assert_eq!(acc.content(), "b");
    }

    #[test]
    fn text_after_the_interrupt_is_not_counted_and_the_answer_is_400() {
        let mut r = RunBuilder::new("r", "c");
        let start = r.tool_started("t1", "t", r#"{"a":1}"#);
        let req = r.event(
            "interrupt.requested",
            r#"{"interrupt_id":"i","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[]}"#,
        );
        let late = r.text_delta("m", "late");
        let end = r.event(
            "run.interrupted",
            r#"{"interrupt_id":"i","reason":"human_input"}"#,
        );
        let acc = run(&[r.text_delta("m", "x"), start, req, late, end]);
        assert_eq!(acc.content(), "");
        assert_eq!(acc.thinking(), Some("x"));
        let resp = acc.response(&IDS);
        assert_eq!(resp.status, 400);
        assert_eq!(
            String::from_utf8(resp.body.to_vec()).unwrap(),
            format!(
                r#"{{"success":false,"error":"{INTERRUPT_MESSAGE}","interrupt_type":"form_input","agent_id":"agent","conversation_id":"conv","trace_id":null}}"#
            )
        );
    }

    #[test]
    fn capacity_codes_answer_503_with_retry_after_at_least_5() {
        for (code, retry, status, want) in [
            ("capacity_exceeded", Some(30), 503, Some(30)),
            ("capacity_exceeded", Some(2), 503, Some(5)),
            ("rate_limited", None, 503, Some(5)),
            ("provider_unavailable", Some(30), 500, None),
            ("harness_event_invalid", None, 500, None),
        ] {
            let mut r = RunBuilder::new("r", "c");
            let retry = retry.map_or(String::new(), |s: u64| {
                format!(r#","retry_after_seconds":{s}"#)
            });
            let err = r.event("run.error", &format!(
                    r#"{{"code":"{code}","message":"m","retryable":true{retry},"side_effect_status":"none"}}"#
                ),
            );
            let acc = run(&[err]);
            let resp = acc.response(&InvokeIds {
                trace_id: Some("tr"),
                ..IDS
            });
            assert_eq!(
                (resp.status, resp.retry_after_seconds),
                (status, want),
                "{code}"
            );
            let msg = if status == 503 {
                CAPACITY_MESSAGE
            } else {
                FAILURE_MESSAGE
            };
            assert_eq!(
                String::from_utf8(resp.body.to_vec()).unwrap(),
                format!(
                    r#"{{"success":false,"error":"{msg}","agent_id":"agent","conversation_id":"conv","trace_id":"tr"}}"#
                )
            );
        }
    }

    #[test]
    fn cancelled_and_unterminated_runs_answer_500() {
        let mut r = RunBuilder::new("r", "c");
        let cancel = r.event(
            "run.cancelled",
            r#"{"reason":"shutdown","side_effect_status":"none"}"#,
        );
        assert_eq!(
            run(&[r.text_delta("m", "x"), cancel]).response(&IDS).status,
            500
        );
        assert_eq!(run(&[r.text_delta("m", "x")]).response(&IDS).status, 500);
    }

    #[test]
    fn a_cancelled_run_is_cancelled_and_what_follows_is_ignored() {
        let mut r = RunBuilder::new("r", "c");
        let mut acc = InvokeAccumulator::new(InvokeOptions::default());
        acc.feed(&r.text_delta("m", "x")).unwrap();
        assert_eq!(acc.outcome(), &InvokeOutcome::Running);
        acc.feed(&r.run_cancelled()).unwrap();
        assert_eq!(acc.outcome(), &InvokeOutcome::Cancelled);
        // The terminal was the run's last word: a later one changes nothing.
        acc.feed(&r.run_finished()).unwrap();
        assert_eq!(acc.outcome(), &InvokeOutcome::Cancelled);
        assert_eq!(acc.content(), "x");
        assert_eq!(
            body(&acc),
            format!(
                r#"{{"success":false,"error":"{FAILURE_MESSAGE}","agent_id":"agent","conversation_id":"conv","trace_id":null}}"#
            )
        );
    }

    #[test]
    fn a_live_release_of_nothing_is_no_boundary() {
        let mut r = RunBuilder::new("r", "c");
        let mut acc = InvokeAccumulator::new(InvokeOptions::default());
        acc.feed(&r.text_delta("m", "a")).unwrap();
        // Nothing is held: the encoder would write no `tool_start`.
        acc.release_ready();
        acc.feed(&r.text_delta("m", "b")).unwrap();
        acc.release_ready();
        assert_eq!(acc.thinking(), None);
        assert_eq!(acc.content(), "ab");
    }

    #[test]
    fn text_is_bounded_per_part_at_char_boundaries_and_counted() {
        let mut r = RunBuilder::new("r", "c");
        let mut acc = InvokeAccumulator::new(InvokeOptions::default().max_text_bytes(5));
        for e in [
            r.text_delta("m", "abcé"), // 5 bytes: fits
            r.text_delta("m", "zz"),   // dropped
            r.tool_started("t1", "t", r#"{"a":1}"#),
            r.tool_finished("t1", "ok"),
            r.text_delta("m", "éééé"), // 8 bytes: 2 chars kept (4 bytes)
            r.run_finished(),
        ] {
            acc.feed(&e).unwrap();
        }
        assert_eq!(acc.thinking(), Some("abcé"));
        assert_eq!(acc.content(), "éé");
        assert_eq!(acc.truncated_bytes(), 2 + 4);
    }

    #[test]
    fn json_is_compact_utf8_raw_with_python_escapes() {
        let mut r = RunBuilder::new("r", "c");
        let text = r.event(
            "text.delta",
            r#"{"message_id":"m","delta":"Café \"q\"\n\u0001\u007f\ud83d\ude00"}"#,
        );
        let acc = run(&[text, r.run_finished()]);
        // `"`, `\` and C0 escaped; DEL and the astral character raw.
        assert_eq!(
            body(&acc),
            "{\"success\":true,\"content\":\"Café \\\"q\\\"\\n\\u0001\u{7f}\u{1f600}\",\"thinking\":null,\"agent_id\":\"agent\",\"conversation_id\":\"conv\",\"trace_id\":null}"
        );
    }

    #[test]
    fn incomplete_arguments_answer_500() {
        let mut r = RunBuilder::new("r", "c");
        let mut acc = InvokeAccumulator::new(InvokeOptions::default());
        let start = r.tool_started("t", "t", r#"{}"#);
        let delta = r.event(
            "tool.arguments.delta",
            r#"{"tool_call_id":"t","delta":"{\"a\":"}"#,
        );
        acc.feed(&start).unwrap();
        acc.feed(&delta).unwrap();
        assert!(acc.feed(&r.tool_finished("t", "ok")).is_err());
        acc.feed(&r.run_finished()).unwrap();
        assert_eq!(acc.response(&IDS).status, 500);
    }
}
