//! The run log in the chain (`gateway.md`): [`Logged`], the stage that
//! writes the coordinator's output to a [`RunLog`] before anything reads
//! it, and [`Subscription`], the source that reads a run back from the log
//! and encodes it, with SSE ids, from its start or after a frame id.
//!
//! A subscriber's bytes are a pure function of the log and the format: the
//! entries are encoded in order (an event with `encode_frame`, an idle
//! marker with `on_idle`, D13a), so a replay equals the live read on every
//! replica. Frame ids are `<position>.<k>`: the log position of the entry
//! whose encoding produced the frame, and the frame's index among that
//! entry's frames (from 0).

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::{Stream, StreamExt};
use lce_core::{FrameEncoder, LogEntry, LogError, RunInfo, RunLog};
use lce_types::Event;
use pin_project_lite::pin_project;

use crate::{Coordinator, CoordinatorOptions, LceError, LifecycleStreamExt, source};

/// How many entries one append of the [`Logged`] stage carries at most.
/// The stage keeps one append in flight and gathers what becomes ready
/// meanwhile into the next one.
pub const MAX_BATCH: usize = 64;

/// The writing end of one run's log: the log, the run, the owner and the
/// next position. Made by [`LogWriter::create`], consumed by
/// [`LifecycleStreamExt::logged`].
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

    /// Gives up the lease at once, so that another replica ends the run.
    pub async fn release(&self) -> Result<(), LogError> {
        self.log.release(&self.run_id, &self.owner).await
    }

    fn append(
        &mut self,
        entry: LogEntry,
    ) -> Pin<Box<dyn Future<Output = Result<(), LogError>> + Send>> {
        let position = self.next;
        self.next += 1;
        self.log.append(&self.run_id, &self.owner, position, entry)
    }

    fn append_batch(
        &mut self,
        entries: Vec<LogEntry>,
    ) -> Pin<Box<dyn Future<Output = Result<(), LogError>> + Send>> {
        let position = self.next;
        self.next += entries.len() as u64;
        self.log
            .append_batch(&self.run_id, &self.owner, position, entries)
    }
}

type Ack = Pin<Box<dyn Future<Output = Result<(), LogError>> + Send>>;

pin_project! {
    /// See [`LifecycleStreamExt::logged`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Logged<S> {
        #[pin]
        inner: S,
        writer: LogWriter,
        // The append in flight and the events it carries (idle markers
        // carry none).
        in_flight: Option<Ack>,
        in_flight_events: Vec<Event>,
        // Entries gathered while an append is in flight.
        gathered: Vec<LogEntry>,
        // Acknowledged events not yet yielded, in order.
        acked: VecDeque<Event>,
        // The last entry taken is an event (an idle marker may follow).
        after_event: bool,
        inner_done: bool,
        done: bool,
    }
}

impl<S> Logged<S> {
    pub(crate) fn new(inner: S, writer: LogWriter) -> Self {
        Logged {
            inner,
            writer,
            in_flight: None,
            in_flight_events: Vec::new(),
            gathered: Vec::new(),
            acked: VecDeque::new(),
            after_event: false,
            inner_done: false,
            done: false,
        }
    }

    /// The writer (its next position counts what was sent).
    pub fn writer(&self) -> &LogWriter {
        &self.writer
    }

    /// The stream it logs has ended (after its terminal, if it had one):
    /// what is left is written or being written. An owner whose lease
    /// renewal fails now was sealed by its own terminal, not taken over.
    pub fn upstream_ended(&self) -> bool {
        self.inner_done
    }
}

delegate_access_inner!(Logged<S>);

impl<S> Stream for Logged<S>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    type Item = Result<Event, LceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if let Some(event) = this.acked.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if *this.done {
                return Poll::Ready(None);
            }
            // The append in flight: once acknowledged, its events may go.
            if let Some(ack) = this.in_flight.as_mut() {
                match ack.as_mut().poll(cx) {
                    Poll::Ready(Ok(())) => {
                        *this.in_flight = None;
                        this.acked.extend(this.in_flight_events.drain(..));
                        continue;
                    }
                    Poll::Ready(Err(e)) => {
                        // Refused or failed: nothing after this point is
                        // written, so nothing more is yielded.
                        *this.in_flight = None;
                        *this.done = true;
                        return Poll::Ready(Some(Err(LceError::Log(e))));
                    }
                    Poll::Pending => {}
                }
            }
            // Gather what the upstream has ready.
            let mut upstream_waits = false;
            while !*this.inner_done && this.gathered.len() < MAX_BATCH {
                match this.inner.as_mut().poll_next(cx) {
                    Poll::Ready(Some(Ok(event))) => {
                        if event.event_type().is_terminal() {
                            *this.inner_done = true;
                        }
                        this.gathered.push(LogEntry::Event(event));
                        *this.after_event = true;
                    }
                    // Not an event: nothing to log. The coordinator's output
                    // carries none; pass it on like the other stages.
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                    Poll::Ready(None) => *this.inner_done = true,
                    Poll::Pending => {
                        upstream_waits = true;
                        break;
                    }
                }
            }
            if this.in_flight.is_some() {
                return Poll::Pending;
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
            this.in_flight_events
                .extend(entries.iter().filter_map(|e| match e {
                    LogEntry::Event(event) => Some(event.clone()),
                    _ => None,
                }));
            *this.in_flight = Some(this.writer.append_batch(entries));
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (_, upper) = self.inner.size_hint();
        let held = self.acked.len() + self.in_flight_events.len() + self.gathered.len();
        (self.acked.len(), upper.and_then(|u| u.checked_add(held)))
    }
}

/// Terminated once it has yielded what the log acknowledged last.
impl<S> futures::stream::FusedStream for Logged<S>
where
    S: Stream<Item = Result<Event, LceError>>,
{
    fn is_terminated(&self) -> bool {
        self.done && self.acked.is_empty()
    }
}

impl<S: fmt::Debug> fmt::Debug for Logged<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logged")
            .field("inner", &self.inner)
            .field("writer", &self.writer)
            .field("in_flight", &self.in_flight_events.len())
            .field("gathered", &self.gathered.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Where a subscriber resumes: the frame named by an SSE `Last-Event-ID`,
/// written `<position>.<k>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId {
    /// The log position of the entry that produced the frame (from 1).
    pub position: u64,
    /// The frame's index among that entry's frames (from 0).
    pub index: u64,
}

impl std::str::FromStr for FrameId {
    type Err = SubscribeError;

    /// Parses `<position>.<k>`: two decimal numbers without signs, spaces or
    /// leading zeros, the position at least 1.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        fn number(s: &str) -> Option<u64> {
            let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            let canonical = s == "0" || !s.starts_with('0');
            if digits && canonical {
                s.parse().ok()
            } else {
                None
            }
        }
        let (p, k) = s.split_once('.').ok_or(SubscribeError::MalformedId)?;
        match (number(p), number(k)) {
            (Some(position), Some(index)) if position >= 1 => Ok(FrameId { position, index }),
            _ => Err(SubscribeError::MalformedId),
        }
    }
}

impl fmt::Display for FrameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.position, self.index)
    }
}

/// Why a subscription could not start.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    /// No run with this id (never created, expired).
    #[error("no run with this id")]
    NotFound,
    /// The `Last-Event-ID` is not of the form `<position>.<k>`.
    #[error("the last event id is not of the form <position>.<k>")]
    MalformedId,
    /// The `Last-Event-ID` names no frame of this run.
    #[error("the last event id names no frame of this run")]
    UnknownId,
    /// The log failed.
    #[error("{0}")]
    Log(LogError),
    /// An entry did not encode.
    #[error("{0}")]
    Encode(lce_wire::EncodeError),
}

impl From<LogError> for SubscribeError {
    fn from(e: LogError) -> Self {
        match e {
            LogError::NotFound => SubscribeError::NotFound,
            e => SubscribeError::Log(e),
        }
    }
}

/// Who ends a run whose owner died, when a subscriber finds it orphaned: a
/// replica id, its lease, and the options to build the closure terminal
/// (D9) with.
#[derive(Clone, Debug)]
pub struct Takeover {
    /// The claiming replica's id.
    pub claimant: String,
    /// The lease it takes while it writes the terminal.
    pub lease: Duration,
}

/// How many entries one read asks for.
const READ_BATCH: usize = 256;
/// How long one read waits for the live tail before looking at the lease.
const READ_WAIT: Duration = Duration::from_millis(500);

/// One subscriber of a run: reads the log from the start, encodes every
/// entry in order, and yields the frames after its resume point, then the
/// live tail until the terminal. See the module documentation.
pub struct Subscription<E> {
    log: Arc<dyn RunLog>,
    run_id: Arc<str>,
    encoder: E,
    ids: bool,
    /// The last position encoded.
    position: u64,
    /// Frames already encoded and not yet yielded (the rest of the resume
    /// entry).
    pending: Option<Bytes>,
    takeover: Option<Takeover>,
    done: bool,
}

impl<E> fmt::Debug for Subscription<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("run_id", &self.run_id)
            .field("position", &self.position)
            .field("ids", &self.ids)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Splits what one entry encoded into its frames (each ends with a blank
/// line) and appends those after `skip` to `out`, each with an `id:` line
/// when `ids`. Returns how many frames there were.
fn emit_frames(
    encoded: &[u8],
    position: u64,
    skip: Option<u64>,
    ids: bool,
    out: &mut BytesMut,
) -> u64 {
    let mut count = 0u64;
    let mut rest = encoded;
    while !rest.is_empty() {
        let end = memchr::memmem::find(rest, b"\n\n").map_or(rest.len(), |i| i + 2);
        let (frame, tail) = rest.split_at(end);
        if skip.is_none_or(|k| count > k) {
            if ids {
                out.extend_from_slice(b"id: ");
                out.extend_from_slice(
                    FrameId {
                        position,
                        index: count,
                    }
                    .to_string()
                    .as_bytes(),
                );
                out.extend_from_slice(b"\n");
            }
            out.extend_from_slice(frame);
        }
        count += 1;
        rest = tail;
    }
    count
}

impl<E: FrameEncoder + Send + 'static> Subscription<E> {
    /// Opens a subscription of `run_id` encoded by `encoder`, from the start
    /// or after the frame `after`. The entries up to `after` are read and
    /// encoded now (nothing of them is yielded), so an `after` that names no
    /// frame of the run is [`SubscribeError::UnknownId`] here, before any
    /// byte goes out; an unknown run is [`SubscribeError::NotFound`].
    pub async fn open(
        log: Arc<dyn RunLog>,
        run_id: &str,
        mut encoder: E,
        after: Option<FrameId>,
        ids: bool,
    ) -> Result<Self, SubscribeError> {
        if log.info(run_id).await?.is_none() {
            return Err(SubscribeError::NotFound);
        }
        let mut position = 0u64;
        let mut pending = None;
        if let Some(after) = after {
            let mut scratch = BytesMut::new();
            while position < after.position {
                let want = usize::try_from(after.position - position)
                    .unwrap_or(READ_BATCH)
                    .min(READ_BATCH);
                let batch = log.read(run_id, position, want, Duration::ZERO).await?;
                if batch.entries.is_empty() {
                    // The log ends before the named entry.
                    return Err(SubscribeError::UnknownId);
                }
                for entry in batch.entries {
                    position += 1;
                    scratch.clear();
                    encode_entry(&mut encoder, &entry, &mut scratch)
                        .map_err(SubscribeError::Encode)?;
                    if position == after.position {
                        let mut out = BytesMut::new();
                        let frames =
                            emit_frames(&scratch, position, Some(after.index), ids, &mut out);
                        if after.index >= frames {
                            return Err(SubscribeError::UnknownId);
                        }
                        pending = (!out.is_empty()).then(|| out.freeze());
                    }
                }
            }
        }
        Ok(Subscription {
            log,
            run_id: run_id.into(),
            encoder,
            ids,
            position,
            pending,
            takeover: None,
            done: false,
        })
    }

    /// When the run turns out orphaned (unsealed, its owner's lease gone),
    /// claim it as `takeover` says and end it with the closure terminal
    /// (D9), so this subscriber sees a terminal, never a hang.
    pub fn take_over(mut self, takeover: Takeover) -> Self {
        self.takeover = Some(takeover);
        self
    }

    /// The frames, one chunk per log entry that produced any, until the
    /// terminal's; a log failure ends the stream with its error.
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, LceError>> + Send + 'static {
        futures::stream::unfold(self, |mut sub| async move {
            let chunk = sub.next_chunk().await;
            chunk.map(|c| (c, sub))
        })
    }

    async fn next_chunk(&mut self) -> Option<Result<Bytes, LceError>> {
        if let Some(pending) = self.pending.take() {
            return Some(Ok(pending));
        }
        let mut scratch = BytesMut::new();
        let mut out = BytesMut::new();
        while !self.done {
            let batch = match self
                .log
                .read(&self.run_id, self.position, READ_BATCH, READ_WAIT)
                .await
            {
                Ok(batch) => batch,
                Err(e) => {
                    self.done = true;
                    return Some(Err(LceError::Log(e)));
                }
            };
            if batch.entries.is_empty() {
                if batch.sealed {
                    self.done = true;
                } else if !batch.owned {
                    if let Some(takeover) = self.takeover.clone() {
                        if let Err(e) = end_orphan(&self.log, &self.run_id, &takeover).await {
                            self.done = true;
                            return Some(Err(LceError::Log(e)));
                        }
                    }
                }
                continue;
            }
            for entry in &batch.entries {
                self.position += 1;
                scratch.clear();
                if let Err(e) = encode_entry(&mut self.encoder, entry, &mut scratch) {
                    self.done = true;
                    return Some(Err(LceError::Encode(e)));
                }
                emit_frames(&scratch, self.position, None, self.ids, &mut out);
                if entry.is_terminal() {
                    self.done = true;
                    break;
                }
            }
            if !out.is_empty() {
                return Some(Ok(out.freeze()));
            }
        }
        None
    }
}

fn encode_entry<E: FrameEncoder>(
    encoder: &mut E,
    entry: &LogEntry,
    dst: &mut BytesMut,
) -> Result<(), lce_wire::EncodeError> {
    match entry {
        LogEntry::Event(event) => encoder.encode_frame(event, dst).map_err(Into::into),
        LogEntry::Idle => encoder.on_idle(dst).map_err(Into::into),
        // Entries this version does not know encode to nothing.
        #[allow(unreachable_patterns)]
        _ => Ok(()),
    }
}

/// Ends an orphaned run (unsealed, its owner's lease expired or released):
/// claims it as `takeover.claimant` and appends the coordinator's closure
/// terminal (D9: `run.error{provider_stream_closed}`, its
/// `side_effect_status` from what the log holds). Returns whether this call
/// ended it (`false`: another replica claimed it first, or it is not
/// orphaned).
pub async fn end_orphan(
    log: &Arc<dyn RunLog>,
    run_id: &str,
    takeover: &Takeover,
) -> Result<bool, LogError> {
    if !log
        .claim(run_id, &takeover.claimant, takeover.lease)
        .await?
    {
        return Ok(false);
    }
    let mut events = Vec::new();
    let mut position = 0u64;
    loop {
        let batch = log
            .read(run_id, position, READ_BATCH, Duration::ZERO)
            .await?;
        if batch.entries.is_empty() {
            break;
        }
        position += batch.entries.len() as u64;
        events.extend(batch.entries.into_iter().filter_map(|e| match e {
            LogEntry::Event(event) => Some(event),
            _ => None,
        }));
    }
    let Some(info) = log.info(run_id).await? else {
        return Err(LogError::NotFound);
    };
    let options = CoordinatorOptions::new(info.run_id, info.conversation_id);
    let Some(terminal) = closure_terminal(options, events).await else {
        return Ok(false);
    };
    // The terminal goes right after the last entry.
    let at = position + 1;
    let mut writer = LogWriter::resume(log.clone(), run_id, &takeover.claimant, at);
    writer.append(LogEntry::Event(terminal)).await?;
    tracing::warn!(target: "lce::log", run_id, position = at, "took over an orphaned run and ended it (rule 12)");
    Ok(true)
}

/// The coordinator's terminal for `events` cut short: the logged events run
/// through the same chain again (they pass unchanged) and the closure (rule
/// 12) gives the terminal. `None` when the events already end with one.
async fn closure_terminal(options: CoordinatorOptions, events: Vec<Event>) -> Option<Event> {
    let coordinator = Coordinator::new(options);
    let mut chain = std::pin::pin!(
        source(futures::stream::iter(events.into_iter().map(Ok))).enforced(coordinator)
    );
    let mut last = None;
    while let Some(item) = chain.next().await {
        if let Ok(event) = item {
            last = Some(event);
        }
    }
    last.filter(|e| e.event_type().is_terminal())
}
