//! The reading half of the run log: [`Subscription`], which reads a run
//! back from the log and encodes it, with SSE ids, from its start or after
//! a frame id, and [`end_orphan`], which ends a run whose owner died.
//!
//! A subscriber's bytes are a pure function of the log and the format: the
//! entries are encoded in order (an event with `encode_frame`, an idle
//! marker with `on_idle`, D13a), so a replay equals the live read on every
//! replica. Frame ids are `<position>.<k>`: the log position of the entry
//! whose encoding produced the frame, and the frame's index among that
//! entry's frames (from 0).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream::{Stream, StreamExt};
use lce_core::FrameEncoder;
use lce_stream::{Coordinator, CoordinatorOptions, LifecycleStreamExt, source};
use lce_types::Event;

use crate::log::{LogEntry, LogError, RunLog};
use crate::logged::LogWriter;

/// Where a subscriber resumes: the frame named by an SSE `Last-Event-ID`,
/// written `<position>.<k>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId {
    /// The log position of the entry that produced the frame (from 1).
    pub position: u64,
    /// The frame's index among that entry's frames (from 0).
    pub index: u64,
}

/// A `Last-Event-ID` that is not of the form `<position>.<k>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the last event id is not of the form <position>.<k>")]
pub struct MalformedFrameId;

impl std::str::FromStr for FrameId {
    type Err = MalformedFrameId;

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
        let (p, k) = s.split_once('.').ok_or(MalformedFrameId)?;
        match (number(p), number(k)) {
            (Some(position), Some(index)) if position >= 1 => Ok(FrameId { position, index }),
            _ => Err(MalformedFrameId),
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
    #[error("the run log failed a read")]
    Log(#[source] LogError),
    /// An entry did not encode.
    #[error("a log entry did not encode")]
    Encode(#[source] lce_wire::EncodeError),
}

impl From<MalformedFrameId> for SubscribeError {
    fn from(_: MalformedFrameId) -> Self {
        SubscribeError::MalformedId
    }
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

/// The most entries one read asks for.
pub(crate) const READ_BATCH: usize = 256;
/// How many entries a subscriber's first read asks for; each read after
/// one whose entries were small asks for up to twice as many.
pub(crate) const FIRST_READ: usize = 16;
/// What one subscriber holds of a run at a time, in bytes of frames: a
/// read asks for as many entries as the last ones suggest fit in it, and a
/// chunk is handed on as soon as it is this large (so a subscriber holds
/// about this much, plus one entry, whatever the size of the entries).
pub const SUBSCRIBER_BYTES: usize = 1024 * 1024;
/// How long one read waits for the live tail before looking at the lease.
pub(crate) const READ_WAIT: Duration = Duration::from_millis(500);

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
    /// Entries read and not yet encoded (the rest of a read whose frames
    /// passed [`SUBSCRIBER_BYTES`]).
    queue: VecDeque<LogEntry>,
    /// How many entries the next read asks for.
    read_count: usize,
    /// The bytes of frames the entries of the last read encoded to, and how
    /// many of them were encoded (what the next read's size follows).
    read_bytes: usize,
    read_len: usize,
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
pub(crate) fn emit_frames(
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
        encoder: E,
        after: Option<FrameId>,
        ids: bool,
    ) -> Result<Self, SubscribeError> {
        let after = after.map(|a| (a.position, Some(a.index)));
        Self::open_after(log, run_id, encoder, after, ids).await
    }

    /// [`Subscription::open`] after `after`: a log position and the index
    /// of the last frame of its entry already seen (`None`: all of them,
    /// the entry may have none), or from the start.
    pub(crate) async fn open_after(
        log: Arc<dyn RunLog>,
        run_id: &str,
        mut encoder: E,
        after: Option<(u64, Option<u64>)>,
        ids: bool,
    ) -> Result<Self, SubscribeError> {
        if log.info(run_id).await?.is_none() {
            return Err(SubscribeError::NotFound);
        }
        let mut position = 0u64;
        let mut pending = None;
        if let Some((after, index)) = after {
            let mut scratch = BytesMut::new();
            while position < after {
                let want = usize::try_from(after - position)
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
                    if let (true, Some(index)) = (position == after, index) {
                        let mut out = BytesMut::new();
                        let frames = emit_frames(&scratch, position, Some(index), ids, &mut out);
                        if index >= frames {
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
            queue: VecDeque::new(),
            read_count: FIRST_READ,
            read_bytes: 0,
            read_len: 0,
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
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, SubscribeError>> + Send + 'static {
        futures::stream::unfold(self, |mut sub| async move {
            let chunk = sub.next_chunk().await;
            chunk.map(|c| (c, sub))
        })
    }

    /// The last position whose frames were all handed on, when no part of
    /// an entry is still to go (a shared reader may take over from there).
    pub(crate) fn boundary(&self) -> Option<u64> {
        (self.pending.is_none() && !self.done).then_some(self.position)
    }

    pub(crate) async fn next_chunk(&mut self) -> Option<Result<Bytes, SubscribeError>> {
        if let Some(pending) = self.pending.take() {
            return Some(Ok(pending));
        }
        let mut scratch = BytesMut::new();
        let mut out = BytesMut::new();
        loop {
            while let Some(entry) = self.queue.pop_front() {
                self.position += 1;
                scratch.clear();
                if let Err(e) = encode_entry(&mut self.encoder, &entry, &mut scratch) {
                    self.done = true;
                    self.queue.clear();
                    return Some(Err(SubscribeError::Encode(e)));
                }
                emit_frames(&scratch, self.position, None, self.ids, &mut out);
                self.read_bytes = self.read_bytes.saturating_add(scratch.len());
                self.read_len += 1;
                if entry.is_terminal() {
                    self.done = true;
                    self.queue.clear();
                } else if out.len() >= SUBSCRIBER_BYTES {
                    return Some(Ok(out.freeze()));
                }
            }
            if !out.is_empty() {
                return Some(Ok(out.freeze()));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.read_more().await {
                self.done = true;
                return Some(Err(SubscribeError::Log(e)));
            }
        }
    }

    /// Reads the next entries into the queue, as many as the last ones
    /// suggest fit in [`SUBSCRIBER_BYTES`] (waiting up to [`READ_WAIT`] for
    /// the live tail); at the end of a sealed log marks the subscription
    /// done, and ends an orphaned run when it may take runs over.
    async fn read_more(&mut self) -> Result<(), LogError> {
        if self.read_len > 0 {
            self.read_count = next_read_count(self.read_count, self.read_bytes, self.read_len);
            (self.read_bytes, self.read_len) = (0, 0);
        }
        let batch = self
            .log
            .read(&self.run_id, self.position, self.read_count, READ_WAIT)
            .await?;
        if batch.entries.is_empty() {
            if batch.sealed {
                self.done = true;
            } else if !batch.owned {
                if let Some(takeover) = self.takeover.clone() {
                    end_orphan(&self.log, &self.run_id, &takeover).await?;
                }
            }
            return Ok(());
        }
        self.queue = batch.entries.into();
        Ok(())
    }
}

/// How many entries to read after a read that asked for `asked` and whose
/// `len` entries encoded to `bytes` of frames: as many as fit in
/// [`SUBSCRIBER_BYTES`] at their mean size, at most twice `asked` and
/// [`READ_BATCH`], at least 1.
pub(crate) fn next_read_count(asked: usize, bytes: usize, len: usize) -> usize {
    let mean = (bytes / len.max(1)).max(1);
    (SUBSCRIBER_BYTES / mean).clamp(1, asked.saturating_mul(2).min(READ_BATCH))
}

pub(crate) fn encode_entry<E: FrameEncoder>(
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
    let Some(info) = log.info(run_id).await? else {
        return Err(LogError::NotFound);
    };
    let options = CoordinatorOptions::new(info.run_id, info.conversation_id);
    // The logged events stream through the chain a batch at a time: a
    // takeover holds one batch and the coordinator's state, not the run.
    let read = Arc::new(std::sync::Mutex::new(LogRead::default()));
    let events = logged_events(Arc::clone(log), run_id.to_owned(), Arc::clone(&read));
    let terminal = closure_terminal(options, events).await;
    let (position, failed) = match read.lock() {
        Ok(mut read) => (read.position, read.failed.take()),
        Err(_) => return Err(LogError::Unavailable),
    };
    if let Some(e) = failed {
        return Err(e);
    }
    let Some(terminal) = terminal else {
        return Ok(false);
    };
    // The terminal goes right after the last entry.
    let at = position + 1;
    let mut writer = LogWriter::resume(log.clone(), run_id, &takeover.claimant, at);
    writer.append(LogEntry::Event(terminal)).await?;
    metrics::counter!("lce_takeovers_total").increment(1);
    tracing::warn!(target: "lce::log", run_id, position = at, "took over an orphaned run and ended it (rule 12)");
    Ok(true)
}

/// How far [`logged_events`] read, and the read that failed, if one did.
#[derive(Default)]
struct LogRead {
    position: u64,
    failed: Option<LogError>,
}

/// A run's logged events, read from the log a batch at a time; the stream
/// ends at the last entry or at a failed read, which `read` records with
/// how far it got.
fn logged_events(
    log: Arc<dyn RunLog>,
    run_id: String,
    read: Arc<std::sync::Mutex<LogRead>>,
) -> impl Stream<Item = Event> + Send {
    futures::stream::unfold(Some((log, run_id, read)), |state| async move {
        let (log, run_id, read) = state?;
        let after = read.lock().map(|r| r.position).ok()?;
        match log.read(&run_id, after, READ_BATCH, Duration::ZERO).await {
            Ok(batch) if batch.entries.is_empty() => None,
            Ok(batch) => {
                if let Ok(mut r) = read.lock() {
                    r.position += batch.entries.len() as u64;
                }
                let events: Vec<Event> = batch
                    .entries
                    .into_iter()
                    .filter_map(|e| match e {
                        LogEntry::Event(event) => Some(event),
                        _ => None,
                    })
                    .collect();
                Some((futures::stream::iter(events), Some((log, run_id, read))))
            }
            Err(e) => {
                if let Ok(mut r) = read.lock() {
                    r.failed = Some(e);
                }
                None
            }
        }
    })
    .flatten()
}

/// The coordinator's terminal for `events` cut short: the logged events run
/// through the same chain again (they pass unchanged) and the closure (rule
/// 12) gives the terminal. `None` when the events already end with one.
async fn closure_terminal(
    options: CoordinatorOptions,
    events: impl Stream<Item = Event> + Send,
) -> Option<Event> {
    let coordinator = Coordinator::new(options);
    let mut chain = std::pin::pin!(source(events.map(Ok)).enforced(coordinator));
    let mut last = None;
    while let Some(item) = chain.next().await {
        if let Ok(event) = item {
            last = Some(event);
        }
    }
    last.filter(|e| e.event_type().is_terminal())
}
