//! The writing half of the run log: [`Logged`], the future that writes the
//! coordinator's output to a [`RunLog`] before anything reads it
//! (`gateway.md`, write before send), and [`LogWriter`], its position in
//! one run's log.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::Stream;
use lce_stream::LceError;
use lce_types::{Event, EventType};
use pin_project_lite::pin_project;

use crate::log::{LogEntry, LogError, RunInfo, RunLog};

/// How many entries one append of [`Logged`] carries at most. It keeps one
/// append in flight and gathers what becomes ready meanwhile into the next.
pub const MAX_BATCH: usize = 64;

/// The writing end of one run's log: the log, the run, the owner and the
/// next position. Made by [`LogWriter::create`], consumed by
/// [`RunLogStreamExt::logged`].
#[derive(Clone)]
pub struct LogWriter {
    log: Arc<dyn RunLog>,
    run_id: Arc<str>,
    owner: Arc<str>,
    next: u64,
}

impl fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogWriter")
            .field("run_id", &self.run_id)
            .field("owner", &self.owner)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl LogWriter {
    /// Creates the run's log, owned by `info.owner` for `lease`:
    /// [`LogError::Exists`] when the run id already has one.
    pub async fn create(
        log: Arc<dyn RunLog>,
        info: RunInfo,
        lease: Duration,
    ) -> Result<Self, LogError> {
        let run_id: Arc<str> = info.run_id.as_str().into();
        let owner: Arc<str> = info.owner.as_str().into();
        log.create(info, lease).await?;
        Ok(LogWriter {
            log,
            run_id,
            owner,
            next: 1,
        })
    }

    /// A writer that appends to an existing log from `next` on, as `owner`
    /// (a replica that claimed an orphaned run).
    pub fn resume(log: Arc<dyn RunLog>, run_id: &str, owner: &str, next: u64) -> Self {
        LogWriter {
            log,
            run_id: run_id.into(),
            owner: owner.into(),
            next,
        }
    }

    /// The run id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The position the next entry will take.
    pub fn next_position(&self) -> u64 {
        self.next
    }

    /// Extends the lease; `false` when this writer no longer owns the run.
    pub async fn renew(&self, lease: Duration) -> Result<bool, LogError> {
        self.log.renew(&self.run_id, &self.owner, lease).await
    }

    /// Extends the lease and learns whether a cancel was requested
    /// ([`RunLog::renew_and_check`]).
    pub async fn renew_and_check(&self, lease: Duration) -> Result<crate::Renewal, LogError> {
        self.log
            .renew_and_check(&self.run_id, &self.owner, lease)
            .await
    }

    /// Gives up the lease at once, so that another replica ends the run.
    pub async fn release(&self) -> Result<(), LogError> {
        self.log.release(&self.run_id, &self.owner).await
    }

    /// Takes back the log this writer created, before anything was
    /// appended ([`RunLog::abandon`]): `false` when it holds an entry or
    /// is no longer this writer's.
    pub async fn abandon(self) -> Result<bool, LogError> {
        self.log.abandon(&self.run_id, &self.owner).await
    }

    pub(crate) fn append(&mut self, entry: LogEntry) -> Ack {
        let position = self.next;
        self.next += 1;
        self.log.append(&self.run_id, &self.owner, position, entry)
    }

    fn append_batch(&mut self, entries: Vec<LogEntry>) -> Ack {
        let position = self.next;
        self.next += entries.len() as u64;
        self.log
            .append_batch(&self.run_id, &self.owner, position, entries)
    }
}

pub(crate) type Ack = Pin<Box<dyn Future<Output = Result<(), LogError>> + Send>>;

/// What [`Logged`] wrote, once the run it logs has ended and every entry is
/// acknowledged.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoggedRun {
    /// The terminal the log was sealed with (`None`: the chain ended
    /// without one, which the coordinator never does).
    pub terminal: Option<EventType>,
    /// Events written.
    pub events: u64,
    /// Entries written (events and idle markers): the last position.
    pub entries: u64,
}

/// Why [`Logged`] stopped before the run's end.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The log refused or failed an append: nothing after it is written.
    #[error("the run log failed an append")]
    Log(#[source] LogError),
    /// The chain yielded an error item instead of an event (the coordinator
    /// never does: its errors become terminals).
    #[error("the chain yielded an error item ({})", .0.cause())]
    Chain(#[source] LceError),
}

/// Writes a chain to a run log: [`RunLogStreamExt::logged`].
pub trait RunLogStreamExt: Stream<Item = Result<Event, LceError>> + Sized {
    /// Writes each event to the run log of `writer`, in order (`gateway.md`,
    /// write before send: readers read the log, so a reader sees an event
    /// only once the engine has acknowledged it). One append is in flight at
    /// a time; what becomes ready meanwhile goes into the next, at most
    /// [`MAX_BATCH`] entries, so the engine receives the entries in order
    /// and throughput does not pay one round trip per event. Where the
    /// stream would wait with everything written, an idle marker is logged
    /// (D13a). The future resolves once the stream has ended and everything
    /// is acknowledged, or at the first refused or failed append.
    fn logged(self, writer: LogWriter) -> Logged<Self> {
        Logged::new(self, writer)
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> RunLogStreamExt for S {}

pin_project! {
    /// See [`RunLogStreamExt::logged`].
    #[must_use = "futures do nothing unless polled"]
    pub struct Logged<S> {
        #[pin]
        inner: S,
        writer: LogWriter,
        // The append in flight, its terminal and the count of its events
        // (idle markers are not events).
        in_flight: Option<Ack>,
        // When the append in flight was sent (`lce_log_append_seconds`).
        in_flight_since: Option<std::time::Instant>,
        in_flight_terminal: Option<EventType>,
        in_flight_events: u64,
        // Entries gathered while an append is in flight.
        gathered: Vec<LogEntry>,
        // What is acknowledged so far.
        written: LoggedRun,
        // The last entry taken is an event (an idle marker may follow).
        after_event: bool,
        // The terminal was taken: the stream is polled once more, so that
        // a coordinator counts what its upstream has ready after it (D8),
        // and nothing it yields after the terminal is logged.
        terminal_taken: bool,
        inner_done: bool,
        done: bool,
    }
}

impl<S> Logged<S> {
    /// Writes `inner` through `writer` (as [`RunLogStreamExt::logged`]).
    pub fn new(inner: S, writer: LogWriter) -> Self {
        Logged {
            inner,
            writer,
            in_flight: None,
            in_flight_since: None,
            in_flight_terminal: None,
            in_flight_events: 0,
            gathered: Vec::new(),
            written: LoggedRun::default(),
            after_event: false,
            terminal_taken: false,
            inner_done: false,
            done: false,
        }
    }

    /// The writer (its next position counts what was sent).
    pub fn writer(&self) -> &LogWriter {
        &self.writer
    }

    /// What the log has acknowledged so far.
    pub fn written(&self) -> LoggedRun {
        self.written
    }

    /// The stream it logs has ended (after its terminal, if it had one):
    /// what is left is written or being written. An owner whose lease
    /// renewal fails now was sealed by its own terminal, not taken over.
    pub fn upstream_ended(&self) -> bool {
        self.inner_done
    }

    /// The stream it writes.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The stream it writes, mutably (polling it directly confuses this
    /// future).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The stream it writes, giving up what is not yet written.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Future for Logged<S>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    type Output = Result<LoggedRun, WriteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            if *this.done {
                return Poll::Ready(Ok(*this.written));
            }
            // The append in flight: once acknowledged, it counts as written.
            if let Some(ack) = this.in_flight.as_mut() {
                match ack.as_mut().poll(cx) {
                    Poll::Ready(Ok(())) => {
                        *this.in_flight = None;
                        if let Some(since) = this.in_flight_since.take() {
                            metrics::histogram!("lce_log_append_seconds")
                                .record(since.elapsed().as_secs_f64());
                        }
                        this.written.events += std::mem::take(this.in_flight_events);
                        this.written.entries = this.writer.next_position() - 1;
                        if let Some(terminal) = this.in_flight_terminal.take() {
                            this.written.terminal = Some(terminal);
                        }
                        continue;
                    }
                    Poll::Ready(Err(e)) => {
                        // Refused or failed: nothing after this point is
                        // written.
                        *this.in_flight = None;
                        metrics::counter!("lce_log_errors_total", "kind" => error_kind(&e))
                            .increment(1);
                        *this.done = true;
                        return Poll::Ready(Err(WriteError::Log(e)));
                    }
                    Poll::Pending => {}
                }
            }
            let upstream_waits = match gather(
                this.inner.as_mut(),
                this.gathered,
                (this.terminal_taken, this.inner_done),
                cx,
            ) {
                Ok(waits) => waits,
                Err(e) => {
                    *this.done = true;
                    return Poll::Ready(Err(WriteError::Chain(e)));
                }
            };
            if this.in_flight.is_some() {
                return Poll::Pending;
            }
            if this
                .gathered
                .last()
                .is_some_and(|e| matches!(e, LogEntry::Event(_)))
            {
                *this.after_event = true;
            }
            // The upstream would wait and everything before is written: mark
            // the point for the encoders (D13a).
            if upstream_waits && *this.after_event && this.gathered.is_empty() {
                this.gathered.push(LogEntry::Idle);
                *this.after_event = false;
            }
            if this.gathered.is_empty() {
                if *this.inner_done {
                    *this.done = true;
                    continue;
                }
                return Poll::Pending;
            }
            let entries = std::mem::take(this.gathered);
            for entry in &entries {
                if let LogEntry::Event(event) = entry {
                    *this.in_flight_events += 1;
                    if event.event_type().is_terminal() {
                        *this.in_flight_terminal = Some(event.event_type());
                    }
                }
            }
            *this.in_flight = Some(this.writer.append_batch(entries));
            *this.in_flight_since = Some(std::time::Instant::now());
        }
    }
}

/// The `kind` label of `lce_log_errors_total`: the refusal's name
/// (`sealed`, `out_of_order`, `not_owner`) or the error's kind.
fn error_kind(e: &LogError) -> &'static str {
    match e {
        LogError::Refused { refusal, .. } => refusal.as_str(),
        LogError::Exists => "exists",
        LogError::NotFound => "not_found",
        LogError::Corrupt { .. } => "corrupt",
        _ => "unavailable",
    }
}

/// Takes what `inner` has ready into `gathered`, at most [`MAX_BATCH`]
/// entries; `Ok(true)` when it would wait. After the terminal the stream
/// is polled until it ends or would wait (a coordinator then drains and
/// counts what its upstream has ready, D8, and ends), never waited for,
/// and nothing it yields is logged.
fn gather<S>(
    mut inner: Pin<&mut S>,
    gathered: &mut Vec<LogEntry>,
    (terminal_taken, inner_done): (&mut bool, &mut bool),
    cx: &mut Context<'_>,
) -> Result<bool, LceError>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    while !*inner_done && gathered.len() < MAX_BATCH {
        match inner.as_mut().poll_next(cx) {
            // Nothing follows a terminal in the log (a coordinator yields
            // nothing after it; another stream is not read further).
            Poll::Ready(Some(_)) if *terminal_taken => *inner_done = true,
            Poll::Ready(Some(Ok(event))) => {
                if event.event_type().is_terminal() {
                    *terminal_taken = true;
                }
                gathered.push(LogEntry::Event(event));
            }
            Poll::Ready(Some(Err(e))) => return Err(e),
            Poll::Ready(None) => *inner_done = true,
            Poll::Pending if *terminal_taken => *inner_done = true,
            Poll::Pending => return Ok(true),
        }
    }
    Ok(false)
}

impl<S> futures::future::FusedFuture for Logged<S>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    fn is_terminated(&self) -> bool {
        self.done
    }
}

impl<S: fmt::Debug> fmt::Debug for Logged<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logged")
            .field("inner", &self.inner)
            .field("writer", &self.writer)
            .field("written", &self.written)
            .field("gathered", &self.gathered.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
