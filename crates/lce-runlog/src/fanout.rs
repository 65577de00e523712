//! Fan-out (`gateway.md`, guarantee 8): one replica reads and encodes a
//! log entry once per encoding, whatever the number of its subscribers.
//!
//! A [`Fanout`] keeps one shared reader per run and encoding key (the
//! protocol, and whether frames carry ids: whatever changes the bytes)
//! while that run has a subscriber on this replica. The reader is a task
//! that reads the log from its start with one encoder and keeps what each
//! entry encoded to (a [`Bytes`], cloned for free) in a window of at most
//! [`WINDOW_BYTES`] (plus one entry): the run's frames so far while all
//! the readers of the [`Fanout`] keep at most [`KEPT_BYTES`], beyond that
//! only the entries some subscriber has yet to read and the last
//! [`TAIL_BYTES`] (for a subscriber that joins or resumes near the live
//! end). Every subscriber of the key is a cursor into that window. Reads follow demand: the reader reads on only
//! when a subscriber has reached the last entry it holds, so it is never
//! further ahead than the fastest subscriber.
//!
//! A subscriber's bytes stay a pure function of the log: the shared
//! encoder sees every entry in order from the start, as a lone
//! [`Subscription`] does, and a subscriber (or a resume after a frame id)
//! moves between the two at entry boundaries only. A subscriber that needs
//! an entry the window no longer holds (it joined or resumed behind it, or
//! fell more than [`WINDOW_BYTES`] behind the fastest one) goes on alone
//! with a [`Subscription`] of its own from where it is, re-reading and
//! re-encoding the log as every subscriber did before fan-out, and joins
//! the window again once it reaches it: a slow subscriber never holds the
//! window or the other subscribers back (guarantee 6), and holds no more
//! memory than a lone one. A failed log read or encode ends the shared
//! reader; each of its subscribers then goes on alone from where it is,
//! and meets the failure itself. The reader stops when its last subscriber
//! leaves, or at the run's terminal.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bytes::{Bytes, BytesMut};
use futures::stream::Stream;
use lce_core::FrameEncoder;
use tokio::sync::Notify;

use crate::log::{LogBatch, LogError, RunLog};
use crate::subscription::{
    FIRST_READ, FrameId, READ_WAIT, SUBSCRIBER_BYTES, SubscribeError, Subscription, Takeover,
    emit_frames, encode_entry, end_orphan, next_read_count,
};

/// The most bytes of frames one shared reader keeps (the entry that
/// passes it is kept whole). A subscriber that needs an older entry goes
/// on alone until it reaches the window again.
pub const WINDOW_BYTES: usize = 4 * SUBSCRIBER_BYTES;

/// The bytes of the last frames a shared reader keeps even when every
/// subscriber has read them: a subscriber that joins, or resumes after a
/// frame id, within them reads them from the window.
pub const TAIL_BYTES: usize = SUBSCRIBER_BYTES / 4;

/// The most bytes of frames the shared readers of one [`Fanout`] keep in
/// all before they drop what every subscriber has read (down to each
/// one's [`TAIL_BYTES`]): below it a reader keeps its run's frames up to
/// [`WINDOW_BYTES`], so that subscribers who join later read them from
/// the window.
pub const KEPT_BYTES: usize = 64 * SUBSCRIBER_BYTES;

/// Makes the encoder of a key: the same encoder every time.
type MakeEncoder<E> = Arc<dyn Fn() -> E + Send + Sync>;

/// A shared reader's key: the run id, the encoding's key, ids or not.
type Slot<K> = (Arc<str>, K, bool);

/// The shared readers of one replica (see the module documentation),
/// keyed by run id, a key `K` of the encoding (a protocol), and ids.
pub struct Fanout<K> {
    log: Arc<dyn RunLog>,
    takeover: Option<Takeover>,
    hubs: Mutex<HashMap<Slot<K>, Weak<Hub>>>,
    /// The bytes of frames all its readers keep.
    kept: Arc<AtomicUsize>,
}

impl<K> fmt::Debug for Fanout<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fanout")
            .field("readers", &self.hubs.lock().map_or(0, |h| h.len()))
            .finish_non_exhaustive()
    }
}

/// What a [`Fanout`] subscription yields: the frames, as a
/// [`Subscription`] of the same encoder yields them.
pub type FrameStream = std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, SubscribeError>> + Send>>;

impl<K: Hash + Eq + Clone + Send + 'static> Fanout<K> {
    /// The shared readers of runs in `log`.
    pub fn new(log: Arc<dyn RunLog>) -> Self {
        Fanout {
            log,
            takeover: None,
            hubs: Mutex::new(HashMap::new()),
            kept: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Readers end a run they find orphaned as `takeover` says
    /// ([`Subscription::take_over`]).
    pub fn take_over(mut self, takeover: Takeover) -> Self {
        self.takeover = Some(takeover);
        self
    }

    /// How many shared readers are running (one per run, key and ids with
    /// a subscriber).
    pub fn readers(&self) -> usize {
        self.hubs
            .lock()
            .map_or(0, |h| h.values().filter(|w| w.strong_count() > 0).count())
    }

    /// A subscriber of `run_id` in the encoding `key`, whose encoder
    /// `encoder` makes: its frames, from the start or after the frame
    /// `after`, byte for byte those of [`Subscription::open`] with that
    /// encoder, with the same errors before any byte. `encoder` must make
    /// the same encoder for the same key. Outside a Tokio runtime (no task
    /// to share) this is a lone [`Subscription`].
    pub async fn open<E, F>(
        &self,
        run_id: &str,
        key: K,
        ids: bool,
        encoder: F,
        after: Option<FrameId>,
    ) -> Result<FrameStream, SubscribeError>
    where
        E: FrameEncoder + Send + 'static,
        F: Fn() -> E + Send + Sync + 'static,
    {
        let parts = Parts {
            log: self.log.clone(),
            run_id: run_id.into(),
            ids,
            takeover: self.takeover.clone(),
            make: Arc::new(encoder),
        };
        let resume = after.map(|a| (a.position, Some(a.index)));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Ok(Box::pin(parts.open(resume).await?.into_stream()));
        };
        if self.log.info(run_id).await?.is_none() {
            return Err(SubscribeError::NotFound);
        }
        let hub = self.hub(&runtime, key, &parts)?;
        let state = match Hub::start(hub.clone(), &self.log, run_id, after).await? {
            Some((at, pending)) => Follow::Shared { at, pending, parts },
            // The window no longer holds where this subscriber starts.
            None => Follow::Alone {
                sub: parts.open(resume).await?,
                hub: Some(hub),
                parts,
            },
        };
        Ok(Box::pin(follow(state)))
    }

    /// The live shared reader of this run and key, or a new one.
    fn hub<E: FrameEncoder + Send + 'static>(
        &self,
        runtime: &tokio::runtime::Handle,
        key: K,
        parts: &Parts<E>,
    ) -> Result<Arc<Hub>, SubscribeError> {
        let mut hubs = self
            .hubs
            .lock()
            .map_err(|_| SubscribeError::Log(LogError::Unavailable))?;
        hubs.retain(|_, w| w.strong_count() > 0);
        let slot = (parts.run_id.clone(), key, parts.ids);
        if let Some(hub) = hubs.get(&slot).and_then(Weak::upgrade) {
            if !hub.lock().failed() {
                return Ok(hub);
            }
        }
        let signals = Arc::new(Signals::default());
        let hub = Arc::new(Hub {
            window: Mutex::new(Window::new(self.kept.clone())),
            changed: Notify::new(),
            signals: signals.clone(),
        });
        let reader = Reader {
            hub: Arc::downgrade(&hub),
            signals,
            log: self.log.clone(),
            run_id: parts.run_id.clone(),
            encoder: (parts.make)(),
            ids: parts.ids,
            takeover: self.takeover.clone(),
        };
        runtime.spawn(reader.run());
        hubs.insert(slot, Arc::downgrade(&hub));
        Ok(hub)
    }
}

/// How a shared reader ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum End {
    /// Still reading.
    #[default]
    Open,
    /// The window holds the run's last entry (its terminal).
    Done,
    /// A read or an encode failed after the window's last entry.
    Failed,
}

/// What a shared reader has encoded: the frames of positions
/// `first..=head`, each entry's as one [`Bytes`] (with `id:` lines when the
/// key says so), and where its subscribers are.
#[derive(Debug)]
struct Window {
    frames: VecDeque<Bytes>,
    /// The position of `frames[0]`.
    first: u64,
    bytes: usize,
    end: End,
    /// Each attached subscriber's last position seen whole.
    cursors: HashMap<u64, u64>,
    next_cursor: u64,
    /// The bytes all the readers of its [`Fanout`] keep.
    kept: Arc<AtomicUsize>,
}

impl Window {
    fn new(kept: Arc<AtomicUsize>) -> Self {
        Window {
            frames: VecDeque::new(),
            first: 1,
            bytes: 0,
            end: End::Open,
            cursors: HashMap::new(),
            next_cursor: 0,
            kept,
        }
    }
}

impl Window {
    /// The last position held (`first - 1` when none is).
    fn head(&self) -> u64 {
        self.first + self.frames.len() as u64 - 1
    }

    fn failed(&self) -> bool {
        self.end == End::Failed
    }

    /// The frames of `position`, if held.
    fn get(&self, position: u64) -> Option<&Bytes> {
        let index = usize::try_from(position.checked_sub(self.first)?).ok()?;
        self.frames.get(index)
    }

    /// Adds the frames of the next entries, then drops the oldest (never
    /// the last) while more than [`WINDOW_BYTES`] are held, or while every
    /// subscriber has read it, [`TAIL_BYTES`] stay after it and the readers
    /// keep more than [`KEPT_BYTES`] in all.
    fn push(&mut self, frames: Vec<Bytes>) {
        let added: usize = frames.iter().map(Bytes::len).sum();
        self.bytes += added;
        self.kept.fetch_add(added, Ordering::Relaxed);
        self.frames.extend(frames);
        let slowest = self.cursors.values().min().copied().unwrap_or(u64::MAX);
        while self.frames.len() > 1 {
            let front = self.frames.front().map_or(0, Bytes::len);
            let read = self.first <= slowest && self.bytes - front >= TAIL_BYTES;
            let crowded = self.kept.load(Ordering::Relaxed) > KEPT_BYTES;
            if !(read && crowded || self.bytes > WINDOW_BYTES) {
                break;
            }
            self.frames.pop_front();
            self.bytes -= front;
            self.kept.fetch_sub(front, Ordering::Relaxed);
            self.first += 1;
        }
    }
}

#[derive(Default)]
struct Signals {
    /// A subscriber reached the window's last entry.
    demand: Notify,
    /// The last subscriber left.
    closed: AtomicBool,
}

/// One shared reader's state, held by its subscribers; its task holds it
/// weakly and stops when the last subscriber drops it.
struct Hub {
    window: Mutex<Window>,
    /// New frames, or the end, or a read that found nothing yet.
    changed: Notify,
    signals: Arc<Signals>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let window = self.lock();
        window.kept.fetch_sub(window.bytes, Ordering::Relaxed);
        drop(window);
        self.signals.closed.store(true, Ordering::SeqCst);
        self.signals.demand.notify_one();
    }
}

/// A subscriber attached to a hub: its cursor in the window (the last
/// position it has seen whole), removed when it leaves.
struct Attached {
    hub: Arc<Hub>,
    id: u64,
}

impl Attached {
    fn new(hub: Arc<Hub>, position: u64) -> Attached {
        let id = {
            let mut window = hub.lock();
            let id = window.next_cursor;
            window.next_cursor += 1;
            window.cursors.insert(id, position);
            id
        };
        Attached { hub, id }
    }

    fn position(&self) -> u64 {
        self.hub.lock().cursors.get(&self.id).copied().unwrap_or(0)
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.hub.lock().cursors.remove(&self.id);
    }
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, Window> {
        // A panic while the lock was held cannot leave a window half
        // updated (every update is a push or a field assignment).
        self.window
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where a subscriber starts: attached at the position it has seen
    /// whole, with the rest of the entry `after` names. `None`: the window
    /// no longer holds it (or the reader failed before it), the subscriber
    /// goes alone.
    async fn start(
        hub: Arc<Hub>,
        log: &Arc<dyn RunLog>,
        run_id: &str,
        after: Option<FrameId>,
    ) -> Result<Option<(Attached, Option<Bytes>)>, SubscribeError> {
        let Some(after) = after else {
            let held = hub.lock().first == 1;
            return Ok(held.then(|| (Attached::new(hub, 0), None)));
        };
        if after.position > hub.lock().head() {
            // Unknown to the reader yet: the log must hold it now.
            let batch = log
                .read(run_id, after.position - 1, 1, std::time::Duration::ZERO)
                .await?;
            if batch.entries.is_empty() {
                return Err(SubscribeError::UnknownId);
            }
        }
        // Attached before it waits, so that the window keeps the entry.
        let at = Attached::new(hub, after.position - 1);
        loop {
            let changed = at.hub.changed.notified();
            let (held, end) = {
                let window = at.hub.lock();
                if after.position < window.first {
                    return Ok(None);
                }
                (window.get(after.position).cloned(), window.end)
            };
            let frames = match held {
                Some(frames) => frames,
                None if end == End::Open => {
                    at.hub.signals.demand.notify_one();
                    changed.await;
                    continue;
                }
                None => return Ok(None),
            };
            let Some(rest) = after_frame(&frames, after.index) else {
                return Err(SubscribeError::UnknownId);
            };
            at.hub.lock().cursors.insert(at.id, after.position);
            drop(changed);
            return Ok(Some((at, (!rest.is_empty()).then_some(rest))));
        }
    }
}

/// The frames of an entry after its frame `index` (frames end with a blank
/// line, as [`emit_frames`] splits them), or `None` when it has no such
/// frame.
fn after_frame(frames: &Bytes, index: u64) -> Option<Bytes> {
    let mut offset = 0;
    let mut count = 0u64;
    while offset < frames.len() {
        let rest = frames.get(offset..).unwrap_or_default();
        offset += memchr::memmem::find(rest, b"\n\n").map_or(rest.len(), |i| i + 2);
        if count == index {
            return Some(frames.slice(offset..));
        }
        count += 1;
    }
    None
}

/// What a subscriber needs to go on alone.
struct Parts<E> {
    log: Arc<dyn RunLog>,
    run_id: Arc<str>,
    ids: bool,
    takeover: Option<Takeover>,
    make: MakeEncoder<E>,
}

impl<E: FrameEncoder + Send + 'static> Parts<E> {
    /// A lone subscription after `after` (a position and the index of the
    /// last frame of its entry seen, `None`: all of them).
    async fn open(
        &self,
        after: Option<(u64, Option<u64>)>,
    ) -> Result<Subscription<E>, SubscribeError> {
        let after = after.filter(|&(position, _)| position > 0);
        let (log, encoder) = (self.log.clone(), (self.make)());
        let mut sub = Subscription::open_after(log, &self.run_id, encoder, after, self.ids).await?;
        if let Some(takeover) = self.takeover.clone() {
            sub = sub.take_over(takeover);
        }
        Ok(sub)
    }
}

/// What a subscriber does next.
enum Step {
    Chunk(Bytes),
    Wait,
    Done,
    Alone,
}

/// An attached subscriber's next step: the next frames the window holds,
/// up to about [`SUBSCRIBER_BYTES`] of them, its cursor moved on.
fn next_step(at: &Attached) -> Step {
    let mut window = at.hub.lock();
    let mut position = window.cursors.get(&at.id).copied().unwrap_or(0);
    if position + 1 < window.first {
        return Step::Alone;
    }
    let mut parts: Vec<Bytes> = Vec::new();
    let mut bytes = 0;
    while bytes < SUBSCRIBER_BYTES {
        let Some(frames) = window.get(position + 1) else {
            break;
        };
        position += 1;
        if !frames.is_empty() {
            bytes += frames.len();
            parts.push(frames.clone());
        }
    }
    window.cursors.insert(at.id, position);
    if parts.len() > 1 {
        let mut chunk = BytesMut::with_capacity(bytes);
        for part in parts {
            chunk.extend_from_slice(&part);
        }
        return Step::Chunk(chunk.freeze());
    }
    if let Some(part) = parts.pop() {
        return Step::Chunk(part);
    }
    match window.end {
        End::Open => Step::Wait,
        End::Done => Step::Done,
        End::Failed => Step::Alone,
    }
}

/// A subscriber: from the window while it holds its next entry, alone
/// (its own reads and encoder) while it does not.
enum Follow<E> {
    Shared {
        at: Attached,
        pending: Option<Bytes>,
        parts: Parts<E>,
    },
    Alone {
        sub: Subscription<E>,
        /// The shared reader to join again, if any.
        hub: Option<Arc<Hub>>,
        parts: Parts<E>,
    },
    Done,
}

impl<E: FrameEncoder + Send + 'static> Follow<E> {
    /// The next chunk and the state after it.
    async fn next(self) -> Option<(Result<Bytes, SubscribeError>, Follow<E>)> {
        let mut state = self;
        loop {
            state = match state {
                Follow::Done => return None,
                Follow::Alone {
                    mut sub,
                    hub,
                    parts,
                } => {
                    let item = sub.next_chunk().await?;
                    let state = match (&hub, sub.boundary()) {
                        (Some(h), Some(position)) if rejoins(h, position) => Follow::Shared {
                            at: Attached::new(h.clone(), position),
                            pending: None,
                            parts,
                        },
                        _ => Follow::Alone { sub, hub, parts },
                    };
                    return Some((item, state));
                }
                Follow::Shared {
                    at,
                    pending: Some(p),
                    parts,
                } => {
                    let state = Follow::Shared {
                        at,
                        pending: None,
                        parts,
                    };
                    return Some((Ok(p), state));
                }
                Follow::Shared {
                    at,
                    pending: None,
                    parts,
                } => {
                    let step = {
                        // Made before the window is looked at: a change
                        // after the look wakes it.
                        let changed = at.hub.changed.notified();
                        let step = next_step(&at);
                        if matches!(step, Step::Wait) {
                            at.hub.signals.demand.notify_one();
                            changed.await;
                        }
                        step
                    };
                    match step {
                        Step::Chunk(chunk) => {
                            let state = Follow::Shared {
                                at,
                                pending: None,
                                parts,
                            };
                            return Some((Ok(chunk), state));
                        }
                        Step::Wait => Follow::Shared {
                            at,
                            pending: None,
                            parts,
                        },
                        Step::Done => return None,
                        Step::Alone => match go_alone(at, &parts).await {
                            Ok((sub, hub)) => Follow::Alone { sub, hub, parts },
                            Err(e) => return Some((Err(e), Follow::Done)),
                        },
                    }
                }
            };
        }
    }
}

/// Detaches a subscriber the window no longer serves and opens its lone
/// subscription from where it is; the hub to rejoin, unless it failed.
async fn go_alone<E: FrameEncoder + Send + 'static>(
    at: Attached,
    parts: &Parts<E>,
) -> Result<(Subscription<E>, Option<Arc<Hub>>), SubscribeError> {
    let position = at.position();
    let hub = at.hub.clone();
    drop(at);
    let failed = hub.lock().failed();
    let hub = (!failed).then_some(hub);
    match parts.open(Some((position, None))).await {
        Ok(sub) => Ok((sub, hub)),
        // The log expired under a slow reader, as a lone one's read finds.
        Err(SubscribeError::NotFound) => Err(SubscribeError::Log(LogError::NotFound)),
        Err(e) => Err(e),
    }
}

/// Whether a lone subscriber at `position` (seen whole) may read from the
/// window again: it holds the next entry, or will (the reader is behind).
fn rejoins(hub: &Hub, position: u64) -> bool {
    let window = hub.lock();
    !window.failed()
        && window.first <= position + 1
        && (window.end == End::Open || position < window.head())
}

/// A subscriber's frames (see [`Follow`]).
fn follow<E: FrameEncoder + Send + 'static>(
    state: Follow<E>,
) -> impl Stream<Item = Result<Bytes, SubscribeError>> + Send + 'static {
    futures::stream::unfold(state, Follow::next)
}

/// A shared reader's task: reads the log when a subscriber waits at the
/// window's end, encodes each entry once, and adds the frames to the
/// window; stops at the terminal, on a failure, or when its last
/// subscriber is gone.
struct Reader<E> {
    hub: Weak<Hub>,
    signals: Arc<Signals>,
    log: Arc<dyn RunLog>,
    run_id: Arc<str>,
    encoder: E,
    ids: bool,
    takeover: Option<Takeover>,
}

impl<E: FrameEncoder + Send + 'static> Reader<E> {
    async fn run(mut self) {
        let mut position = 0u64;
        let mut read_count = FIRST_READ;
        loop {
            self.signals.demand.notified().await;
            if self.signals.closed.load(Ordering::SeqCst) {
                return;
            }
            let read = self
                .log
                .read(&self.run_id, position, read_count, READ_WAIT)
                .await;
            let Some(hub) = self.hub.upgrade() else {
                return;
            };
            let end = match read {
                Ok(batch) if batch.entries.is_empty() => {
                    nothing_new(&self.log, &self.run_id, self.takeover.as_ref(), &batch).await
                }
                Ok(batch) => {
                    let (frames, end, bytes) = self.encode(batch, &mut position);
                    if !frames.is_empty() {
                        read_count = next_read_count(read_count, bytes, frames.len());
                    }
                    hub.lock().push(frames);
                    end
                }
                Err(e) => {
                    tracing::debug!(target: "lce::log", run_id = %self.run_id, error = %e, "a shared reader's read failed; its subscribers go on alone");
                    End::Failed
                }
            };
            hub.lock().end = end;
            // Waiters look again (and ask for more when still at the end).
            hub.changed.notify_waiters();
            if end != End::Open {
                return;
            }
        }
    }

    /// Encodes the entries of `batch` after `position`, moving it on: their
    /// frames, how the reader ends, and the bytes they encoded to.
    fn encode(&mut self, batch: LogBatch, position: &mut u64) -> (Vec<Bytes>, End, usize) {
        let mut frames = Vec::with_capacity(batch.entries.len());
        let mut scratch = BytesMut::new();
        let mut bytes = 0;
        for entry in batch.entries {
            if encode_entry(&mut self.encoder, &entry, &mut scratch).is_err() {
                // Its subscribers meet the error alone, from here.
                return (frames, End::Failed, bytes);
            }
            *position += 1;
            bytes += scratch.len();
            if self.ids {
                let mut out = BytesMut::with_capacity(scratch.len() + 64);
                emit_frames(&scratch, *position, None, true, &mut out);
                scratch.clear();
                frames.push(out.freeze());
            } else {
                frames.push(scratch.split().freeze());
            }
            if entry.is_terminal() {
                return (frames, End::Done, bytes);
            }
        }
        (frames, End::Open, bytes)
    }
}

/// After a read that found no entry: the end of a sealed log, or an
/// orphaned run ended (the next read finds its terminal), or a wait.
async fn nothing_new(
    log: &Arc<dyn RunLog>,
    run_id: &str,
    takeover: Option<&Takeover>,
    batch: &LogBatch,
) -> End {
    if batch.sealed {
        return End::Done;
    }
    if let (false, Some(takeover)) = (batch.owned, takeover) {
        if end_orphan(log, run_id, takeover).await.is_err() {
            return End::Failed;
        }
    }
    End::Open
}
