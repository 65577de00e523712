//! The coordinator: whatever the adapter does, what leaves here obeys the
//! contract (rules 1-15, D8-D11).
//!
//! It wraps an adapter stream and, per item:
//! - drops empty deltas (D7), sanitizes (bounds, hygiene) and validates in
//!   adapter mode (D10a);
//! - on a rejected or invalid item ends the run with
//!   `run.error{harness_event_invalid}` (D8), drops the item and drains what
//!   the adapter has ready;
//! - on an adapter stream that ends without a terminal emits
//!   `run.error{provider_stream_closed}` (D9, rule 12);
//! - before `run.finished` / `run.interrupted` commits through the
//!   [`ThreadStore`] and fills `thread_state` from the result, or turns the
//!   terminal into `run.error{thread_durability_uncertain}` (D10, rules
//!   13-15); never retried; skipped for ephemeral harnesses;
//! - ends the run with `run.cancelled` on a [`CancelHandle`] request
//!   (client request, shutdown), at its deadline, and — recorded in the audit
//!   only — when the consumer drops the stream (disconnect) (D11);
//! - drops and counts whatever follows a terminal;
//! - reports every run's end, with counters, to an [`AuditSink`].
//!
//! Its own events never read the wall clock when they can avoid it: they
//! carry the timestamp of the last event seen, so output from files is
//! deterministic. Only when no event was seen at all is the clock read.

use std::collections::VecDeque;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use futures::future::BoxFuture;
use lce_sanitize::Sanitizer;
use lce_types::{
    CancelReason, Durability, Event, EventType, Limits, Payload, RunCancelled, RunError,
    RunStarted, SideEffectStatus, ThreadState, Timestamp,
};
use lce_validate::{Mode, Rule, RunValidator, ToolSchemas, ValidatorOptions};
use pin_project_lite::pin_project;

use crate::audit::{AuditRecord, AuditSink, RunCounters, TracingAudit};
use crate::cancel::CancelHandle;
use crate::error::{Cause, LceError};
use crate::store::{CommitError, CommitRequest, Committed, MemoryStore, ThreadStore};

/// `run.error` code: the adapter broke the contract (D8).
pub const HARNESS_EVENT_INVALID: &str = "harness_event_invalid";
/// `run.error` code: the adapter stream ended without a terminal (D9).
pub const PROVIDER_STREAM_CLOSED: &str = "provider_stream_closed";
/// DA's generic failure text (its one home is `lce-types`): every terminal
/// the coordinator writes itself uses it, so clients see no new text; the
/// `code` tells the cases apart.
pub use lce_types::AGENT_EXECUTION_FAILED;
/// The fixed, safe message of `harness_event_invalid`.
pub const HARNESS_EVENT_INVALID_MESSAGE: &str = AGENT_EXECUTION_FAILED;
/// The fixed, safe message of `provider_stream_closed`.
pub const PROVIDER_STREAM_CLOSED_MESSAGE: &str = AGENT_EXECUTION_FAILED;
/// The fixed, safe message of `thread_durability_uncertain`.
pub const THREAD_DURABILITY_UNCERTAIN_MESSAGE: &str = AGENT_EXECUTION_FAILED;

/// How the coordinator treats one run.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct CoordinatorOptions {
    /// The run's id: every adapter event must carry it.
    pub run_id: Arc<str>,
    /// The conversation's id: every adapter event must carry it.
    pub conversation_id: Arc<str>,
    /// Ephemeral harnesses skip commits and finish without `thread_state`.
    pub ephemeral: bool,
    /// Bounds for the sanitizer and rule 11.
    pub limits: Limits,
    /// Tool argument schemas (D6).
    pub schemas: ToolSchemas,
    /// Sanitize each event before validating it.
    pub sanitize: bool,
    /// How long a commit may take before it counts as failed.
    pub commit_timeout: Duration,
    /// The run's deadline, from the first poll.
    pub deadline: Option<Duration>,
    /// How many ready items to drain (and count) after the terminal.
    pub drain_limit: usize,
    /// `harness_id` of the `run.started` the coordinator writes when the
    /// adapter did not start the run itself.
    pub harness_id: String,
}

impl CoordinatorOptions {
    /// Options for the run `run_id` of `conversation_id`, with defaults:
    /// not ephemeral, default limits, sanitizing, 10 s commit timeout, no
    /// deadline.
    pub fn new(run_id: impl Into<Arc<str>>, conversation_id: impl Into<Arc<str>>) -> Self {
        CoordinatorOptions {
            run_id: run_id.into(),
            conversation_id: conversation_id.into(),
            ephemeral: false,
            limits: Limits::default(),
            schemas: ToolSchemas::new(),
            sanitize: true,
            commit_timeout: Duration::from_secs(10),
            deadline: None,
            drain_limit: 10_000,
            harness_id: "lce-coordinator".to_owned(),
        }
    }

    /// Marks the harness ephemeral (no commits, rule 13 relaxed).
    pub fn ephemeral(mut self, ephemeral: bool) -> Self {
        self.ephemeral = ephemeral;
        self
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the tool argument schemas.
    pub fn schemas(mut self, schemas: ToolSchemas) -> Self {
        self.schemas = schemas;
        self
    }

    /// Turns sanitizing on or off.
    pub fn sanitize(mut self, sanitize: bool) -> Self {
        self.sanitize = sanitize;
        self
    }

    /// Sets the commit timeout.
    pub fn commit_timeout(mut self, timeout: Duration) -> Self {
        self.commit_timeout = timeout;
        self
    }

    /// Sets the run's deadline.
    pub fn deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }
}

/// Builds [`Coordinated`] streams: options, a store, an audit sink and a
/// cancellation handle.
pub struct Coordinator {
    options: CoordinatorOptions,
    store: Arc<dyn ThreadStore>,
    audit: Arc<dyn AuditSink>,
    cancel: CancelHandle,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Coordinator {
    /// A coordinator with an in-memory store and the `tracing` audit sink.
    pub fn new(options: CoordinatorOptions) -> Self {
        Coordinator {
            options,
            store: Arc::new(MemoryStore::new()),
            audit: Arc::new(TracingAudit),
            cancel: CancelHandle::new(),
        }
    }

    /// Uses `store` for commits.
    pub fn store(mut self, store: Arc<dyn ThreadStore>) -> Self {
        self.store = store;
        self
    }

    /// Sends audit records to `audit`.
    pub fn audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = audit;
        self
    }

    /// Uses `cancel` as the run's cancellation handle.
    pub fn cancel_handle(mut self, cancel: CancelHandle) -> Self {
        self.cancel = cancel;
        self
    }

    /// The run's cancellation handle (a clone).
    pub fn handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Wraps `upstream`; the result always satisfies the contract.
    pub fn coordinate<S>(self, upstream: S) -> Coordinated<S>
    where
        S: Stream<Item = Result<Event, LceError>>,
    {
        let validator = RunValidator::new(
            ValidatorOptions::new()
                .mode(Mode::Adapter)
                .ephemeral(self.options.ephemeral)
                .limits(self.options.limits.clone())
                .schemas(self.options.schemas.clone()),
        );
        let sanitizer = self
            .options
            .sanitize
            .then(|| Sanitizer::new(self.options.limits.clone()));
        // The deadline's timer starts at the first poll (as documented), not
        // here: the stream may be built long before it is polled, and outside
        // any runtime.
        let deadline = None;
        Coordinated {
            upstream: Some(upstream),
            inner: Inner {
                options: self.options,
                store: self.store,
                audit: self.audit,
                cancel: self.cancel,
                validator,
                sanitizer,
                deadline,
                state: State::Running,
                queue: VecDeque::new(),
                counters: RunCounters::default(),
                last_sequence: None,
                last_timestamp: None,
                output_forwarded: false,
                started: false,
                end: None,
                recorded: false,
            },
        }
    }
}

enum State {
    Running,
    Committing {
        commit: BoxFuture<'static, Result<Committed, CommitError>>,
        timeout: Pin<Box<tokio::time::Sleep>>,
        terminal: Box<Event>,
    },
    Draining,
    Done,
}

impl State {
    /// The state's name, for `Debug`.
    fn name(&self) -> &'static str {
        match self {
            State::Running => "running",
            State::Committing { .. } => "committing",
            State::Draining => "draining",
            State::Done => "done",
        }
    }
}

/// What an adapter's error item says, for the audit and logs, without its
/// text where that text is the adapter's own: an `io::Error` from an adapter
/// carries whatever its provider said (raw error text, URLs with
/// credentials), so only its kind is kept. Parse errors, rejections and
/// violations are payload-free by construction.
fn safe_reason(err: &LceError) -> String {
    match err {
        LceError::Io(e) => format!("I/O error ({})", e.kind()),
        LceError::Encode(_) => "encode error".to_owned(),
        other => other.to_string(),
    }
}

/// How the run ended, for the audit record.
#[derive(Clone, Debug)]
struct End {
    terminal: EventType,
    sequence: Option<u64>,
    code: Option<String>,
    side_effect_status: Option<SideEffectStatus>,
    rule: Option<Cause>,
    reason: Option<String>,
    coordinator_terminal: bool,
}

struct Inner {
    options: CoordinatorOptions,
    store: Arc<dyn ThreadStore>,
    audit: Arc<dyn AuditSink>,
    cancel: CancelHandle,
    validator: RunValidator,
    sanitizer: Option<Sanitizer>,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    state: State,
    queue: VecDeque<Event>,
    counters: RunCounters,
    last_sequence: Option<u64>,
    /// The last forwarded event's timestamp (none before the first), for
    /// the coordinator's own events. Cloning one allocates nothing unless
    /// its text is unusually long.
    last_timestamp: Option<Timestamp>,
    /// Whether an output event (anything but run.started, usage and
    /// metadata) was forwarded: decides `side_effect_status` (D8).
    output_forwarded: bool,
    started: bool,
    end: Option<End>,
    recorded: bool,
}

pin_project! {
    /// A coordinated run: see the [module docs](self). Yields `Ok` events
    /// only; the last one is the run's single terminal.
    #[must_use = "streams do nothing unless polled"]
    pub struct Coordinated<S> {
        #[pin]
        upstream: Option<S>,
        inner: Inner,
    }

    impl<S> PinnedDrop for Coordinated<S> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let inner = this.inner;
            if inner.end.is_none() {
                // The consumer went away before the run ended: a disconnect.
                let status = inner.side_effect_status();
                inner.end = Some(End {
                    terminal: EventType::RunCancelled,
                    sequence: None,
                    code: Some(CancelReason::Disconnect.as_str().to_owned()),
                    side_effect_status: Some(status),
                    rule: None,
                    reason: None,
                    coordinator_terminal: true,
                });
            }
            inner.record();
        }
    }
}

/// The adapter stream (while the coordinator holds it), the run, where the
/// coordinator is (`running`, `committing`, `draining`, `done`), how many of
/// its events wait to be yielded, and the counters. Payload-free unless the
/// adapter stream's own `Debug` is not.
impl<S: std::fmt::Debug> std::fmt::Debug for Coordinated<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinated")
            .field("upstream", &self.upstream)
            .field("run_id", &self.inner.options.run_id)
            .field("conversation_id", &self.inner.options.conversation_id)
            .field("state", &self.inner.state.name())
            .field("queued", &self.inner.queue.len())
            .field("ended", &self.inner.end.is_some())
            .field("counters", &self.inner.counters)
            .finish_non_exhaustive()
    }
}

/// Access to the adapter stream, like `futures`' adaptors, except that the
/// coordinator lets the adapter go as soon as it is done with it (after the
/// terminal and the drain, on cancellation, or when the adapter ended): from
/// then on there is none, and these return `None`.
///
/// Take care not to disturb the adapter stream's state while the run goes
/// on: the coordinator counts and validates what it reads, not what is taken
/// from the stream behind its back.
impl<S> Coordinated<S> {
    /// The adapter stream, while the coordinator holds it.
    pub fn get_ref(&self) -> Option<&S> {
        self.upstream.as_ref()
    }

    /// The adapter stream, mutably, while the coordinator holds it.
    pub fn get_mut(&mut self) -> Option<&mut S> {
        self.upstream.as_mut()
    }

    /// The pinned adapter stream, while the coordinator holds it.
    pub fn get_pin_mut(self: Pin<&mut Self>) -> Option<Pin<&mut S>> {
        self.project().upstream.as_pin_mut()
    }

    /// Ends the coordination and gives the adapter stream back, if the
    /// coordinator still holds it.
    ///
    /// The coordinator itself is dropped, exactly as when the consumer drops
    /// the stream: its audit record is sent now, and a run that had not
    /// ended is audited as `run.cancelled{disconnect}` (D11). The adapter
    /// stream is taken out of its slot rather than moved out of the struct
    /// (which a type with a destructor forbids); no `unsafe` is involved, and
    /// pinning is kept: a `Coordinated` held by value was never pinned, or
    /// is `Unpin`.
    pub fn into_inner(mut self) -> Option<S> {
        self.upstream.take()
    }

    /// The run's counters so far.
    pub fn counters(&self) -> RunCounters {
        self.inner.counters
    }

    /// The cancellation handle of this run.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.inner.cancel.clone()
    }
}

fn is_output(ty: EventType) -> bool {
    !matches!(
        ty,
        EventType::RunStarted | EventType::UsageUpdated | EventType::ProviderMetadata
    )
}

impl Inner {
    fn side_effect_status(&self) -> SideEffectStatus {
        if self.output_forwarded {
            SideEffectStatus::Possible
        } else {
            SideEffectStatus::None
        }
    }

    fn timestamp(&self) -> Timestamp {
        self.last_timestamp.clone().unwrap_or_else(Timestamp::now)
    }

    fn next_sequence(&self) -> u64 {
        self.last_sequence.map_or(0, |s| s.saturating_add(1))
    }

    fn own_event(&self, payload: Payload) -> Event {
        Event {
            run_id: Arc::clone(&self.options.run_id),
            conversation_id: Arc::clone(&self.options.conversation_id),
            sequence: self.next_sequence(),
            timestamp: self.timestamp(),
            namespace: Vec::new(),
            payload,
        }
    }

    /// Queues an event for output and tracks what it means for the run.
    fn forward(&mut self, event: Event) {
        self.note_forwarded(&event);
        self.queue.push_back(event);
    }

    /// Tracks what forwarding `event` means for the run.
    fn note_forwarded(&mut self, event: &Event) {
        self.last_sequence = Some(event.sequence);
        self.last_timestamp = Some(event.timestamp.clone());
        let ty = event.event_type();
        if ty == EventType::RunStarted {
            self.started = true;
        }
        if is_output(ty) && !ty.is_terminal() {
            self.output_forwarded = true;
        }
        self.counters.forwarded += 1;
    }

    fn ensure_started(&mut self) {
        if !self.started {
            let e = self.own_event(Payload::RunStarted(RunStarted {
                message_id: None,
                harness_id: self.options.harness_id.clone(),
                adapter_version: env!("CARGO_PKG_VERSION").to_owned(),
                provider_run_id: None,
            }));
            self.forward(e);
        }
    }

    /// Ends the run with a terminal of the coordinator's own.
    fn end_with_error(
        &mut self,
        code: &str,
        message: &str,
        rule: Option<Cause>,
        reason: Option<String>,
        retryable: bool,
    ) {
        self.ensure_started();
        let status = if code == lce_types::THREAD_DURABILITY_UNCERTAIN {
            SideEffectStatus::Possible
        } else {
            self.side_effect_status()
        };
        let e = self.own_event(Payload::RunError(RunError {
            code: code.to_owned(),
            message: message.to_owned(),
            retryable,
            retry_after_seconds: None,
            side_effect_status: status,
        }));
        self.end = Some(End {
            terminal: EventType::RunError,
            sequence: Some(e.sequence),
            code: Some(code.to_owned()),
            side_effect_status: Some(status),
            rule,
            reason,
            coordinator_terminal: true,
        });
        self.forward(e);
        self.state = State::Draining;
    }

    fn end_cancelled(&mut self, reason: CancelReason) {
        self.ensure_started();
        let status = self.side_effect_status();
        let e = self.own_event(Payload::RunCancelled(RunCancelled {
            reason,
            side_effect_status: status,
        }));
        self.end = Some(End {
            terminal: EventType::RunCancelled,
            sequence: Some(e.sequence),
            code: Some(reason.as_str().to_owned()),
            side_effect_status: Some(status),
            rule: None,
            reason: None,
            coordinator_terminal: true,
        });
        self.forward(e);
        // Cancellation drops the adapter at once: nothing is drained.
        self.state = State::Done;
    }

    fn violation(
        &mut self,
        rule: Cause,
        reason: String,
        sequence: Option<u64>,
        event_type: Option<EventType>,
    ) {
        tracing::warn!(
            target: "lce::coordinator",
            run_id = %self.options.run_id,
            conversation_id = %self.options.conversation_id,
            sequence,
            event_type = event_type.map(|t| t.as_str()),
            rule = %rule,
            "adapter event rejected; ending the run with harness_event_invalid"
        );
        self.counters.dropped += 1;
        self.end_with_error(
            HARNESS_EVENT_INVALID,
            HARNESS_EVENT_INVALID_MESSAGE,
            Some(rule),
            Some(reason),
            false,
        );
    }

    /// Handles one adapter item while running.
    /// Handles one item from the adapter. The event to forward comes back
    /// when nothing is queued before it (the steady state: no trip through
    /// the queue); anything else is queued or dropped.
    fn on_item(&mut self, item: Result<Event, LceError>) -> Option<Event> {
        self.counters.events_in += 1;
        let mut event = match item {
            Ok(e) => e,
            Err(err) => {
                let (seq, ty) = (err.sequence(), err.event_type());
                self.violation(err.cause(), safe_reason(&err), seq, ty);
                return None;
            }
        };
        if event.is_empty_delta() {
            self.counters.dropped += 1;
            self.counters.empty_deltas += 1;
            return None;
        }
        let (sequence, event_type) = (event.sequence, event.event_type());
        if let Some(s) = &self.sanitizer {
            // In place: the event is not moved in and out (240 bytes).
            match s.sanitize_in_place(&mut event) {
                Ok(report) => {
                    if !report.is_clean() {
                        self.counters.cleaned += 1;
                    }
                }
                Err(rejection) => {
                    tracing::debug!(target: "lce::coordinator", kind = ?rejection.kind, "sanitizer rejection");
                    let reason = format!("seq {sequence}: {event_type} rejected: {rejection}");
                    self.violation(Cause::Sanitize, reason, Some(sequence), Some(event_type));
                    return None;
                }
            }
        }
        // Run identity against the options: the validator takes the run's ids
        // from the first event it accepts, but the coordinator's own events
        // carry the options' ids, so a first event with other ids would make
        // a run with two. (Later events are checked by the validator against
        // the first.) Ids are bounded and control-free here (sanitized).
        if self.validator.events() == 0 {
            let mismatch = if *event.run_id != *self.options.run_id {
                Some(("run_id", &*event.run_id, "run is", &*self.options.run_id))
            } else if *event.conversation_id != *self.options.conversation_id {
                let (got, want) = (&*event.conversation_id, &*self.options.conversation_id);
                Some(("conversation_id", got, "run's is", want))
            } else {
                None
            };
            if let Some((field, got, is, want)) = mismatch {
                let v = lce_validate::Violation::new(
                    Rule::RunIdentity,
                    sequence,
                    Some(event_type),
                    format!("{event_type} has {field} `{got}` but the {is} `{want}`"),
                );
                self.violation(
                    Cause::Rule(v.rule),
                    v.to_string(),
                    Some(sequence),
                    Some(event_type),
                );
                return None;
            }
        }
        if let Err(v) = self.validator.push(&event) {
            self.violation(
                Cause::Rule(v.rule),
                v.to_string(),
                Some(v.sequence),
                v.event_type,
            );
            return None;
        }
        match event.event_type() {
            EventType::RunFinished | EventType::RunInterrupted if !self.options.ephemeral => {
                let request = CommitRequest {
                    run_id: event.run_id.to_string(),
                    conversation_id: event.conversation_id.to_string(),
                    sequence: event.sequence,
                    interrupt_id: match &event.payload {
                        Payload::RunInterrupted(i) => Some(i.interrupt_id.clone()),
                        _ => None,
                    },
                };
                let commit = if event.event_type() == EventType::RunFinished {
                    self.store.commit_final(request)
                } else {
                    self.store.commit_interrupt(request)
                };
                self.state = State::Committing {
                    commit,
                    timeout: Box::pin(tokio::time::sleep(self.options.commit_timeout)),
                    terminal: Box::new(event),
                };
            }
            ty if ty.is_terminal() => {
                let mut event = event;
                if let Payload::RunFinished(f) = &mut event.payload {
                    // Ephemeral: whatever the adapter claimed is not trusted.
                    f.thread_state = None;
                }
                self.end = Some(End {
                    terminal: ty,
                    sequence: Some(event.sequence),
                    code: match &event.payload {
                        Payload::RunError(e) => Some(e.code.clone()),
                        Payload::RunCancelled(c) => Some(c.reason.as_str().to_owned()),
                        _ => None,
                    },
                    side_effect_status: match &event.payload {
                        Payload::RunError(e) => Some(e.side_effect_status),
                        Payload::RunCancelled(c) => Some(c.side_effect_status),
                        _ => None,
                    },
                    rule: None,
                    reason: None,
                    coordinator_terminal: false,
                });
                self.forward(event);
                self.state = State::Draining;
            }
            _ if self.queue.is_empty() => {
                self.note_forwarded(&event);
                return Some(event);
            }
            _ => self.forward(event),
        }
        None
    }

    fn on_commit(&mut self, terminal: Event, result: Result<Committed, CommitError>) {
        match result {
            Ok(c) => {
                let mut terminal = terminal;
                if let Payload::RunFinished(f) = &mut terminal.payload {
                    f.thread_state = Some(ThreadState {
                        durability: Durability::Committed,
                        durable_revision: c.durable_revision,
                        head_ref: c.head_ref,
                    });
                }
                self.end = Some(End {
                    terminal: terminal.event_type(),
                    sequence: Some(terminal.sequence),
                    code: None,
                    side_effect_status: None,
                    rule: None,
                    reason: None,
                    coordinator_terminal: false,
                });
                self.forward(terminal);
                self.state = State::Draining;
            }
            Err(e) => {
                tracing::warn!(
                    target: "lce::coordinator",
                    run_id = %self.options.run_id,
                    conversation_id = %self.options.conversation_id,
                    sequence = terminal.sequence,
                    event_type = terminal.event_type().as_str(),
                    failure = ?e,
                    "thread state commit failed; ending the run with thread_durability_uncertain"
                );
                // The terminal's sequence is free again: it was never forwarded.
                self.output_forwarded = true;
                self.end_with_error(
                    lce_types::THREAD_DURABILITY_UNCERTAIN,
                    THREAD_DURABILITY_UNCERTAIN_MESSAGE,
                    Some(Cause::Rule(Rule::DurabilityUncertain)),
                    Some(format!(
                        "seq {}: the {} commit failed ({e})",
                        terminal.sequence,
                        terminal.event_type()
                    )),
                    false,
                );
            }
        }
    }

    /// The first item after an adapter's own terminal says which rule the
    /// adapter broke (3, 4 or 15): kept for the audit record.
    fn note_after_terminal(&mut self, item: Result<Event, LceError>) {
        let Some(end) = &mut self.end else { return };
        if end.coordinator_terminal || end.rule.is_some() {
            return;
        }
        let (rule, reason) = match item {
            Ok(event) => match self.validator.push(&event) {
                Err(v) => (Cause::Rule(v.rule), v.to_string()),
                Ok(()) => return,
            },
            Err(e) => (e.cause(), safe_reason(&e)),
        };
        tracing::warn!(
            target: "lce::coordinator",
            run_id = %self.options.run_id,
            rule = %rule,
            "adapter sent events after its terminal; dropped"
        );
        end.rule = Some(rule);
        end.reason = Some(reason);
    }

    fn record(&mut self) {
        if self.recorded {
            return;
        }
        let Some(end) = self.end.clone() else { return };
        self.recorded = true;
        self.audit.record(&AuditRecord {
            run_id: self.options.run_id.to_string(),
            conversation_id: self.options.conversation_id.to_string(),
            terminal: end.terminal,
            sequence: end.sequence,
            code: end.code,
            side_effect_status: end.side_effect_status,
            rule: end.rule,
            reason: end.reason,
            coordinator_terminal: end.coordinator_terminal,
            counters: self.counters,
        });
    }
}

impl<S> Stream for Coordinated<S>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    type Item = Result<Event, LceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            let inner = &mut *this.inner;
            if let Some(e) = inner.queue.pop_front() {
                return Poll::Ready(Some(Ok(e)));
            }
            match &mut inner.state {
                State::Done => {
                    this.upstream.set(None);
                    inner.record();
                    return Poll::Ready(None);
                }
                State::Draining => {
                    // Count what the adapter has ready after the terminal,
                    // without waiting for more, then let it go.
                    let mut drained = 0usize;
                    if let Some(up) = this.upstream.as_mut().as_pin_mut() {
                        let mut up = up;
                        while drained < inner.options.drain_limit {
                            match up.as_mut().poll_next(cx) {
                                Poll::Ready(Some(item)) => {
                                    if drained == 0 {
                                        inner.note_after_terminal(item);
                                    }
                                    drained += 1;
                                    inner.counters.events_in += 1;
                                    inner.counters.dropped += 1;
                                    inner.counters.after_terminal += 1;
                                }
                                Poll::Ready(None) | Poll::Pending => break,
                            }
                        }
                    }
                    if drained > 0 {
                        tracing::debug!(
                            target: "lce::coordinator",
                            run_id = %inner.options.run_id,
                            dropped = drained,
                            "events after the terminal dropped"
                        );
                    }
                    inner.state = State::Done;
                }
                State::Committing {
                    commit, timeout, ..
                } => {
                    let result = match commit.as_mut().poll(cx) {
                        Poll::Ready(r) => r,
                        Poll::Pending => match timeout.as_mut().poll(cx) {
                            Poll::Ready(()) => Err(CommitError::TimedOut),
                            Poll::Pending => return Poll::Pending,
                        },
                    };
                    let State::Committing { terminal, .. } =
                        std::mem::replace(&mut inner.state, State::Running)
                    else {
                        continue;
                    };
                    inner.on_commit(*terminal, result);
                }
                State::Running => {
                    if let Some(reason) = inner.cancel.poll_reason(cx) {
                        inner.end_cancelled(reason);
                        continue;
                    }
                    if inner.deadline.is_none() {
                        if let Some(d) = inner.options.deadline {
                            inner.deadline = Some(Box::pin(tokio::time::sleep(d)));
                        }
                    }
                    if let Some(d) = &mut inner.deadline {
                        if d.as_mut().poll(cx).is_ready() {
                            inner.end_cancelled(CancelReason::Deadline);
                            continue;
                        }
                    }
                    let Some(up) = this.upstream.as_mut().as_pin_mut() else {
                        inner.end_with_error(
                            PROVIDER_STREAM_CLOSED,
                            PROVIDER_STREAM_CLOSED_MESSAGE,
                            Some(Cause::Rule(Rule::MissingTerminal)),
                            None,
                            false,
                        );
                        continue;
                    };
                    match up.poll_next(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Some(item)) => {
                            if let Some(e) = inner.on_item(item) {
                                return Poll::Ready(Some(Ok(e)));
                            }
                        }
                        Poll::Ready(None) => {
                            this.upstream.set(None);
                            let (rule, reason) = match inner.validator.finish() {
                                Err(v) => (Cause::Rule(v.rule), Some(v.to_string())),
                                Ok(()) => (Cause::Rule(Rule::MissingTerminal), None),
                            };
                            tracing::warn!(
                                target: "lce::coordinator",
                                run_id = %inner.options.run_id,
                                conversation_id = %inner.options.conversation_id,
                                rule = %rule,
                                "adapter stream ended without a terminal; ending the run with provider_stream_closed"
                            );
                            inner.end_with_error(
                                PROVIDER_STREAM_CLOSED,
                                PROVIDER_STREAM_CLOSED_MESSAGE,
                                Some(rule),
                                reason,
                                false,
                            );
                        }
                    }
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // At least the queued events; at most what the adapter may still
        // send plus the coordinator's own (run.started and a terminal).
        let queued = self.inner.queue.len();
        match (&self.inner.state, &self.upstream) {
            (State::Done, _) => (queued, Some(queued)),
            (_, Some(up)) => {
                let (_, hi) = up.size_hint();
                (queued, hi.and_then(|h| h.checked_add(queued + 2)))
            }
            (_, None) => (queued, Some(queued + 2)),
        }
    }
}

impl<S> futures::stream::FusedStream for Coordinated<S>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    fn is_terminated(&self) -> bool {
        matches!(self.inner.state, State::Done)
            && self.inner.queue.is_empty()
            && self.upstream.is_none()
    }
}
