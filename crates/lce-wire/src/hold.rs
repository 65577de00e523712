//! Holding DA tool starts until they can be shown (decisions D6, D7, D13,
//! D13a, D13b).
//!
//! Both DA wires (`custom` and `agui`) show a tool call once, with its whole
//! arguments object, and DA never shows the duplicate `tool.started` that an
//! adapter re-emits on a resumed run before the call's
//! `tool.error{code: "tool_rejected"}` (D13). [`ToolStartHold`] is the one
//! place that decides when a start may go out; the `custom` and `agui`
//! encoders (and the invoke accumulator) feed it every canonical event and
//! render what it hands back.
//!
//! # The rules
//!
//! - Every `tool.started` is **held**: no frame yet ([`Action::Suppress`]).
//! - A `tool.arguments.delta` of a held call is absorbed into that call's
//!   arguments text ([`Action::Suppress`]). The arguments are complete when
//!   given at start, or (D6) at the first later event that is not a delta of
//!   that call.
//! - While the stream carries only `tool.started`, `tool.arguments.delta` of
//!   held calls, and `tool.error{code: "tool_rejected"}` of held calls, the
//!   starts stay held. A held call that ends `tool_rejected` is **dropped**:
//!   neither its start nor its end is shown ([`Action::Suppress`] for the
//!   error).
//! - At the first other event, whatever it is (run terminals included, so a
//!   `run.cancelled` still lets the held starts out first), every held call is
//!   **released**, in the order the calls started, before the event itself is
//!   rendered ([`Action::Emit`]).
//! - Live streams (D13a): when the upstream has no event ready,
//!   [`ToolStartHold::release_ready`] releases every held call whose
//!   arguments are settled: given non-empty at start, or streamed deltas
//!   that already form one complete JSON object. So a running tool is never
//!   hidden while it runs, and a start frame never carries arguments that a
//!   later delta changes: a call given `{}` (D6: arguments to be streamed)
//!   stays held until its deltas complete or its next non-delta event. Input read from a file is always ready: a
//!   file-driven encoder never calls it and its output is deterministic.
//! - Empty deltas (`text.delta`, `reasoning.delta`, `tool.arguments.delta`
//!   with `""`) are dropped before anything else (D7): they are not events
//!   for the rules above, never release anything and are always
//!   [`Action::Suppress`].
//!
//! A released call carries what a start frame needs: id, name, the raw
//! arguments JSON text ([`ArgsSource`]), its namespace and the timestamp of
//! its `tool.started` (D13b).
//!
//! The hold is not a validator: a stream that breaks the contract never makes
//! it panic. Deltas for a call whose arguments were given at start, or for a
//! call not held, are ignored; a call released with arguments that are not
//! one complete JSON object says so through [`ArgsSource::is_complete`], and
//! the encoder decides (the DA encoders refuse to write it).
//!
//! ```
//! use lce_types::Event;
//! use lce_wire::hold::{Action, ToolStartHold};
//!
//! let ev = |seq: u64, ty: &str, data: &str| {
//!     Event::from_json(&format!(
//!         r#"{{"version":1,"type":"{ty}","run_id":"r","conversation_id":"c","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
//!     ))
//!     .unwrap()
//! };
//! let mut hold = ToolStartHold::new();
//! let start = ev(1, "tool.started",
//!     r#"{"tool_call_id":"t1","tool_name":"search","arguments":{"q":"rbac"}}"#);
//! {
//!     let step = hold.feed(&start);
//!     assert_eq!(step.action, Action::Suppress); // held
//!     assert_eq!(step.released.count(), 0);
//! }
//! let step = hold.feed(&ev(2, "tool.finished", r#"{"tool_call_id":"t1","result":"ok"}"#));
//! assert_eq!(step.action, Action::Emit); // render after the released starts
//! let released: Vec<_> = step.released.collect();
//! assert_eq!(released[0].tool_call_id, "t1");
//! assert_eq!(released[0].args.json(), r#"{"q":"rbac"}"#);
//! assert_eq!(released[0].timestamp, start.timestamp); // D13b
//! ```

use lce_types::{Event, JsonObject, Payload, TOOL_REJECTED, Timestamp};

/// The default bound on one call's streamed arguments text: 256 KiB (D19).
/// Bytes past it are not kept and the arguments count as incomplete.
pub const DEFAULT_MAX_ARGUMENTS_BYTES: usize = 256 * 1024;

/// What the encoder does with the event it just fed to the hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Render the event as the wire renders it (after the released starts).
    Emit,
    /// Render nothing for this event: a start now held, a delta absorbed, a
    /// rejected held call dropped, or an empty delta (D7).
    Suppress,
}

/// A tool call whose start frame may now go out.
#[derive(Clone, Debug, PartialEq)]
pub struct Released {
    /// The call's id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The complete arguments (see [`ArgsSource::is_complete`]).
    pub args: ArgsSource,
    /// The namespace of the call's `tool.started`.
    pub namespace: Vec<String>,
    /// The timestamp of the call's `tool.started` (D13b).
    pub timestamp: Timestamp,
    /// The `parent_message_id` of the call's `tool.started`, if any.
    pub parent_message_id: Option<String>,
}

/// The arguments of a call: given whole at start, or assembled from deltas.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgsSource {
    repr: ArgsRepr,
}

#[derive(Clone, Debug, PartialEq)]
enum ArgsRepr {
    /// The `arguments` of `tool.started` (no delta came).
    Given(JsonObject),
    /// The concatenated non-empty deltas.
    Streamed {
        text: String,
        scan: ObjectScan,
        overflow: bool,
        /// Set once the scan sees the object close: whether the text is
        /// then one strictly valid JSON object (checked once, D6/D17).
        valid: Option<bool>,
    },
}

impl ArgsSource {
    /// The arguments' JSON text: the started `arguments` byte-exact, or the
    /// concatenated deltas. Transcode it with [`crate::JsonWriter::opaque`].
    pub fn json(&self) -> &str {
        match &self.repr {
            ArgsRepr::Given(o) => o.get(),
            ArgsRepr::Streamed { text, .. } => text,
        }
    }

    /// `true` when the text is one complete, valid JSON object: always for
    /// arguments given at start; for deltas, when they close the object they
    /// open with only whitespace after it, stayed within the bound, and the
    /// whole text then parses strictly as one object (D6, D17). A cheap
    /// structural scan runs per delta; the strict parse runs once, when the
    /// scan sees the object close.
    pub fn is_complete(&self) -> bool {
        match &self.repr {
            ArgsRepr::Given(_) => true,
            ArgsRepr::Streamed {
                scan,
                overflow,
                valid,
                ..
            } => !overflow && scan.is_complete() && *valid == Some(true),
        }
    }

    /// `true` when the arguments came as `tool.arguments.delta`s.
    pub fn is_streamed(&self) -> bool {
        matches!(self.repr, ArgsRepr::Streamed { .. })
    }

    /// `true` when a live stream may show these arguments now (D13a): they
    /// are complete and no later delta can change them. Arguments given at
    /// start are settled unless they are `{}` (D6: how a harness announces
    /// that its arguments stream as deltas); streamed arguments once they
    /// form one complete object ([`is_complete`](Self::is_complete)). A
    /// call given `{}` that never streams is released at its next non-delta
    /// event, like every held call.
    pub fn is_settled(&self) -> bool {
        match &self.repr {
            ArgsRepr::Given(o) => !o.is_empty_object(),
            ArgsRepr::Streamed { .. } => self.is_complete(),
        }
    }
}

/// Incremental structural scan of a JSON text that must be one object (D6):
/// the one scan both the hold and the validator run over streamed tool
/// arguments, so they agree on when arguments are complete.
///
/// Looks only at ASCII bytes, so text split anywhere (mid-token, mid-escape,
/// mid-UTF-8 sequence) scans the same as the whole. It checks structure, not
/// validity: a complete scan still needs one strict parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ObjectScan {
    state: ScanState,
    depth: u32,
    in_string: bool,
    escaped: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum ScanState {
    /// Nothing but whitespace so far.
    #[default]
    Start,
    /// Inside the top-level object.
    Open,
    /// The object closed; only whitespace after it.
    Done,
    /// Not one object (wrong first byte, text after the end).
    Bad,
}

impl ObjectScan {
    /// Scans the next piece of the text.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            i += 1;
            if self.in_string && !self.escaped && b != b'"' && b != b'\\' {
                // Jump to the next quote or backslash: string bodies are most
                // of the arguments.
                match memchr::memchr2(b'"', b'\\', bytes.get(i..).unwrap_or(&[])) {
                    Some(k) => i += k,
                    None => return,
                }
                continue;
            }
            match self.state {
                ScanState::Bad => return,
                ScanState::Start => match b {
                    b' ' | b'\t' | b'\n' | b'\r' => {}
                    b'{' => {
                        self.state = ScanState::Open;
                        self.depth = 1;
                    }
                    _ => self.state = ScanState::Bad,
                },
                ScanState::Done => {
                    if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                        self.state = ScanState::Bad;
                    }
                }
                ScanState::Open => {
                    if self.in_string {
                        if self.escaped {
                            self.escaped = false;
                        } else if b == b'\\' {
                            self.escaped = true;
                        } else if b == b'"' {
                            self.in_string = false;
                        }
                        continue;
                    }
                    match b {
                        b'"' => self.in_string = true,
                        b'{' | b'[' => self.depth = self.depth.saturating_add(1),
                        b'}' | b']' => {
                            self.depth = self.depth.saturating_sub(1);
                            if self.depth == 0 {
                                self.state = ScanState::Done;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// `true` when the text so far is one whole object with only
    /// whitespace after it.
    pub fn is_complete(&self) -> bool {
        self.state == ScanState::Done
    }

    /// `true` when no continuation can make the text one object: it does
    /// not start with `{`, or something other than whitespace follows the
    /// object's end.
    pub fn is_broken(&self) -> bool {
        self.state == ScanState::Bad
    }
}

/// The D13 tool-start holding state machine; see the [module docs](self).
#[derive(Debug)]
pub struct ToolStartHold {
    /// Held calls, in start order.
    held: Vec<Released>,
    /// Calls released by the current step, handed out by [`Step::released`].
    out: Vec<Released>,
    max_arguments_bytes: usize,
}

impl Default for ToolStartHold {
    fn default() -> Self {
        Self::new()
    }
}

/// The hold's answer to one event.
#[derive(Debug)]
#[must_use = "released starts must be rendered before the event"]
pub struct Step<'a> {
    /// What to do with the event itself, once the released starts are out.
    pub action: Action,
    /// The starts to render first, in order. Dropping it unread discards them.
    pub released: std::vec::Drain<'a, Released>,
}

impl ToolStartHold {
    /// An empty hold with the default arguments bound.
    pub fn new() -> Self {
        Self::with_max_arguments_bytes(DEFAULT_MAX_ARGUMENTS_BYTES)
    }

    /// An empty hold keeping at most `max` bytes of one call's streamed
    /// arguments (more makes them incomplete instead of growing memory).
    pub fn with_max_arguments_bytes(max: usize) -> Self {
        ToolStartHold {
            held: Vec::new(),
            out: Vec::new(),
            max_arguments_bytes: max,
        }
    }

    /// How many calls are held.
    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    /// `true` when no call is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    fn position(&self, tool_call_id: &str) -> Option<usize> {
        self.held
            .iter()
            .position(|h| h.tool_call_id == tool_call_id)
    }

    fn step(&mut self, action: Action) -> Step<'_> {
        Step {
            action,
            released: self.out.drain(..),
        }
    }

    /// Feeds the next canonical event; the returned [`Step`] lists the starts
    /// to render now (before the event) and what to do with the event.
    pub fn feed(&mut self, event: &Event) -> Step<'_> {
        self.out.clear();
        match &event.payload {
            // D7: empty deltas are not events at all.
            Payload::TextDelta(d) | Payload::ReasoningDelta(d) if d.delta.is_empty() => {
                self.step(Action::Suppress)
            }
            Payload::ToolArgumentsDelta(d) if d.delta.is_empty() => self.step(Action::Suppress),

            Payload::ToolStarted(s) => {
                self.held.push(Released {
                    tool_call_id: s.tool_call_id.clone(),
                    tool_name: s.tool_name.clone(),
                    args: ArgsSource {
                        repr: ArgsRepr::Given(s.arguments.clone()),
                    },
                    namespace: event.namespace.clone(),
                    timestamp: event.timestamp.clone(),
                    parent_message_id: s.parent_message_id.clone(),
                });
                self.step(Action::Suppress)
            }
            Payload::ToolArgumentsDelta(d) => match self.position(&d.tool_call_id) {
                Some(i) => {
                    let max = self.max_arguments_bytes;
                    if let Some(h) = self.held.get_mut(i) {
                        append_delta(&mut h.args, &d.delta, max);
                    }
                    self.step(Action::Suppress)
                }
                None => self.release_all_and(Action::Emit),
            },
            Payload::ToolError(e) if e.code == TOOL_REJECTED => {
                match self.position(&e.tool_call_id) {
                    Some(i) => {
                        // Dropped: neither start nor end is shown.
                        self.held.remove(i);
                        self.step(Action::Suppress)
                    }
                    None => self.release_all_and(Action::Emit),
                }
            }
            Payload::RunError(_) | Payload::RunCancelled(_) => {
                // A run may fail or be cancelled while a call is still
                // receiving its arguments (D5). Such a call never had
                // complete arguments, so DA never showed it: drop it.
                self.held.retain(|h| h.args.is_complete());
                self.release_all_and(Action::Emit)
            }
            _ => self.release_all_and(Action::Emit),
        }
    }

    fn release_all_and(&mut self, action: Action) -> Step<'_> {
        std::mem::swap(&mut self.held, &mut self.out);
        self.step(action)
    }

    /// D13a, for live streams only: call when the upstream has no event
    /// ready. Releases, in start order, every held call whose arguments are
    /// settled ([`ArgsSource::is_settled`]); calls given `{}` and calls still
    /// receiving deltas stay held, so a start frame never carries arguments
    /// that a later delta changes.
    pub fn release_ready(&mut self) -> std::vec::Drain<'_, Released> {
        self.out.clear();
        let mut i = 0;
        while i < self.held.len() {
            if self.held.get(i).is_some_and(|h| h.args.is_settled()) {
                self.out.push(self.held.remove(i));
            } else {
                i += 1;
            }
        }
        self.out.drain(..)
    }

    /// Releases every held call, complete or not (end of input without a
    /// terminal, which the contract forbids; a caller that wants the partial
    /// output may show them).
    pub fn release_all(&mut self) -> std::vec::Drain<'_, Released> {
        self.out.clear();
        std::mem::swap(&mut self.held, &mut self.out);
        self.out.drain(..)
    }
}

/// Appends a non-empty delta (D6); ignored when the arguments were given
/// non-empty at start (a contract violation the validator reports).
fn append_delta(args: &mut ArgsSource, delta: &str, max: usize) {
    if let ArgsRepr::Given(o) = &args.repr {
        if !o.is_empty_object() {
            return;
        }
        args.repr = ArgsRepr::Streamed {
            text: String::new(),
            scan: ObjectScan::default(),
            overflow: false,
            valid: None,
        };
    }
    if let ArgsRepr::Streamed {
        text,
        scan,
        overflow,
        valid,
    } = &mut args.repr
    {
        if *overflow || text.len().saturating_add(delta.len()) > max {
            *overflow = true;
            return;
        }
        text.push_str(delta);
        scan.feed(delta.as_bytes());
        if scan.is_complete() {
            if valid.is_none() {
                *valid = Some(JsonObject::from_json(text).is_ok());
            }
        } else {
            // More text after a close (or a reopened value): judge again
            // when the scan next sees a complete object.
            *valid = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lce_testkit::RunBuilder;

    /// Feeds and returns (action, released ids).
    fn feed(h: &mut ToolStartHold, e: &Event) -> (Action, Vec<String>) {
        let step = h.feed(e);
        let action = step.action;
        (action, step.released.map(|r| r.tool_call_id).collect())
    }

    fn feed_full(h: &mut ToolStartHold, e: &Event) -> (Action, Vec<Released>) {
        let step = h.feed(e);
        let action = step.action;
        (action, step.released.collect())
    }

    #[test]
    fn start_released_at_its_finish_with_its_own_timestamp() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let start = r.tool_started("a", "t_a", r#"{"q": "x"}"#);
        assert_eq!(feed(&mut h, &start), (Action::Suppress, vec![]));
        let (action, rel) = feed_full(&mut h, &r.tool_finished("a", "ok"));
        assert_eq!(action, Action::Emit);
        assert_eq!(rel.len(), 1);
        assert_eq!(rel[0].timestamp, start.timestamp);
        assert_eq!(rel[0].tool_name, "t_a");
        assert_eq!(rel[0].args.json(), r#"{"q": "x"}"#);
        assert!(rel[0].args.is_complete());
        assert!(!rel[0].args.is_streamed());
        assert!(h.is_empty());
    }

    #[test]
    fn d13_resumed_run_drops_rejected_call() {
        // resumed-after-rejected-approval: start, tool_rejected, text, finish.
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        assert_eq!(feed(&mut h, &r.run_started()), (Action::Emit, vec![]));
        assert_eq!(
            feed(&mut h, &r.tool_started("del", "t", r#"{"path":"/tmp/a"}"#)),
            (Action::Suppress, vec![])
        );
        assert_eq!(
            feed(&mut h, &r.tool_error("del", TOOL_REJECTED, "m")),
            (Action::Suppress, vec![])
        );
        assert_eq!(
            feed(&mut h, &r.text_delta("m", "ok")),
            (Action::Emit, vec![])
        );
        assert!(h.is_empty());
    }

    #[test]
    fn rejected_call_among_others_keeps_the_rest_in_order() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        for id in ["a", "b", "c"] {
            assert_eq!(
                feed(&mut h, &r.tool_started(id, "t", "{}")),
                (Action::Suppress, vec![])
            );
        }
        assert_eq!(
            feed(&mut h, &r.tool_arguments_delta("a", "{}")),
            (Action::Suppress, vec![])
        );
        assert_eq!(
            feed(&mut h, &r.tool_error("b", TOOL_REJECTED, "m")),
            (Action::Suppress, vec![])
        );
        assert_eq!(h.held_len(), 2);
        assert_eq!(
            feed(&mut h, &r.tool_finished("a", "ok")),
            (Action::Emit, vec!["a".into(), "c".into()])
        );
    }

    #[test]
    fn non_rejection_error_releases_and_emits() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", "{}"));
        assert_eq!(
            feed(&mut h, &r.tool_error("a", "tool_error", "m")),
            (Action::Emit, vec!["a".into()])
        );
        // A rejection of a call no longer held is rendered like any error.
        assert_eq!(
            feed(&mut h, &r.tool_error("zz", TOOL_REJECTED, "m")),
            (Action::Emit, vec![])
        );
    }

    #[test]
    fn parallel_calls_released_together_in_start_order() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", r#"{"x":1}"#));
        let _ = feed(&mut h, &r.tool_started("b", "t", r#"{"y":2}"#));
        assert_eq!(
            feed(&mut h, &r.tool_finished("b", "ok")),
            (Action::Emit, vec!["a".into(), "b".into()])
        );
        assert_eq!(
            feed(&mut h, &r.tool_finished("a", "ok")),
            (Action::Emit, vec![])
        );
    }

    #[test]
    fn held_starts_go_out_on_run_cancelled() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", r#"{"x":1}"#));
        let _ = feed(&mut h, &r.tool_started("b", "t", "{}"));
        let _ = feed(&mut h, &r.tool_arguments_delta("b", r#"{"k":"#));
        let cancel = r.event(
            "run.cancelled",
            r#"{"reason":"deadline","side_effect_status":"possible"}"#,
        );
        let (action, rel) = feed_full(&mut h, &cancel);
        assert_eq!(action, Action::Emit);
        let ids: Vec<_> = rel.iter().map(|r| r.tool_call_id.as_str()).collect();
        // The second one's deltas never completed: it was never a call DA
        // would show, so it is dropped rather than sent half-made.
        assert_eq!(ids, ["a"]);
        assert!(rel[0].args.is_complete());
    }

    #[test]
    fn balanced_but_invalid_streamed_arguments_are_not_complete() {
        // The scan sees the object close, but a delta went missing: the key
        // is followed by `,`. Such a call is not shown, and is dropped at an
        // error terminal instead of failing the encoder.
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", "{}"));
        let _ = feed(&mut h, &r.tool_arguments_delta("a", r#"{"k","v":1}"#));
        assert!(h.release_ready().next().is_none());
        let err = r.event(
            "run.error",
            r#"{"code":"x","message":"m","retryable":false,"side_effect_status":"possible"}"#,
        );
        let (_, rel) = feed_full(&mut h, &err);
        assert!(rel.is_empty());
    }

    #[test]
    fn deltas_split_mid_token_and_mid_escape_assemble() {
        let whole = r#"{"ti\"tle": "Cr\u00e9dit \\ ref", "n": [12.5, {"a": "}"}], "e": "é"}"#;
        // Every split point, including inside `\u00e9`, `\"` and the UTF-8 of é.
        for cut in 1..whole.len() {
            if !whole.is_char_boundary(cut) {
                continue;
            }
            let mut r = RunBuilder::new("r", "c");
            let mut h = ToolStartHold::new();
            let _ = feed(&mut h, &r.tool_started("a", "t", "{}"));
            let _ = feed(&mut h, &r.tool_arguments_delta("a", &whole[..cut]));
            // Not complete before the last piece.
            assert_eq!(h.release_ready().count(), 0, "cut {cut}");
            let _ = feed(&mut h, &r.tool_arguments_delta("a", &whole[cut..]));
            let (_, rel) = feed_full(&mut h, &r.tool_finished("a", "ok"));
            assert_eq!(rel[0].args.json(), whole);
            assert!(rel[0].args.is_complete());
            assert!(rel[0].args.is_streamed());
        }
    }

    #[test]
    fn scan_is_byte_split_safe_mid_utf8() {
        // Split inside the two bytes of é: scanning the halves equals the whole.
        let whole = "{\"k\": \"é}\"}".as_bytes();
        for cut in 0..=whole.len() {
            let mut s = ObjectScan::default();
            s.feed(&whole[..cut]);
            s.feed(&whole[cut..]);
            assert!(s.is_complete());
        }
    }

    #[test]
    fn release_ready_releases_only_settled_calls() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", "{}"));
        let _ = feed(&mut h, &r.tool_arguments_delta("a", r#"{"q":"#));
        let _ = feed(&mut h, &r.tool_started("b", "t", r#"{"x":1}"#));
        let _ = feed(&mut h, &r.tool_started("c", "t", "{}"));
        let ids: Vec<_> = h.release_ready().map(|r| r.tool_call_id).collect();
        // c has no delta yet: `{}` announces streamed arguments (D6, D13a
        // amended), so it is not settled and stays held.
        assert_eq!(ids, ["b"]);
        let _ = feed(&mut h, &r.tool_arguments_delta("a", "1}"));
        let ids: Vec<_> = h.release_ready().map(|r| r.tool_call_id).collect();
        assert_eq!(ids, ["a"]);
        assert_eq!(h.held_len(), 1);
        // Once released, a rejection is an ordinary event (and c, never
        // streamed, goes out with its `{}` at this first non-delta event).
        let (action, rel) = feed_full(&mut h, &r.tool_error("a", TOOL_REJECTED, "m"));
        assert_eq!(action, Action::Emit);
        assert_eq!(rel.len(), 1);
        assert_eq!(rel[0].tool_call_id, "c");
        assert_eq!(rel[0].args.json(), "{}");
        assert!(h.is_empty());
    }

    #[test]
    fn a_start_given_empty_arguments_waits_for_its_deltas_while_idle() {
        // The live bug of issue 16: `{}` released at the first idle moment
        // sent `"args": {}` and lost the deltas that followed.
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", "{}"));
        assert_eq!(h.release_ready().count(), 0);
        let _ = feed(&mut h, &r.tool_arguments_delta("a", r#"{"title": "#));
        assert_eq!(h.release_ready().count(), 0);
        let _ = feed(&mut h, &r.tool_arguments_delta("a", r#""x"}"#));
        let rel: Vec<_> = h.release_ready().collect();
        assert_eq!(rel.len(), 1);
        assert_eq!(rel[0].args.json(), r#"{"title": "x"}"#);
        assert!(rel[0].args.is_settled());
    }

    #[test]
    fn empty_deltas_are_not_events() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::new();
        let _ = feed(&mut h, &r.tool_started("a", "t", r#"{"x":1}"#));
        assert_eq!(
            feed(&mut h, &r.text_delta("m", "")),
            (Action::Suppress, vec![])
        );
        assert_eq!(
            feed(&mut h, &r.tool_arguments_delta("a", "")),
            (Action::Suppress, vec![])
        );
        assert_eq!(h.held_len(), 1);
        assert_eq!(
            feed(&mut h, &r.text_delta("m", "x")),
            (Action::Emit, vec!["a".into()])
        );
    }

    #[test]
    fn malformed_streams_never_panic() {
        let mut r = RunBuilder::new("r", "c");
        let mut h = ToolStartHold::with_max_arguments_bytes(8);
        let _ = feed(&mut h, &r.tool_started("a", "t", r#"{"given":1}"#));
        // Delta after non-empty start arguments: ignored.
        let _ = feed(&mut h, &r.tool_arguments_delta("a", "zzz"));
        let _ = feed(&mut h, &r.tool_started("b", "t", "{}"));
        let _ = feed(&mut h, &r.tool_arguments_delta("b", "[1]"));
        let _ = feed(&mut h, &r.tool_started("c", "t", "{}"));
        let _ = feed(
            &mut h,
            &r.tool_arguments_delta("c", r#"{"long": "over the bound"}"#),
        );
        let _ = feed(&mut h, &r.tool_started("d", "t", "{}"));
        let _ = feed(&mut h, &r.tool_arguments_delta("d", "{}}}}}"));
        let (_, rel) = feed_full(&mut h, &r.tool_finished("a", "ok"));
        assert_eq!(rel[0].args.json(), r#"{"given":1}"#);
        assert!(rel[0].args.is_complete());
        assert!(!rel[1].args.is_complete());
        assert!(!rel[2].args.is_complete());
        assert!(!rel[3].args.is_complete());
        // A delta of an unknown call releases nothing held and is emitted.
        assert_eq!(
            feed(&mut h, &r.tool_arguments_delta("nope", "{")),
            (Action::Emit, vec![])
        );
        assert_eq!(h.release_all().count(), 0);
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;
    use proptest::prelude::*;

    /// The scan's rules one byte at a time, with no jumps: (complete, bad).
    fn reference(text: &[u8]) -> (bool, bool) {
        let (mut state, mut depth, mut in_string, mut escaped) = (0u8, 0u32, false, false);
        for &b in text {
            match state {
                0 if matches!(b, b' ' | b'\t' | b'\n' | b'\r') => {}
                0 if b == b'{' => (state, depth) = (1, 1),
                0 => state = 3,
                2 if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') => state = 3,
                1 if in_string => {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                }
                1 => match b {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            state = 2;
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        (state == 2, state == 3)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn split_scan_matches_reference(
            text in "[ {}\\[\\]\"\\\\a:,1é]{0,60}",
            cuts in proptest::collection::vec(0usize..60, 0..6),
        ) {
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c <= bytes.len()).collect();
            cuts.sort_unstable();
            let mut scan = ObjectScan::default();
            let mut from = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                scan.feed(bytes.get(from..c).unwrap_or(&[]));
                from = c;
            }
            let (complete, bad) = reference(bytes);
            prop_assert_eq!(scan.is_complete(), complete);
            prop_assert_eq!(scan.state == ScanState::Bad, bad);
        }
    }
}
