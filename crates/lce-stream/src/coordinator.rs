//! The coordinator: whatever the adapter does, what leaves here obeys the
//! contract (rules 1-15, D8-D11).
//!
//! It is the last stage of the chain (see
//! [`LifecycleStreamExt`](crate::LifecycleStreamExt)): the stages before it
//! drop empty deltas (D7), sanitize and validate in adapter mode (D10a), and
//! yield a typed error item for whatever they refuse. It does not sanitize or
//! validate itself; it coordinates:
//! - on an error item (a rejected event, a violation, a line that did not
//!   parse, an adapter's own error) ends the run with
//!   `run.error{harness_event_invalid}` (D8) and drains what the adapter has
//!   ready;
//! - on an adapter stream that ends without a terminal (the validator's rule
//!   12 item, or the stream's end) emits `run.error{provider_stream_closed}`
//!   (D9, rule 12);
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
use lce_types::{
    CancelReason, Durability, Event, EventType, Limits, Payload, RunCancelled, RunError,
    RunStarted, SideEffectStatus, ThreadState, Timestamp,
};
use lce_validate::{Mode, Rule, ToolSchemas, ValidatorOptions};
use pin_project_lite::pin_project;

use crate::audit::TracingAudit;
use crate::cancel::CancelHandle;
use crate::error::LceError;
use crate::stage::{LifecycleStream, StageCounts};
use crate::store::MemoryStore;
use lce_core::Cause;
use lce_core::{AuditRecord, AuditSink, RunCounters};
use lce_core::{CommitError, CommitRequest, Committed, ThreadStore};

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
    /// Bounds for the sanitizer and rule 11, when
    /// [`enforced`](crate::LifecycleStreamExt::enforced) builds the stages.
    pub limits: Limits,
    /// Tool argument schemas (D6), when
    /// [`enforced`](crate::LifecycleStreamExt::enforced) builds the stages.
    pub schemas: ToolSchemas,
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
    /// not ephemeral, default limits, no schemas, 10 s commit timeout, no
    /// deadline.
    pub fn new(run_id: impl Into<Arc<str>>, conversation_id: impl Into<Arc<str>>) -> Self {
        CoordinatorOptions {
            run_id: run_id.into(),
            conversation_id: conversation_id.into(),
            ephemeral: false,
            limits: Limits::default(),
            schemas: ToolSchemas::new(),
            commit_timeout: Duration::from_secs(10),
            deadline: None,
            drain_limit: 10_000,
            harness_id: "lce-coordinator".to_owned(),
        }
    }

    /// Options for a run read from lines that do not say which run they
    /// are (`lce encode`, the Python `lce.encode`): the ids of its first
    /// item when that is an event (every other event is then checked
    /// against them), else the placeholders `unknown-run` and
    /// `unknown-conversation` (the coordinator writes the run's
    /// `run.started` and terminal under them). Defaults otherwise, as
    /// [`new`](Self::new).
    pub fn for_first_item(first: Option<&Result<Event, LceError>>) -> Self {
        match first {
            Some(Ok(e)) => Self::new(Arc::clone(&e.run_id), Arc::clone(&e.conversation_id)),
            _ => Self::new("unknown-run", "unknown-conversation"),
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

    /// The validator's options for this run: adapter mode (D10a), these
    /// limits, schemas and ephemerality, and this run's identity (its
    /// `run_id` and `conversation_id` from the first event on, since the
    /// coordinator's own events carry them).
    pub fn validator_options(&self) -> ValidatorOptions {
        ValidatorOptions::new()
            .mode(Mode::Adapter)
            .ephemeral(self.ephemeral)
            .limits(self.limits.clone())
            .schemas(self.schemas.clone())
            .identity(Arc::clone(&self.run_id), Arc::clone(&self.conversation_id))
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

    /// The run's options.
    pub fn options(&self) -> &CoordinatorOptions {
        &self.options
    }

    /// Wraps `upstream`, the chain's stages so far (see
    /// [`LifecycleStreamExt`](crate::LifecycleStreamExt)). Over a chain that
    /// drops empty deltas, sanitizes and validates, as
    /// [`enforced`](crate::LifecycleStreamExt::enforced) builds it, the
    /// result always satisfies the contract.
    pub fn coordinate<S>(self, upstream: S) -> Coordinated<S>
    where
        S: LifecycleStream,
    {
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
                deadline,
                state: State::Running,
                queue: VecDeque::new(),
                counters: RunCounters::default(),
                stages: StageCounts::default(),
                last_sequence: None,
                last_timestamp: None,
                output_forwarded: false,
                started: false,
                end: None,
                error: None,
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
    /// How many adapter items had been read when the end was decided (or,
    /// for a rule broken after the adapter's terminal, up to that item).
    position: u64,
}

/// Where and why the coordinator stepped in: what a program driving the
/// chain (say `lce encode`) reports to its user, read from
/// [`Coordinated::intervention`] once the run has ended. Payload-free, like
/// the audit record it mirrors.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intervention {
    /// The terminal the run ended with.
    pub terminal: EventType,
    /// `run.error` code or `run.cancelled` reason, when there is one.
    pub code: Option<String>,
    /// What the adapter broke, when it broke something (none for a
    /// cancellation, a deadline or a failed commit's store).
    pub cause: Option<Cause>,
    /// What the stage that refused the item said, in its payload-free words.
    pub reason: Option<String>,
    /// The 1-based position, among the items the adapter sent, of the item
    /// that decided it: the refused item, the first item after the
    /// adapter's own terminal, or (closure, failed commit, cancellation) the
    /// last item read. One item per line when the adapter reads JSON Lines.
    pub position: u64,
    /// `true` when the coordinator wrote the terminal; `false` when the
    /// adapter's own terminal stood and it broke a rule after it.
    pub coordinator_terminal: bool,
}

struct Inner {
    options: CoordinatorOptions,
    store: Arc<dyn ThreadStore>,
    audit: Arc<dyn AuditSink>,
    cancel: CancelHandle,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    state: State,
    queue: VecDeque<Event>,
    /// What the coordinator itself counted.
    counters: RunCounters,
    /// What the stages before it counted, as of the last poll.
    stages: StageCounts,
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
    /// The error item that ended the run (or broke a rule after the
    /// adapter's terminal), for [`Coordinated::take_error`].
    error: Option<LceError>,
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
                    position: inner.run_counters().events_in,
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
            .field("counters", &self.inner.run_counters())
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

    /// The run's counters so far: the coordinator's, with what the stages
    /// before it dropped and changed (as of the last poll).
    pub fn counters(&self) -> RunCounters {
        self.inner.run_counters()
    }

    /// The cancellation handle of this run.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.inner.cancel.clone()
    }

    /// Where and why the coordinator stepped in: `Some` from the moment it
    /// decided the run's terminal (the terminal is the next item, or was
    /// the last one); `None` before, and when the adapter's run ended as the
    /// contract says (its own terminal, nothing broken after it; a rule
    /// broken after that terminal is found while draining, so read it once
    /// the stream has ended).
    pub fn intervention(&self) -> Option<Intervention> {
        let end = self.inner.end.as_ref()?;
        (end.coordinator_terminal || end.rule.is_some()).then(|| Intervention {
            terminal: end.terminal,
            code: end.code.clone(),
            cause: end.rule,
            reason: end.reason.clone(),
            position: end.position,
            coordinator_terminal: end.coordinator_terminal,
        })
    }

    /// Takes the error item that ended the run (or broke a rule after the
    /// adapter's own terminal), typed as the stage yielded it: a
    /// [`LceError::Parse`] keeps its line and column, a [`LceError::Io`] its
    /// source. `None` when no error item did.
    pub fn take_error(&mut self) -> Option<LceError> {
        self.inner.error.take()
    }
}

fn is_output(ty: EventType) -> bool {
    !matches!(
        ty,
        EventType::RunStarted | EventType::UsageUpdated | EventType::ProviderMetadata
    )
}

impl Inner {
    /// The coordinator's counters with the stages': every item the adapter
    /// sent is counted once, wherever it went.
    fn run_counters(&self) -> RunCounters {
        let (c, s) = (self.counters, self.stages);
        RunCounters {
            events_in: c.events_in + s.empty_deltas + s.discarded,
            forwarded: c.forwarded,
            dropped: c.dropped + s.empty_deltas + s.discarded,
            empty_deltas: s.empty_deltas,
            after_terminal: c.after_terminal + s.discarded,
            cleaned: s.cleaned,
        }
    }

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
            position: self.run_counters().events_in,
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
            position: self.run_counters().events_in,
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

    /// The adapter stream ended without a terminal (D9, rule 12).
    fn closed(&mut self, rule: Cause, reason: Option<String>) {
        tracing::warn!(
            target: "lce::coordinator",
            run_id = %self.options.run_id,
            conversation_id = %self.options.conversation_id,
            rule = %rule,
            "adapter stream ended without a terminal; ending the run with provider_stream_closed"
        );
        self.end_with_error(
            PROVIDER_STREAM_CLOSED,
            PROVIDER_STREAM_CLOSED_MESSAGE,
            Some(rule),
            reason,
            false,
        );
    }

    /// Handles one item from the stages while running. The event to forward
    /// comes back when nothing is queued before it (the steady state: no
    /// trip through the queue); anything else is queued or dropped.
    fn on_item(&mut self, item: Result<Event, LceError>) -> Option<Event> {
        let event = match item {
            Ok(e) => e,
            // The validator's rule 12: the stream ended without a terminal.
            // Not an item of the adapter's, so not counted as one.
            Err(LceError::Violation(v)) if v.rule == Rule::MissingTerminal => {
                self.closed(Cause::Rule(v.rule), Some(v.to_string()));
                return None;
            }
            Err(err) => {
                self.counters.events_in += 1;
                let (seq, ty) = (err.sequence(), err.event_type());
                self.violation(err.cause(), safe_reason(&err), seq, ty);
                self.error = Some(err);
                return None;
            }
        };
        self.counters.events_in += 1;
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
                    position: self.run_counters().events_in,
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
                    position: self.run_counters().events_in,
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

    /// The first item after an adapter's own terminal: the validating
    /// stage's error item says which rule the adapter broke (3, 4 or 15),
    /// kept for the audit record. (Without a validating stage the item is
    /// an event, counted and dropped with no rule named.)
    fn note_after_terminal(&mut self, item: Result<Event, LceError>) {
        // This item is not counted yet: it is the next one.
        let position = self.run_counters().events_in + 1;
        let Some(end) = &mut self.end else { return };
        if end.coordinator_terminal || end.rule.is_some() {
            return;
        }
        end.position = position;
        let Err(e) = item else { return };
        let (rule, reason) = (e.cause(), safe_reason(&e));
        tracing::warn!(
            target: "lce::coordinator",
            run_id = %self.options.run_id,
            rule = %rule,
            "adapter sent events after its terminal; dropped"
        );
        end.rule = Some(rule);
        end.reason = Some(reason);
        self.error = Some(e);
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
            counters: self.run_counters(),
        });
    }
}

impl Inner {
    /// One poll of the run: what [`Coordinated`] yields.
    fn poll_run<S: LifecycleStream>(
        &mut self,
        mut upstream: Pin<&mut Option<S>>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Event, LceError>>> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Poll::Ready(Some(Ok(e)));
            }
            match &mut self.state {
                State::Done => {
                    self.release(upstream.as_mut());
                    self.record();
                    return Poll::Ready(None);
                }
                State::Draining => {
                    self.drain(upstream.as_mut(), cx);
                    self.state = State::Done;
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
                        std::mem::replace(&mut self.state, State::Running)
                    else {
                        continue;
                    };
                    self.on_commit(*terminal, result);
                }
                State::Running => {
                    if let Some(reason) = self.cancel.poll_reason(cx) {
                        self.end_cancelled(reason);
                        continue;
                    }
                    if self.deadline.is_none() {
                        if let Some(d) = self.options.deadline {
                            self.deadline = Some(Box::pin(tokio::time::sleep(d)));
                        }
                    }
                    if let Some(d) = &mut self.deadline {
                        if d.as_mut().poll(cx).is_ready() {
                            self.end_cancelled(CancelReason::Deadline);
                            continue;
                        }
                    }
                    let Some(up) = upstream.as_mut().as_pin_mut() else {
                        // Released without a terminal: what `closed` ends.
                        self.closed(Cause::Rule(Rule::MissingTerminal), None);
                        continue;
                    };
                    let mut up = up;
                    match up.as_mut().poll_next(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Some(item)) => {
                            // The stages' counts, fresh where the run may end
                            // (they say where it ended): not for every event.
                            if item.as_ref().map_or(true, |e| e.event_type().is_terminal()) {
                                self.stages = up.as_ref().stage_counts();
                            }
                            if let Some(e) = self.on_item(item) {
                                return Poll::Ready(Some(Ok(e)));
                            }
                        }
                        Poll::Ready(None) => {
                            self.release(upstream.as_mut());
                            self.closed(Cause::Rule(Rule::MissingTerminal), None);
                        }
                    }
                }
            }
        }
    }

    /// Counts what the adapter has ready after the terminal, without
    /// waiting for more, at most `drain_limit` items (D8).
    fn drain<S: LifecycleStream>(
        &mut self,
        mut upstream: Pin<&mut Option<S>>,
        cx: &mut Context<'_>,
    ) {
        let mut drained = 0usize;
        if let Some(mut up) = upstream.as_mut().as_pin_mut() {
            while drained < self.options.drain_limit {
                match up.as_mut().poll_next(cx) {
                    Poll::Ready(Some(item)) => {
                        if drained == 0 {
                            self.stages = up.as_ref().stage_counts();
                            self.note_after_terminal(item);
                        }
                        drained += 1;
                        self.counters.events_in += 1;
                        self.counters.dropped += 1;
                        self.counters.after_terminal += 1;
                    }
                    Poll::Ready(None) | Poll::Pending => break,
                }
            }
            // With what the stages before drained themselves (D8), so the
            // log counts what the audit counts.
            self.stages = up.as_ref().stage_counts();
        }
        let after_terminal = self.run_counters().after_terminal;
        if after_terminal > 0 {
            tracing::debug!(
                target: "lce::coordinator",
                run_id = %self.options.run_id,
                dropped = after_terminal,
                "events after the terminal dropped"
            );
        }
    }

    /// Lets the stages (and the adapter) go, keeping their last counts.
    fn release<S: LifecycleStream>(&mut self, mut upstream: Pin<&mut Option<S>>) {
        if let Some(up) = upstream.as_ref().as_pin_ref() {
            self.stages = up.stage_counts();
        }
        upstream.set(None);
    }
}

impl<S> Stream for Coordinated<S>
where
    S: LifecycleStream,
{
    type Item = Result<Event, LceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let (mut upstream, inner) = (this.upstream, this.inner);
        let poll = inner.poll_run(upstream.as_mut(), cx);
        if let Some(up) = upstream.as_ref().as_pin_ref() {
            inner.stages = up.stage_counts();
        }
        poll
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // At least the queued events; at most what the adapter may still
        // send plus the coordinator's own (run.started and a terminal).
        // Once the adapter is released (done, or it ended and the
        // coordinator ended the run at once), only the queue is left.
        let queued = self.inner.queue.len();
        match (&self.inner.state, &self.upstream) {
            (State::Done, _) | (_, None) => (queued, Some(queued)),
            (_, Some(up)) => {
                let (_, hi) = up.size_hint();
                (queued, hi.and_then(|h| h.checked_add(queued + 2)))
            }
        }
    }
}

impl<S> futures::stream::FusedStream for Coordinated<S>
where
    S: LifecycleStream,
{
    fn is_terminated(&self) -> bool {
        matches!(self.inner.state, State::Done)
            && self.inner.queue.is_empty()
            && self.upstream.is_none()
    }
}
