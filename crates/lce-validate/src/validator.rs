//! The streaming validator: one event at a time, constant work per event.
//!
//! The checks read alike (`if .. { return fail(Rule::X, format!(..)) }`) on
//! purpose: each is one rule's condition with its own message, written out
//! next to it, so a message can be checked against its condition at a glance.

use std::sync::Arc;

use lce_types::{
    Event, EventType, InterruptType, JsonObject, NamespaceOutcome, Payload, RunFinished,
    RunInterrupted, SpanFinished, SpanStarted, THREAD_DURABILITY_UNCERTAIN, ToolArgumentsDelta,
    ToolStarted,
};

use crate::options::{Mode, ValidatorOptions};
use crate::registry::{Closable, Registry, same_str};
use crate::rule::{Rule, Violation, safe_code, safe_id};
use crate::size::{canonical_size, identity_size, span_delta_size};
use lce_wire::json_string_len;

/// A violation's message about one id: `{event} {what} {id} {rest}`, as in
/// "tool.error for call `t` that already finished", the id as [`safe_id`]
/// shows it (`what` names the id: "for call", "in namespace", ...). Cold:
/// only a violation writes a message.
#[cold]
#[inline(never)]
fn about(
    event: impl std::fmt::Display,
    what: &str,
    id: &str,
    rest: impl std::fmt::Display,
) -> String {
    format!("{event} {what} {} {rest}", safe_id(id))
}

/// A namespace's number, unique in the run (never reused, so a closed span
/// or call never matches a later namespace); 0 is root.
type NsId = u32;
const ROOT: NsId = 0;

/// Which terminal ended the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Terminal {
    /// `run.finished`, `run.interrupted`, `run.cancelled` or an ordinary `run.error`.
    Ordinary(EventType),
    /// `run.error{code: thread_durability_uncertain}` (rule 15).
    DurabilityUncertain,
}

/// A text or reasoning span.
#[derive(Clone, Copy, Debug)]
struct Span {
    ns: NsId,
    open: bool,
    /// The JSON size of its `message_id` (rule 11's byte count of a delta).
    id_size: u64,
}

impl Closable for Span {
    fn is_closed(&self) -> bool {
        !self.open
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ToolEnd {
    Open,
    Finished,
    Errored,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Child {
    /// No namespace was entered for this call.
    None,
    /// A namespace entered for this call is active.
    Active,
    /// The namespace entered for this call has exited.
    Exited,
}

#[derive(Clone, Copy, Debug)]
struct Tool {
    ns: NsId,
    end: ToolEnd,
    /// Started with `{}`: arguments may stream (D6).
    streamed: bool,
    child: Child,
}

impl Closable for Tool {
    fn is_closed(&self) -> bool {
        self.end != ToolEnd::Open
    }
}

/// An entered namespace (D1): its path element is the delegation call id
/// (its key in `RunValidator::namespaces`).
#[derive(Clone, Debug)]
struct Namespace {
    id: NsId,
    /// The full path of events inside it (parent path + delegation call id).
    path: Vec<String>,
    agent_id: String,
    parent: NsId,
    active: bool,
    active_children: u32,
}

impl Closable for Namespace {
    fn is_closed(&self) -> bool {
        !self.active
    }
}

/// Arguments being streamed for the call that `tool.started` with `{}` (D6).
/// At most one at a time: any event other than a delta of that call ends it.
#[derive(Clone, Debug)]
struct Assembly {
    tool_call_id: String,
    tool_name: String,
    buf: String,
    /// The structure of `buf` so far (D6): a delta that continues an object
    /// already complete is caught at that delta.
    scan: lce_wire::hold::ObjectScan,
    /// A non-empty delta arrived (else the arguments are the started `{}`).
    any: bool,
}

/// The pending interrupt (between `interrupt.requested` and its terminal).
#[derive(Clone, Debug)]
struct Pending {
    interrupt_id: String,
    interrupt_type: InterruptType,
}

/// Validates one run against the contract's state-machine rules, one event at
/// a time.
///
/// Feed every event with [`push`](RunValidator::push), then call
/// [`finish`](RunValidator::finish) when the input ends. Each returns the
/// first [`Violation`] found. The validator never panics, whatever the input.
///
/// After a violation the validator stays failed: every later `push` and
/// `finish` returns that same violation, until
/// [`clear_failure`](RunValidator::clear_failure) is called (as `lce check
/// --all` does) to go on, mostly as if the violating event had been dropped
/// (D8).
///
/// Work per event is constant (hash look-ups by borrowed `&str`, and a
/// comparison of the namespace path, at most `limits.namespace_depth`
/// elements), plus linear work in the event's own size to measure it (rule
/// 11) and to parse assembled arguments once (D6).
///
/// Memory is bounded whatever the length of the run: the open spans, calls
/// and namespaces (exactly), the last
/// [`closed_window`](ValidatorOptions::closed_window) closed ids of each kind
/// (256 by default), and the arguments of the call currently streaming them
/// (up to `limits.tool_arguments_bytes`). Nothing grows with deltas. An id
/// closed longer ago than the window is forgotten: a later event naming it
/// is still a violation (the message then says "never started (or finished
/// long ago)"), but a second *start* of it is accepted. With
/// [`ValidatorOptions::exact`] every closed id is remembered instead.
///
/// ```
/// use lce_types::Event;
/// use lce_validate::{RunValidator, ValidatorOptions, Rule};
///
/// let lines = [
///     r#"{"version":1,"type":"run.started","run_id":"r","conversation_id":"c","sequence":0,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"harness_id":"h","adapter_version":"1"}}"#,
///     r#"{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"message_id":"m","delta":"hi"}}"#,
/// ];
/// let mut v = RunValidator::new(ValidatorOptions::new());
/// v.push(&Event::from_json(lines[0]).unwrap()).unwrap();
/// let err = v.push(&Event::from_json(lines[1]).unwrap()).unwrap_err();
/// assert_eq!(err.rule, Rule::TextSpan);
/// assert_eq!(err.to_string(), "seq 1: rule 5 (text_span): text.delta for message `m` that was never started");
/// ```
#[derive(Debug)]
pub struct RunValidator {
    opts: ValidatorOptions,
    failed: Option<Violation>,
    /// `run_id` and `conversation_id` of the run, from its first event.
    identity: Option<(Arc<str>, Arc<str>)>,
    /// Their JSON size, quotes included (rule 11's byte count, per event).
    identity_size: u64,
    last: Option<(u64, EventType)>,
    started: bool,
    terminal: Option<Terminal>,
    events: u64,
    bytes: u64,
    pending: Option<Pending>,
    texts: Registry<Span>,
    reasonings: Registry<Span>,
    open_texts: usize,
    open_reasonings: usize,
    tools: Registry<Tool>,
    open_tools: usize,
    /// By delegation call id (the last element of the namespace's path).
    namespaces: Registry<Namespace>,
    /// The `NsId` of the last namespace entered.
    last_ns: NsId,
    active_namespaces: usize,
    assembly: Option<Assembly>,
}

type Step = Result<(), Violation>;

impl RunValidator {
    /// A validator for one run.
    pub fn new(options: ValidatorOptions) -> Self {
        let window = options.closed_window;
        let identity = options.identity.clone();
        let identity_size = identity.as_ref().map_or(0, |(run_id, conversation_id)| {
            identity_size(run_id, conversation_id)
        });
        RunValidator {
            opts: options,
            failed: None,
            identity,
            identity_size,
            last: None,
            started: false,
            terminal: None,
            events: 0,
            bytes: 0,
            pending: None,
            texts: Registry::new(window),
            reasonings: Registry::new(window),
            open_texts: 0,
            open_reasonings: 0,
            tools: Registry::new(window),
            open_tools: 0,
            namespaces: Registry::new(window),
            last_ns: ROOT,
            active_namespaces: 0,
            assembly: None,
        }
    }

    /// The options in force.
    pub fn options(&self) -> &ValidatorOptions {
        &self.opts
    }

    /// Checks the next event of the run.
    ///
    /// Rules are checked in this order, and the first broken one is
    /// reported: run identity (X); sequence (1, then 1/D3 when enabled);
    /// events after a terminal (15, 3, 4); `run.started` (2); limits on
    /// events and bytes per run (11); the event's namespace (10); the
    /// interrupt window (8, then 8/D4); completion of streamed arguments
    /// (6/D6); then the event's own rules.
    pub fn push(&mut self, event: &Event) -> Result<(), Violation> {
        if let Some(v) = &self.failed {
            return Err(v.clone());
        }
        if self.span_delta(event) {
            return Ok(());
        }
        match self.step(event) {
            Ok(()) => Ok(()),
            Err(v) => {
                self.failed = Some(v.clone());
                Err(v)
            }
        }
    }

    /// Tells the validator the input ended: rule 12 when no terminal was seen
    /// (reported at the last event's sequence, 0 for an empty input).
    pub fn finish(&mut self) -> Result<(), Violation> {
        if let Some(v) = &self.failed {
            return Err(v.clone());
        }
        if self.terminal.is_some() {
            return Ok(());
        }
        let (sequence, event_type) = match self.last {
            Some((s, t)) => (s, Some(t)),
            None => (0, None),
        };
        let message = if self.last.is_none() {
            "input ended without any event".to_owned()
        } else {
            "input ended without a run terminal".to_owned()
        };
        let v = Violation::new(Rule::MissingTerminal, sequence, event_type, message);
        self.failed = Some(v.clone());
        Err(v)
    }

    /// The violation the validator is stuck on, if any.
    pub fn failure(&self) -> Option<&Violation> {
        self.failed.as_ref()
    }

    /// Forgets the last violation and goes on as if the violating event had
    /// been dropped (D8): its effects are not applied. Exceptions: streamed
    /// arguments it completed stay complete, and when the only fault was
    /// those arguments (D6 at completion) the event itself was applied. Two
    /// recoveries keep one mistake from flagging every later event:
    ///
    /// - a run whose first event is not a valid `run.started` (rule 2) is
    ///   treated as started;
    /// - a terminal rejected for what it says or leaves open (rules 8, 10, 11,
    ///   13, 14, and D5's and D6's checks) still ends the run, so later events
    ///   are rule 4 and the end of input is not rule 12.
    ///
    /// Later events may still report consequences of the first violation.
    /// `lce check --all` uses this.
    pub fn clear_failure(&mut self) {
        let Some(v) = self.failed.take() else {
            return;
        };
        match (v.rule, v.event_type) {
            (Rule::RunStarted, _) if !self.started => self.started = true,
            (
                Rule::Interrupt
                | Rule::NamespaceActive
                | Rule::Limits
                | Rule::ThreadDurability
                | Rule::PendingInterrupt
                | Rule::D5OpenText
                | Rule::D5OpenTool
                | Rule::D5OpenNamespace
                | Rule::D6Arguments,
                Some(t),
            ) if t.is_terminal() && self.started && self.terminal.is_none() => {
                self.terminal = Some(Terminal::Ordinary(t));
            }
            _ => {}
        }
    }

    /// `true` once a run terminal was accepted.
    pub fn is_terminated(&self) -> bool {
        self.terminal.is_some()
    }

    /// Events accepted so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Canonical JSON bytes of the events accepted so far (rule 11).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// An estimate of the validator's heap state in bytes: capacities of its
    /// tables and buffers and the identifiers they own. Takes time linear in
    /// the state; meant for tests and diagnostics. It does not change with the
    /// number of text, reasoning or argument deltas (argument deltas only up
    /// to `limits.tool_arguments_bytes` while a call streams them), and is
    /// bounded by the open spans, calls and namespaces plus the
    /// [`closed_window`](ValidatorOptions::closed_window).
    pub fn footprint(&self) -> usize {
        use std::mem::size_of;
        let mut n = self.texts.footprint() + self.reasonings.footprint();
        n += self.tools.footprint() + self.namespaces.footprint();
        for ns in self.namespaces.values() {
            n += ns.path.capacity() * size_of::<String>();
            n += ns.path.iter().map(String::capacity).sum::<usize>();
            n += ns.agent_id.capacity();
        }
        if let Some((a, b)) = &self.identity {
            n += a.len() + b.len();
        }
        if let Some(p) = &self.pending {
            n += p.interrupt_id.capacity();
        }
        if let Some(a) = &self.assembly {
            n += a.tool_call_id.capacity() + a.tool_name.capacity() + a.buf.capacity();
        }
        n
    }

    /// How many ids the validator holds: text and reasoning spans, tool
    /// calls and namespaces, open or closed but still remembered. At most the
    /// open ones plus four times
    /// [`closed_window`](ValidatorOptions::closed_window); a diagnostic (O(1)).
    pub fn state_len(&self) -> usize {
        self.texts.len() + self.reasonings.len() + self.tools.len() + self.namespaces.len()
    }

    /// The hot path: a non-empty `text.delta` or `reasoning.delta` of an
    /// open span, in a run going on normally. Returns `true` when the event
    /// keeps every rule, after applying it (a delta only moves the envelope:
    /// sequence, event and byte counts); else `false` with nothing changed,
    /// and [`step`](Self::step) decides (and reports in the order of checks).
    /// It checks what `step` does for such an event, in another order (which
    /// is free: it has no effect unless all hold), and takes the id's JSON
    /// size from the span instead of measuring it.
    #[inline]
    fn span_delta(&mut self, e: &Event) -> bool {
        let (d, text) = match &e.payload {
            Payload::TextDelta(d) => (d, true),
            Payload::ReasoningDelta(d) => (d, false),
            _ => return false,
        };
        // D7: an empty delta has its own path.
        if d.delta.is_empty() {
            return false;
        }
        // X
        let Some((run_id, conversation_id)) = &self.identity else {
            return false;
        };
        if !same_str(run_id, &e.run_id) || !same_str(conversation_id, &e.conversation_id) {
            return false;
        }
        // 1, D3
        let seq = e.sequence;
        let Some((last, _)) = self.last else {
            return false;
        };
        if seq <= last || (self.opts.contiguous && seq != last.saturating_add(1)) {
            return false;
        }
        // 15, 3, 4, 2; 8 and D4 (no interrupt pending); D6 (no arguments
        // streaming: nothing to complete).
        if self.terminal.is_some()
            || !self.started
            || self.pending.is_some()
            || self.assembly.is_some()
        {
            return false;
        }
        // 11: events.
        let events = self.events.saturating_add(1);
        if events > self.opts.limits.events_per_run {
            return false;
        }
        // 10: the event's namespace.
        let ns = if e.namespace.is_empty() {
            ROOT
        } else {
            match self.active_namespace(&e.namespace) {
                Some(ns) => ns,
                None => return false,
            }
        };
        // 5, 10: the span.
        let Some(span) = self.spans_mut(text).get(&d.message_id) else {
            return false;
        };
        if !span.open || span.ns != ns {
            return false;
        }
        let id_size = span.id_size;
        // 11: bytes.
        let size = span_delta_size(e, self.identity_size, id_size, &d.delta);
        let bytes = self.bytes.saturating_add(size);
        if bytes > self.opts.limits.bytes_per_run {
            return false;
        }
        // The payload's type, known from the match above (no call).
        let ty = if text {
            EventType::TextDelta
        } else {
            EventType::ReasoningDelta
        };
        self.last = Some((seq, ty));
        self.events = events;
        self.bytes = bytes;
        true
    }

    /// The general path of [`push`](Self::push), without the hot path.
    #[cfg(test)]
    fn push_general(&mut self, event: &Event) -> Result<(), Violation> {
        if let Some(v) = &self.failed {
            return Err(v.clone());
        }
        match self.step(event) {
            Ok(()) => Ok(()),
            Err(v) => {
                self.failed = Some(v.clone());
                Err(v)
            }
        }
    }

    fn step(&mut self, e: &Event) -> Step {
        let ty = e.event_type();
        let seq = e.sequence;
        self.check_identity(e, ty, seq)?;
        self.check_sequence(ty, seq)?;
        self.check_not_ended(ty, seq)?;
        self.check_run_started(ty, seq)?;
        let (events, bytes) = self.count(e, ty, seq)?;

        // D7: an empty delta is dropped, not rejected: after the checks of
        // the envelope above it has no effect at all.
        let (result, applied) = if e.is_empty_delta() {
            (Ok(()), true)
        } else {
            self.event(e, ty, seq)
        };

        // Applied: record the envelope.
        if applied {
            if self.identity.is_none() {
                self.identity = Some((e.run_id.clone(), e.conversation_id.clone()));
                self.identity_size = identity_size(&e.run_id, &e.conversation_id);
            }
            self.last = Some((seq, ty));
            self.events = events;
            self.bytes = bytes;
        }
        result
    }

    /// X: one run only (the ids of the run's first event).
    #[inline]
    fn check_identity(&self, e: &Event, ty: EventType, seq: u64) -> Step {
        let Some((run_id, conversation_id)) = &self.identity else {
            return Ok(());
        };
        let fail = |msg: String| Err(Violation::new(Rule::RunIdentity, seq, Some(ty), msg));
        // Events from one parser share the run's ids: the pointer compare
        // settles it without reading the bytes.
        if !Arc::ptr_eq(run_id, &e.run_id) && **run_id != *e.run_id {
            return fail(format!(
                "{ty} has run_id {} but the run is {}",
                safe_id(&e.run_id),
                safe_id(run_id)
            ));
        }
        if !Arc::ptr_eq(conversation_id, &e.conversation_id)
            && **conversation_id != *e.conversation_id
        {
            return fail(format!(
                "{ty} has conversation_id {} but the run's is {}",
                safe_id(&e.conversation_id),
                safe_id(conversation_id)
            ));
        }
        Ok(())
    }

    /// 1 (and D3): strictly increasing (and contiguous).
    #[inline]
    fn check_sequence(&self, ty: EventType, seq: u64) -> Step {
        let Some((last, _)) = self.last else {
            return Ok(());
        };
        if seq <= last {
            let what = if seq == last {
                "repeats"
            } else {
                "goes back from"
            };
            return Err(Violation::new(
                Rule::Sequence,
                seq,
                Some(ty),
                format!("sequence {seq} {what} {last}"),
            ));
        }
        if self.opts.contiguous && seq != last.saturating_add(1) {
            return Err(Violation::new(
                Rule::D3Contiguous,
                seq,
                Some(ty),
                format!("sequence jumps from {last} to {seq}"),
            ));
        }
        Ok(())
    }

    /// 15, 3, 4: nothing after a terminal.
    #[inline]
    fn check_not_ended(&self, ty: EventType, seq: u64) -> Step {
        let (rule, msg) = match self.terminal {
            None => return Ok(()),
            Some(Terminal::DurabilityUncertain) => (
                Rule::DurabilityUncertain,
                format!("{ty} after run.error({THREAD_DURABILITY_UNCERTAIN}), which is final"),
            ),
            Some(Terminal::Ordinary(t)) => {
                let rule = if ty.is_terminal() {
                    Rule::SingleTerminal
                } else {
                    Rule::AfterTerminal
                };
                (rule, format!("{ty} after the run terminal {t}"))
            }
        };
        Err(Violation::new(rule, seq, Some(ty), msg))
    }

    /// 2: run.started first, at sequence 0, once.
    #[inline]
    fn check_run_started(&self, ty: EventType, seq: u64) -> Step {
        let fail = |msg: String| Err(Violation::new(Rule::RunStarted, seq, Some(ty), msg));
        if self.started {
            if ty == EventType::RunStarted {
                return fail("run.started again".to_owned());
            }
        } else if ty != EventType::RunStarted {
            return fail(format!("first event is {ty}, not run.started"));
        } else if seq != 0 {
            return fail(format!("run.started at sequence {seq}, not 0"));
        }
        Ok(())
    }

    /// 11: events and bytes per run. Returns both counts with this event.
    #[inline]
    fn count(&self, e: &Event, ty: EventType, seq: u64) -> Result<(u64, u64), Violation> {
        let fail = |msg: String| Err(Violation::new(Rule::Limits, seq, Some(ty), msg));
        let limits = &self.opts.limits;
        let events = self.events.saturating_add(1);
        if events > limits.events_per_run {
            return fail(format!(
                "more than {} events in the run",
                limits.events_per_run
            ));
        }
        // The identity was checked equal to the run's (X): its size is known.
        let known = self.identity.is_some().then_some(self.identity_size);
        let bytes = self.bytes.saturating_add(canonical_size(e, known));
        if bytes > limits.bytes_per_run {
            return fail(format!(
                "more than {} bytes of events in the run",
                limits.bytes_per_run
            ));
        }
        Ok((events, bytes))
    }

    /// The rules of the event itself, after the envelope's; also tells
    /// whether the event was applied (see `apply`).
    fn event(&mut self, e: &Event, ty: EventType, seq: u64) -> (Step, bool) {
        match self.event_checks(e, ty, seq) {
            Ok(ns) => {
                let arguments = self.close_arguments(e, ty, seq);
                let own = self.apply(e, ty, seq, ns);
                let applied = own.is_ok();
                (arguments.and(own), applied)
            }
            Err(v) => (Err(v), false),
        }
    }

    /// Rules 10, 8 and D4, which do not depend on the event's own ids.
    fn event_checks(&mut self, e: &Event, ty: EventType, seq: u64) -> Result<NsId, Violation> {
        let fail = |rule: Rule, msg: String| Err(Violation::new(rule, seq, Some(ty), msg));

        // 10: the event's namespace is root or an active namespace (D1);
        // run events are root events.
        let ns = self.resolve_namespace(&e.namespace, ty, seq)?;
        if (ty == EventType::RunStarted || ty.is_terminal()) && ns != ROOT {
            return fail(
                Rule::NamespaceActive,
                format!("{ty} in a subagent namespace; run events are root events"),
            );
        }

        // 8, D4: between interrupt.requested and its terminal, only close
        // events (and the coordinator's run.error / run.cancelled).
        if self.pending.is_some() {
            match &e.payload {
                Payload::InterruptRequested(_) => {
                    return fail(Rule::Interrupt, "a second interrupt.requested".to_owned());
                }
                Payload::RunFinished(_) => {
                    return fail(
                        Rule::Interrupt,
                        "run.finished after interrupt.requested (expected run.interrupted)"
                            .to_owned(),
                    );
                }
                Payload::TextFinished(_)
                | Payload::ReasoningFinished(_)
                | Payload::ToolFinished(_)
                | Payload::ToolError(_)
                | Payload::RunInterrupted(_)
                | Payload::RunError(_)
                | Payload::RunCancelled(_) => {}
                Payload::NamespaceExited(x) if x.outcome == NamespaceOutcome::Interrupted => {}
                Payload::NamespaceExited(x) => {
                    return fail(
                        Rule::D4CloseEvents,
                        format!(
                            "namespace.exited with outcome {} after interrupt.requested (only `interrupted` closes)",
                            x.outcome
                        ),
                    );
                }
                _ => {
                    return fail(
                        Rule::D4CloseEvents,
                        format!("{ty} after interrupt.requested; only close events may follow it"),
                    );
                }
            }
        }

        Ok(ns)
    }

    /// D6: streamed arguments are complete at the first event that is not a
    /// delta of the same call. A run.error / run.cancelled discards them: the
    /// call will never be invoked. A violation found here is reported first,
    /// but the event itself is still applied when it keeps its own rules (it
    /// did nothing wrong).
    fn close_arguments(&mut self, e: &Event, ty: EventType, seq: u64) -> Step {
        let continues = matches!(
            (&self.assembly, &e.payload),
            (Some(a), Payload::ToolArgumentsDelta(d)) if a.tool_call_id == d.tool_call_id
        );
        if continues || matches!(ty, EventType::RunError | EventType::RunCancelled) {
            if !continues {
                self.assembly = None;
            }
            return Ok(());
        }
        match self.assembly.take() {
            Some(a) => self.complete_arguments(&a, ty, seq),
            None => Ok(()),
        }
    }

    /// The rules of each event type, and its effects when it keeps them.
    /// Out of line, as the compiler left it before the violation messages
    /// moved to `about`: `event` is then inlined into the per-event path
    /// (measured: fewer instructions per event on every corpus mix).
    #[inline(never)]
    fn apply(&mut self, e: &Event, ty: EventType, seq: u64, ns: NsId) -> Step {
        match &e.payload {
            Payload::RunStarted(_) => {
                self.started = true;
                Ok(())
            }
            Payload::RunFinished(f) => self.run_finished(f, ty, seq),
            Payload::RunInterrupted(r) => self.run_interrupted(r, ty, seq),
            Payload::RunCancelled(_) => {
                self.terminal = Some(Terminal::Ordinary(ty));
                Ok(())
            }
            Payload::RunError(r) => {
                self.terminal = Some(if r.code == THREAD_DURABILITY_UNCERTAIN {
                    Terminal::DurabilityUncertain
                } else {
                    Terminal::Ordinary(ty)
                });
                Ok(())
            }
            Payload::TextStarted(s) | Payload::ReasoningStarted(s) => {
                self.span_started(s, ns, ty, seq)
            }
            Payload::TextDelta(d) | Payload::ReasoningDelta(d) => {
                // The hot path: one look-up by &str, no allocation.
                let spans = self.spans_mut(ty == EventType::TextDelta);
                let forgot = spans.forgot();
                let span = spans.get(&d.message_id);
                Self::span_event(span, forgot, &d.message_id, ns, ty, seq)
            }
            Payload::TextFinished(s) | Payload::ReasoningFinished(s) => {
                self.span_finished(s, ns, ty, seq)
            }
            Payload::ToolStarted(t) => self.tool_started(t, ns, ty, seq),
            Payload::ToolArgumentsDelta(d) => self.arguments_delta(d, ns, ty, seq),
            Payload::ToolFinished(f) => {
                self.tool_ended(&f.tool_call_id, Some(f.result.len()), ns, ty, seq)
            }
            Payload::ToolError(f) => self.tool_ended(&f.tool_call_id, None, ns, ty, seq),
            Payload::InterruptRequested(i) => {
                self.pending = Some(Pending {
                    interrupt_id: i.interrupt_id.clone(),
                    interrupt_type: i.interrupt_type,
                });
                Ok(())
            }
            Payload::NamespaceEntered(n) => self.enter(n, &e.namespace, ns, ty, seq),
            Payload::NamespaceExited(n) => self.exit(n, &e.namespace, ns, ty, seq),
            _ => Ok(()),
        }
    }

    /// `run.finished`: D5 (nothing open) and, in full mode, rule 13 (the
    /// thread state is committed, or absent for an ephemeral harness).
    fn run_finished(&mut self, f: &RunFinished, ty: EventType, seq: u64) -> Step {
        let fail = |msg: String| Err(Violation::new(Rule::ThreadDurability, seq, Some(ty), msg));
        self.check_all_closed(ty, seq, true)?;
        if self.opts.mode == Mode::Full {
            match (&f.thread_state, self.opts.ephemeral) {
                (None, false) => {
                    return fail("run.finished without thread_state".to_owned());
                }
                (Some(t), false) if !t.durability.is_committed() => {
                    return fail(format!(
                        "run.finished thread_state.durability is {}, not `committed`",
                        safe_code(t.durability.as_str())
                    ));
                }
                (Some(_), true) => {
                    return fail(
                        "run.finished of an ephemeral harness with thread_state (nothing is committed)"
                            .to_owned(),
                    );
                }
                _ => {}
            }
        }
        self.terminal = Some(Terminal::Ordinary(ty));
        Ok(())
    }

    /// `run.interrupted`: rule 14 (it names the pending interrupt, with the
    /// reason of its type), then D5 for spans.
    fn run_interrupted(&mut self, r: &RunInterrupted, ty: EventType, seq: u64) -> Step {
        let fail = |msg: String| Err(Violation::new(Rule::PendingInterrupt, seq, Some(ty), msg));
        let Some(p) = &self.pending else {
            return fail("run.interrupted without a pending interrupt.requested".to_owned());
        };
        if p.interrupt_id != r.interrupt_id {
            return fail(format!(
                "run.interrupted names interrupt {} but {} is pending",
                safe_id(&r.interrupt_id),
                safe_id(&p.interrupt_id)
            ));
        }
        if p.interrupt_type.reason() != r.reason {
            return fail(format!(
                "run.interrupted reason {} does not match interrupt_type {}",
                r.reason, p.interrupt_type
            ));
        }
        self.check_all_closed(ty, seq, false)?;
        self.terminal = Some(Terminal::Ordinary(ty));
        Ok(())
    }

    /// The text spans (`text`) or the reasoning spans.
    #[inline]
    fn spans_mut(&mut self, text: bool) -> &mut Registry<Span> {
        if text {
            &mut self.texts
        } else {
            &mut self.reasonings
        }
    }

    /// How many text spans (`text`) or reasoning spans are open.
    #[inline]
    fn open_spans_mut(&mut self, text: bool) -> &mut usize {
        if text {
            &mut self.open_texts
        } else {
            &mut self.open_reasonings
        }
    }

    /// `text.started` / `reasoning.started`: rule 5 (a new span), then
    /// opens it in the event's namespace.
    #[inline]
    fn span_started(&mut self, s: &SpanStarted, ns: NsId, ty: EventType, seq: u64) -> Step {
        let text = ty == EventType::TextStarted;
        let spans = self.spans_mut(text);
        if spans.contains(&s.message_id) {
            return Err(Violation::new(
                Rule::TextSpan,
                seq,
                Some(ty),
                about(ty, "for message", &s.message_id, "that was already started"),
            ));
        }
        spans.insert(
            &s.message_id,
            Span {
                ns,
                open: true,
                id_size: json_string_len(&s.message_id),
            },
        );
        *self.open_spans_mut(text) += 1;
        Ok(())
    }

    /// `text.finished` / `reasoning.finished`: rules 5 and 10 for the span,
    /// then closes it.
    #[inline]
    fn span_finished(&mut self, s: &SpanFinished, ns: NsId, ty: EventType, seq: u64) -> Step {
        let text = ty == EventType::TextFinished;
        let spans = self.spans_mut(text);
        let forgot = spans.forgot();
        let span = spans.get_mut(&s.message_id);
        Self::span_event(span.as_deref(), forgot, &s.message_id, ns, ty, seq)?;
        if let Some(span) = span {
            span.open = false;
        }
        spans.closed(&s.message_id);
        let open = self.open_spans_mut(text);
        *open = open.saturating_sub(1);
        Ok(())
    }

    /// `tool.started`: rule 6 (a new call), rule 11 (arguments' size), D6
    /// (arguments given at start match the tool's schema; `{}` starts
    /// streaming them), then opens the call.
    #[inline]
    fn tool_started(&mut self, t: &ToolStarted, ns: NsId, ty: EventType, seq: u64) -> Step {
        let fail = |rule: Rule, msg: String| Err(Violation::new(rule, seq, Some(ty), msg));
        if self.tools.contains(t.tool_call_id.as_str()) {
            return fail(
                Rule::ToolCall,
                about(
                    "tool.started",
                    "for call",
                    &t.tool_call_id,
                    "that was already started",
                ),
            );
        }
        let max = self.opts.limits.tool_arguments_bytes;
        if t.arguments.len() > max {
            return fail(
                Rule::Limits,
                format!(
                    "tool arguments of {} bytes (limit {max})",
                    t.arguments.len()
                ),
            );
        }
        let streamed = t.arguments.is_empty_object();
        if !streamed {
            // Complete at start: validate now (D6).
            if let Err(msg) = self.opts.schemas.check(&t.tool_name, t.arguments.get()) {
                return fail(Rule::D6Arguments, msg);
            }
        }
        self.tools.insert(
            &t.tool_call_id,
            Tool {
                ns,
                end: ToolEnd::Open,
                streamed,
                child: Child::None,
            },
        );
        self.open_tools += 1;
        if streamed {
            self.assembly = Some(Assembly {
                tool_call_id: t.tool_call_id.clone(),
                tool_name: t.tool_name.clone(),
                buf: String::new(),
                scan: lce_wire::hold::ObjectScan::default(),
                any: false,
            });
        }
        Ok(())
    }

    /// `tool.arguments.delta`: rules 6 and 10 for the call, D6 (its
    /// arguments are streaming), rule 11 (their size), then appends it.
    #[inline]
    fn arguments_delta(
        &mut self,
        d: &ToolArgumentsDelta,
        ns: NsId,
        ty: EventType,
        seq: u64,
    ) -> Step {
        let fail = |rule: Rule, msg: String| Err(Violation::new(rule, seq, Some(ty), msg));
        let id = d.tool_call_id.as_str();
        let Some(tool) = self.tools.get(id) else {
            return fail(
                Rule::ToolCall,
                about(
                    "tool.arguments.delta",
                    "for call",
                    id,
                    that_was_never(self.tools.forgot(), "started", "ended"),
                ),
            );
        };
        if tool.ns != ns {
            return fail(
                Rule::NamespaceActive,
                about(
                    "tool.arguments.delta",
                    "for call",
                    id,
                    "outside the namespace it started in",
                ),
            );
        }
        let Some(a) = self.assembly.as_mut().filter(|a| a.tool_call_id == id) else {
            let why = if !tool.streamed {
                "its arguments were given at tool.started (only `{}` may stream)"
            } else if tool.end != ToolEnd::Open {
                "the call already ended"
            } else {
                "its arguments are already complete (another event came between)"
            };
            return fail(
                Rule::D6Arguments,
                format!("tool.arguments.delta for call {}, but {why}", safe_id(id)),
            );
        };
        let max = self.opts.limits.tool_arguments_bytes;
        let total = a.buf.len().saturating_add(d.delta.len());
        if total > max {
            return fail(
                Rule::Limits,
                about(
                    "tool arguments",
                    "of call",
                    id,
                    format_args!("reach {total} bytes (limit {max})"),
                ),
            );
        }
        // Text after an object that is already complete can never make one
        // object (D6): report it at this delta, so it never reaches an
        // encoder that has shown the complete arguments live (D13a).
        let was_complete = a.scan.is_complete();
        a.scan.feed(d.delta.as_bytes());
        if was_complete && a.scan.is_broken() {
            return fail(
                Rule::D6Arguments,
                about(
                    "tool.arguments.delta",
                    "for call",
                    id,
                    "continues arguments that already form one JSON object",
                ),
            );
        }
        a.buf.push_str(&d.delta);
        a.any = true;
        Ok(())
    }

    /// `tool.finished` (`result_len` is its result's size) or `tool.error`
    /// (`None`): rules 6 and 7 (an open call ends once), 10 (in its
    /// namespace, after its subagent exited, D2) and 11 (the result's size),
    /// then closes the call.
    #[inline]
    fn tool_ended(
        &mut self,
        id: &str,
        result_len: Option<usize>,
        ns: NsId,
        ty: EventType,
        seq: u64,
    ) -> Step {
        let fail = |rule: Rule, msg: String| Err(Violation::new(rule, seq, Some(ty), msg));
        let finished = result_len.is_some();
        let forgot = self.tools.forgot();
        let Some(tool) = self.tools.get_mut(id) else {
            return fail(
                Rule::ToolCall,
                about(
                    ty,
                    "for call",
                    id,
                    that_was_never(forgot, "started", "ended"),
                ),
            );
        };
        match (tool.end, finished) {
            (ToolEnd::Open, _) => {}
            (ToolEnd::Finished, true) | (ToolEnd::Errored, false) => {
                return fail(
                    Rule::ToolCall,
                    format!("{ty} again for call {}", safe_id(id)),
                );
            }
            (ToolEnd::Finished, false) => {
                return fail(
                    Rule::ToolOutcome,
                    about("tool.error", "for call", id, "that already finished"),
                );
            }
            (ToolEnd::Errored, true) => {
                return fail(
                    Rule::ToolOutcome,
                    about("tool.finished", "for call", id, "that already errored"),
                );
            }
        }
        if tool.ns != ns {
            return fail(
                Rule::NamespaceActive,
                about(ty, "for call", id, "outside the namespace it started in"),
            );
        }
        if tool.child == Child::Active {
            return fail(
                Rule::NamespaceActive,
                about(
                    ty,
                    "for delegation call",
                    id,
                    "while its namespace is active (exit first, D2)",
                ),
            );
        }
        if let Some(len) = result_len {
            let max = self.opts.limits.tool_result_bytes;
            if len > max {
                return fail(
                    Rule::Limits,
                    format!("tool result of {len} bytes (limit {max})"),
                );
            }
        }
        tool.end = if finished {
            ToolEnd::Finished
        } else {
            ToolEnd::Errored
        };
        self.tools.closed(id);
        self.open_tools = self.open_tools.saturating_sub(1);
        Ok(())
    }

    /// Rule 10: the namespace path of an event names root or an active
    /// namespace, element by element (D1). No allocation.
    fn resolve_namespace(
        &mut self,
        path: &[String],
        ty: EventType,
        seq: u64,
    ) -> Result<NsId, Violation> {
        let Some(last) = path.last() else {
            return Ok(ROOT);
        };
        let fail = |msg: String| Err(Violation::new(Rule::NamespaceActive, seq, Some(ty), msg));
        let Some(ns) = self.namespaces.get(last.as_str()) else {
            return fail(about(
                ty,
                "in namespace",
                last,
                that_was_never(self.namespaces.forgot(), "entered", "exited"),
            ));
        };
        if ns.path.as_slice() != path {
            return fail(about(
                ty,
                "in namespace",
                last,
                "with a path that is not the one it was entered with",
            ));
        }
        if !ns.active {
            return fail(about(ty, "in namespace", last, "that has exited"));
        }
        Ok(ns.id)
    }

    /// The namespace of an event whose `path` is not root, when
    /// [`resolve_namespace`](Self::resolve_namespace) accepts it; `None`
    /// without building its violation.
    fn active_namespace(&mut self, path: &[String]) -> Option<NsId> {
        let ns = self.namespaces.get(path.last()?.as_str())?;
        (ns.active && ns.path.as_slice() == path).then_some(ns.id)
    }

    /// The active namespace whose path ends in `path`'s last element (the
    /// parent of an event's namespace), if any: root has no entry.
    fn parent_mut(&mut self, path: &[String]) -> Option<&mut Namespace> {
        let last = path.last()?;
        self.namespaces.get_mut(last.as_str())
    }

    /// Rule 5 for a delta or finish of a span.
    fn span_event(
        span: Option<&Span>,
        forgot: bool,
        id: &str,
        ns: NsId,
        ty: EventType,
        seq: u64,
    ) -> Step {
        let fail = |rule: Rule, msg: String| Err(Violation::new(rule, seq, Some(ty), msg));
        let Some(span) = span else {
            return fail(
                Rule::TextSpan,
                about(
                    ty,
                    "for message",
                    id,
                    that_was_never(forgot, "started", "finished"),
                ),
            );
        };
        if !span.open {
            return fail(
                Rule::TextSpan,
                about(ty, "for message", id, "that already finished"),
            );
        }
        if span.ns != ns {
            return fail(
                Rule::NamespaceActive,
                about(ty, "for message", id, "outside the namespace it started in"),
            );
        }
        Ok(())
    }

    /// D6: parse complete streamed arguments as one strict JSON object, then
    /// the tool's schema.
    fn complete_arguments(&mut self, a: &Assembly, ty: EventType, seq: u64) -> Step {
        let fail = |msg: String| Err(Violation::new(Rule::D6Arguments, seq, Some(ty), msg));
        let id = safe_id(&a.tool_call_id);
        let text = if a.any { a.buf.as_str() } else { "{}" };
        match JsonObject::from_json(text) {
            Ok(_) => {}
            Err(err) => {
                return fail(format!(
                    "arguments of call {id} ({} bytes) are not one JSON object: {} at {}",
                    a.buf.len(),
                    err.kind,
                    err.path
                ));
            }
        }
        if let Err(msg) = self.opts.schemas.check(&a.tool_name, text) {
            return fail(format!("call {id}: {msg}"));
        }
        Ok(())
    }

    /// D5: what must be closed at run.finished (`all`) or run.interrupted.
    /// Reported as the rule of the kind of span left open (D5 refines it): a
    /// text or reasoning span is rule 5, a namespace rule 9, a tool call rule
    /// 6. A namespace comes before a call: an active namespace keeps its
    /// delegation call open (D2), so the namespace is what was left open.
    /// The message lists everything open.
    fn check_all_closed(&self, ty: EventType, seq: u64, all: bool) -> Step {
        let rule = if self.open_texts > 0 || self.open_reasonings > 0 {
            Rule::D5OpenText
        } else if all && self.active_namespaces > 0 {
            Rule::D5OpenNamespace
        } else if all && self.open_tools > 0 {
            Rule::D5OpenTool
        } else {
            return Ok(());
        };
        let mut open = Vec::new();
        if self.open_texts > 0 {
            open.push(format!("{} text", self.open_texts));
        }
        if self.open_reasonings > 0 {
            open.push(format!("{} reasoning", self.open_reasonings));
        }
        if all && self.open_tools > 0 {
            open.push(format!("{} tool call", self.open_tools));
        }
        if all && self.active_namespaces > 0 {
            open.push(format!("{} namespace", self.active_namespaces));
        }
        Err(Violation::new(
            rule,
            seq,
            Some(ty),
            format!("{ty} with spans still open: {}", open.join(", ")),
        ))
    }

    /// `namespace.entered` (rules 9, 10, 11; D1, D2).
    fn enter(
        &mut self,
        n: &lce_types::NamespaceEntered,
        path: &[String],
        parent: NsId,
        ty: EventType,
        seq: u64,
    ) -> Step {
        let fail = |rule: Rule, msg: String| Err(Violation::new(rule, seq, Some(ty), msg));
        let id = n.parent_tool_call_id.as_str();
        // Entered before: the namespace is remembered, or its delegation
        // call is (its `child` outlives a forgotten exited namespace).
        if self.namespaces.contains(id)
            || self.tools.get(id).is_some_and(|t| t.child != Child::None)
        {
            return fail(
                Rule::NamespaceBalance,
                format!("namespace {} entered again", safe_id(id)),
            );
        }
        let Some(tool) = self.tools.get(id) else {
            return fail(
                Rule::NamespaceActive,
                about(
                    "namespace.entered",
                    "for delegation call",
                    id,
                    that_was_never(self.tools.forgot(), "started", "ended"),
                ),
            );
        };
        if tool.end != ToolEnd::Open {
            return fail(
                Rule::NamespaceActive,
                about(
                    "namespace.entered",
                    "for delegation call",
                    id,
                    "that already ended",
                ),
            );
        }
        if tool.ns != parent {
            return fail(
                Rule::NamespaceActive,
                about(
                    "namespace.entered",
                    "for delegation call",
                    id,
                    "started in another namespace",
                ),
            );
        }
        let depth = path.len().saturating_add(1);
        if depth > self.opts.limits.namespace_depth {
            return fail(
                Rule::Limits,
                format!(
                    "namespace depth {depth} (limit {})",
                    self.opts.limits.namespace_depth
                ),
            );
        }
        let Some(new_id) = self.last_ns.checked_add(1) else {
            return fail(Rule::Limits, "too many namespaces".to_owned());
        };
        self.last_ns = new_id;
        let mut full = Vec::with_capacity(depth);
        full.extend(path.iter().cloned());
        full.push(n.parent_tool_call_id.clone());
        self.namespaces.insert(
            id,
            Namespace {
                id: new_id,
                path: full,
                agent_id: n.agent_id.clone(),
                parent,
                active: true,
                active_children: 0,
            },
        );
        if let Some(p) = self.parent_mut(path) {
            p.active_children = p.active_children.saturating_add(1);
        }
        if let Some(tool) = self.tools.get_mut(id) {
            tool.child = Child::Active;
        }
        self.active_namespaces += 1;
        Ok(())
    }

    /// `namespace.exited` (rule 9; D1).
    fn exit(
        &mut self,
        n: &lce_types::NamespaceExited,
        path: &[String],
        parent: NsId,
        ty: EventType,
        seq: u64,
    ) -> Step {
        let fail = |msg: String| Err(Violation::new(Rule::NamespaceBalance, seq, Some(ty), msg));
        let id = n.parent_tool_call_id.as_str();
        let Some(ns) = self.namespaces.get(id) else {
            return fail(about(
                "namespace.exited",
                "for namespace",
                id,
                that_was_never(self.namespaces.forgot(), "entered", "exited"),
            ));
        };
        if !ns.active {
            return fail(format!("namespace {} exited twice", safe_id(id)));
        }
        if ns.parent != parent {
            return fail(format!(
                "namespace.exited for {} does not carry its parent's path",
                safe_id(id)
            ));
        }
        if ns.agent_id != n.agent_id {
            return fail(format!(
                "namespace.exited for {} names agent {} but {} entered",
                safe_id(id),
                safe_id(&n.agent_id),
                safe_id(&ns.agent_id)
            ));
        }
        if ns.active_children > 0 {
            return fail(format!(
                "namespace {} exited while {} inner namespace(s) are active",
                safe_id(id),
                ns.active_children
            ));
        }
        if let Some(ns) = self.namespaces.get_mut(id) {
            ns.active = false;
        }
        self.namespaces.closed(id);
        if let Some(p) = self.parent_mut(path) {
            p.active_children = p.active_children.saturating_sub(1);
        }
        if let Some(tool) = self.tools.get_mut(id) {
            tool.child = Child::Exited;
        }
        self.active_namespaces = self.active_namespaces.saturating_sub(1);
        Ok(())
    }
}

/// "that was never started", or once ids were forgotten (a bounded closed
/// window dropped some), "that was never started (or finished long ago)":
/// the id may have closed before the window.
fn that_was_never(forgot: bool, started: &str, ended: &str) -> String {
    if forgot {
        format!("that was never {started} (or {ended} long ago)")
    } else {
        format!("that was never {started}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lce_testkit::RunBuilder;
    use lce_types::Limits;
    use proptest::prelude::*;

    /// One random event: what, which ids, where, which text, its sequence
    /// step, whether to `clear_failure` after a violation.
    #[derive(Clone, Copy, Debug)]
    struct Op {
        kind: u8,
        id: u8,
        ns: u8,
        text: u8,
        step: u8,
        clear: bool,
    }

    fn op() -> impl Strategy<Value = Op> {
        let kind = prop_oneof![3 => 0u8..2, 1 => 0u8..18];
        (
            kind,
            0u8..3,
            0u8..5,
            0u8..4,
            0u8..14,
            prop::bool::weighted(0.9),
        )
            .prop_map(|(kind, id, ns, text, step, clear)| Op {
                kind,
                id,
                ns,
                text,
                step,
                clear,
            })
    }

    /// An event from a small alphabet: spans, deltas (empty, plain, with
    /// escapes), calls (streamed or not), namespaces, interrupts, terminals,
    /// a foreign run id, in root or in a namespace (`t0`, entered at the
    /// start; `t1`, which may be, in root or in `t0`).
    fn event(o: Op, seq: u64) -> Option<Event> {
        let Op { id, ns, .. } = o;
        let call = id;
        let ns: &[&str] = [&[][..], &[], &["t0"], &["t1"], &["t0", "t1"]][usize::from(ns % 5)];
        let text = ["", "hi", "a\"b\n\u{1}", "é😀 x"][usize::from(o.text % 4)];
        let text = serde_json::to_string(text).unwrap_or_default();
        let (ty, data) = match o.kind % 18 {
            0 => ("text.delta", format!(r#"{{"message_id":"m{id}","delta":{text}}}"#)),
            1 => ("reasoning.delta", format!(r#"{{"message_id":"m{id}","delta":{text}}}"#)),
            2 => ("text.started", format!(r#"{{"message_id":"m{id}","role":"assistant"}}"#)),
            3 => ("reasoning.started", format!(r#"{{"message_id":"m{id}","role":"assistant"}}"#)),
            4 | 5 => ("text.finished", format!(r#"{{"message_id":"m{id}"}}"#)),
            6 => ("reasoning.finished", format!(r#"{{"message_id":"m{id}"}}"#)),
            7 | 8 => (
                "tool.started",
                format!(
                    r#"{{"tool_call_id":"t{call}","tool_name":"s","arguments":{}}}"#,
                    if o.text % 2 == 0 { "{}" } else { r#"{"q":1}"# }
                ),
            ),
            9 => (
                "namespace.entered",
                format!(r#"{{"agent_id":"a","agent_name":"A","parent_tool_call_id":"t{call}"}}"#),
            ),
            10 => (
                "namespace.exited",
                format!(r#"{{"agent_id":"a","parent_tool_call_id":"t{call}","outcome":"success"}}"#),
            ),
            11 => ("tool.finished", format!(r#"{{"tool_call_id":"t{call}","result":"ok"}}"#)),
            12 => (
                "interrupt.requested",
                r#"{"interrupt_id":"i","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[]}"#.to_owned(),
            ),
            13 => ("run.finished", r#"{"outcome":"success","thread_state":{"durability":"committed","durable_revision":3,"head_ref":"h"}}"#.to_owned()),
            14 => ("run.cancelled", "{}".to_owned()),
            15 | 16 => ("tool.arguments.delta", format!(r#"{{"tool_call_id":"t{call}","delta":"{{}}"}}"#)),
            _ => ("run.started", r#"{"harness_id":"h","adapter_version":"1"}"#.to_owned()),
        };
        let run = if o.step == 13 { "x" } else { "r" };
        RunBuilder::new(run, "c")
            .set_sequence(seq)
            .at(ns)
            .try_event(ty, &data)
            .ok()
    }

    /// `footprint` is the four registries' footprints (tested exactly in
    /// `registry`) plus each string and list the state owns, counted once at
    /// its capacity; the clones the validator keeps have exact capacities.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn footprint_is_the_registries_plus_the_owned_strings() {
        let registries = |v: &RunValidator| {
            v.texts.footprint()
                + v.reasonings.footprint()
                + v.tools.footprint()
                + v.namespaces.footprint()
        };
        let mut r = RunBuilder::new("run-1", "conv-22");
        let mut v = RunValidator::new(ValidatorOptions::new());
        assert_eq!(v.footprint(), 0);
        v.push(&r.run_started()).unwrap();
        // The run's identity: 5 + 7 bytes.
        let identity = 12;
        assert_eq!(v.footprint(), registries(&v) + identity);
        // A text and a reasoning span (remembered once finished): every
        // registry holds something, so each is seen in the sum.
        for e in [
            r.text_started("m"),
            r.text_finished("m"),
            r.reasoning_started("k"),
            r.reasoning_finished("k"),
        ] {
            v.push(&e).unwrap();
        }
        assert!(v.texts.footprint() > 0 && v.reasonings.footprint() > 0);
        assert_eq!(v.footprint(), registries(&v) + identity);
        v.push(&r.tool_started("call-1", "task", r#"{"a":1}"#))
            .unwrap();
        v.push(&r.namespace_entered("agent-1", "A", "call-1"))
            .unwrap();
        // The namespace: its path `["call-1"]` (one `String`, 24 bytes, of
        // 6 bytes) and its agent id (7 bytes).
        let namespace = 24 + 6 + 7;
        assert!(v.tools.footprint() > 0 && v.namespaces.footprint() > 0);
        assert_eq!(v.footprint(), registries(&v) + identity + namespace);
        v.push(&r.namespace_exited("agent-1", "call-1")).unwrap();
        v.push(&r.tool_finished("call-1", "ok")).unwrap();
        // Closed, still remembered (the window): still counted.
        assert_eq!(v.footprint(), registries(&v) + identity + namespace);
        v.push(&r.event(
            "interrupt.requested",
            r#"{"interrupt_id":"intr-1","interrupt_type":"form_input","agent_id":"a","prompt":"p","fields":[]}"#,
        ))
        .unwrap();
        // The pending interrupt's id: 6 bytes.
        assert_eq!(v.footprint(), registries(&v) + identity + namespace + 6);
    }

    /// The arguments a call streams are counted: its id, its name and the
    /// buffer.
    #[test]
    fn footprint_counts_streamed_arguments() {
        let mut r = RunBuilder::new("r", "c");
        let mut v = RunValidator::new(ValidatorOptions::new());
        v.push(&r.run_started()).unwrap();
        v.push(&r.tool_started("call-1", "search", "{}")).unwrap();
        v.push(&r.tool_arguments_delta("call-1", r#"{"q":"#))
            .unwrap();
        let (id, name, buf) = v
            .assembly
            .as_ref()
            .map(|a| {
                (
                    a.tool_call_id.capacity(),
                    a.tool_name.capacity(),
                    a.buf.capacity(),
                )
            })
            .unwrap_or_default();
        assert_eq!((id, name), (6, 6));
        assert!(buf >= 5, "{buf}");
        let registries = v.texts.footprint()
            + v.reasonings.footprint()
            + v.tools.footprint()
            + v.namespaces.footprint();
        assert_eq!(v.footprint(), registries + 2 + id + name + buf);
    }

    /// A text delta is not the hot path while arguments stream (D6): it
    /// completes them, bad ones included, and a later fragment is D6.
    #[test]
    fn a_span_delta_completes_streamed_arguments() {
        for (fragment, at) in [(r#"{"q":"#, 4), ("{}", 5)] {
            let mut r = RunBuilder::new("r", "c");
            let evs = [
                r.run_started(),
                r.text_started("m"),
                r.tool_started("t", "s", "{}"),
                r.tool_arguments_delta("t", fragment),
                r.text_delta("m", "x"),
                r.tool_arguments_delta("t", "1"),
            ];
            let mut v = RunValidator::new(ValidatorOptions::new());
            let first_error = evs.iter().find_map(|e| v.push(e).err());
            assert_eq!(
                first_error.map(|e| (e.rule, e.sequence)),
                Some((Rule::D6Arguments, at)),
                "{fragment}"
            );
        }
    }

    /// The hot path takes an in-order delta of an open span, text or
    /// reasoning, in root or in an active namespace, after a gap when
    /// sequences need not be contiguous, and counts it as `push` would.
    #[test]
    fn the_hot_path_takes_deltas_of_open_spans() {
        let mut r = RunBuilder::new("r", "c");
        let mut v = RunValidator::new(ValidatorOptions::new());
        for e in [
            r.run_started(),
            r.text_started("m"),
            r.reasoning_started("k"),
            r.tool_started("t", "task", r#"{"a":1}"#),
            r.namespace_entered("a", "A", "t"),
            r.at(["t"]).text_started("n"),
        ] {
            v.push(&e).unwrap();
        }
        let deltas = [
            r.root().text_delta("m", "x"),
            r.reasoning_delta("k", "y"),
            r.at(["t"]).text_delta("n", "z"),
            r.root().set_sequence(20).text_delta("m", "after a gap"),
        ];
        for e in &deltas {
            let (events, bytes) = (v.events(), v.bytes());
            assert!(v.span_delta(e), "{e:?}");
            assert_eq!(v.events(), events + 1, "{e:?}");
            assert_eq!(v.bytes(), bytes + canonical_size(e, None), "{e:?}");
            assert_eq!(v.last, Some((e.sequence, e.event_type())));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]
        /// The hot path (`span_delta`) changes nothing: `push` and the
        /// general path agree on every result and on the state, whatever
        /// the events, options and recoveries (`clear_failure`).
        #[test]
        fn hot_path_matches_the_general_path(
            ops in proptest::collection::vec(op(), 0..150),
            contiguous in any::<bool>(),
            small in any::<bool>(),
            max_events in 20u64..120,
            max_bytes in prop_oneof![Just(u64::MAX), 2_000u64..30_000],
            window in prop_oneof![Just(1usize), Just(2), Just(crate::options::DEFAULT_CLOSED_WINDOW)],
        ) {
            let mut limits = Limits::default();
            if small {
                limits.events_per_run = max_events;
                limits.bytes_per_run = max_bytes;
            }
            let opts = ValidatorOptions::new()
                .contiguous(contiguous)
                .limits(limits)
                .closed_window(window);
            let mut fast = RunValidator::new(opts.clone());
            let mut general = RunValidator::new(opts);
            // A run that entered t0, then t1 inside it, and started a span
            // in each and in root.
            let at = |kind, id, ns| Op { kind, id, ns, text: 1, step: 3, clear: true };
            let prefix = [
                at(17, 0, 0),
                at(8, 0, 0),
                at(9, 0, 0),
                at(8, 1, 2),
                at(9, 1, 2),
                at(2, 0, 0),
                at(2, 1, 2),
                at(2, 2, 4),
            ];
            let mut seq = 0u64;
            let mut events = Vec::new();
            for (i, o) in prefix.into_iter().chain(ops).enumerate() {
                if i > 0 {
                    seq = match o.step {
                        0 => seq,
                        1 => seq + 2,
                        2 => seq.saturating_sub(1),
                        _ => seq + 1,
                    };
                }
                if let Some(e) = event(o, seq) {
                    events.push((e, o.clear));
                }
            }
            for (e, clear) in &events {
                let a = fast.push(e);
                let b = general.push_general(e);
                prop_assert_eq!(&a, &b);
                prop_assert_eq!(fast.events(), general.events());
                prop_assert_eq!(fast.bytes(), general.bytes());
                prop_assert_eq!(fast.last, general.last);
                prop_assert_eq!(fast.is_terminated(), general.is_terminated());
                prop_assert_eq!(fast.state_len(), general.state_len());
                if a.is_err() && *clear {
                    fast.clear_failure();
                    general.clear_failure();
                }
            }
            prop_assert_eq!(fast.finish(), general.finish());
        }
    }
}
