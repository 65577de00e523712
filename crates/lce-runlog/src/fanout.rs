//! Fan-out (`gateway.md`, guarantee 8): one replica reads and encodes a
//! log entry once per encoding, whatever the number of its subscribers.
//!
//! A [`Fanout`] keeps one shared reader per run and encoding key (the
//! protocol, and whether frames carry ids: whatever changes the bytes)
//! while that run has a subscriber on this replica. The reader is a task
//! that reads the log from its start with one encoder, and keeps what each
//! entry encoded to (a [`Bytes`], cloned for free) in a window of at most
//! [`WINDOW_BYTES`] of frames, the run's last entries; every subscriber of
//! the key is a cursor into that window. Reads follow demand: the reader
//! reads on only when a subscriber has reached the last entry it holds, so
//! it is never further ahead than the fastest subscriber.
//!
//! A subscriber's bytes stay a pure function of the log: the shared
//! encoder sees every entry in order from the start, as a lone
//! [`Subscription`] does, and a subscriber (or a resume after a frame id)
//! starts at an entry boundary of the same encoding. A subscriber that
//! needs an entry the window no longer holds (it joined a run longer than
//! the window, or fell more than [`WINDOW_BYTES`] behind the fastest one)
//! goes on alone with a [`Subscription`] of its own from where it is, which
//! re-reads and re-encodes the log as every subscriber did before fan-out:
//! a slow subscriber never holds the window or the other subscribers back
//! (guarantee 6), and holds no more memory than a lone one. A failed log
//! read or encode ends the shared reader; each of its subscribers then goes
//! on alone from where it is, and meets the failure itself. The reader
//! stops when its last subscriber leaves, or at the run's terminal.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The most bytes of frames one shared reader keeps (the run's last
/// entries; the entry that passes it is kept whole). A subscriber that needs
/// an older entry goes on with a reader of its own.
pub const WINDOW_BYTES: usize = 8 * SUBSCRIBER_BYTES;

/// The shared readers of one replica (see the module documentation),
/// keyed by run id, a key `K` of the encoding (a protocol), and ids.
pub struct Fanout<K> {
    log: Arc<dyn RunLog>,
    takeover: Option<Takeover>,
    hubs: Mutex<HashMap<Slot<K>, Weak<Hub>>>,
}

/// A shared reader's key: the run id, the encoding's key, ids or not.
type Slot<K> = (Arc<str>, K, bool);

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
        F: Fn() -> E,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.alone(run_id, encoder(), after, ids).await;
        };
        if self.log.info(run_id).await?.is_none() {
            return Err(SubscribeError::NotFound);
        }
        let hub = self.hub(&runtime, run_id, key, ids, &encoder)?;
        let Some(cursor) = hub.start(&self.log, run_id, after).await? else {
            // The window no longer holds where this subscriber starts.
            return self.alone(run_id, encoder(), after, ids).await;
        };
        let alone = Alone {
            log: self.log.clone(),
            run_id: run_id.into(),
            encoder: encoder(),
            ids,
            takeover: self.takeover.clone(),
        };
        Ok(Box::pin(follow(hub, cursor, alone)))
    }

    async fn alone<E: FrameEncoder + Send + 'static>(
        &self,
        run_id: &str,
        encoder: E,
        after: Option<FrameId>,
        ids: bool,
    ) -> Result<FrameStream, SubscribeError> {
        let mut sub = Subscription::open(self.log.clone(), run_id, encoder, after, ids).await?;
        if let Some(takeover) = self.takeover.clone() {
            sub = sub.take_over(takeover);
        }
        Ok(Box::pin(sub.into_stream()))
    }

    /// The live shared reader of this run and key, or a new one.
    fn hub<E, F>(
        &self,
        runtime: &tokio::runtime::Handle,
        run_id: &str,
        key: K,
        ids: bool,
        encoder: &F,
    ) -> Result<Arc<Hub>, SubscribeError>
    where
        E: FrameEncoder + Send + 'static,
        F: Fn() -> E,
    {
        let mut hubs = self
            .hubs
            .lock()
            .map_err(|_| SubscribeError::Log(LogError::Unavailable))?;
        hubs.retain(|_, w| w.strong_count() > 0);
        let run_id: Arc<str> = run_id.into();
        let slot = (run_id.clone(), key, ids);
        if let Some(hub) = hubs.get(&slot).and_then(Weak::upgrade) {
            if !hub.lock().failed() {
                return Ok(hub);
            }
        }
        let signals = Arc::new(Signals::default());
        let hub = Arc::new(Hub {
            window: Mutex::new(Window::default()),
            changed: Notify::new(),
            signals: signals.clone(),
        });
        let reader = Reader {
            hub: Arc::downgrade(&hub),
            signals,
            log: self.log.clone(),
            run_id,
            encoder: encoder(),
            ids,
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
/// key says so).
#[derive(Debug)]
struct Window {
    frames: VecDeque<Bytes>,
    /// The position of `frames[0]`.
    first: u64,
    bytes: usize,
    end: End,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            frames: VecDeque::new(),
            first: 1,
            bytes: 0,
            end: End::Open,
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

    /// Adds the frames of the next entries, then drops the oldest while
    /// more than [`WINDOW_BYTES`] are held (never the last entry).
    fn push(&mut self, frames: Vec<Bytes>) {
        for f in frames {
            self.bytes += f.len();
            self.frames.push_back(f);
        }
        while self.bytes > WINDOW_BYTES && self.frames.len() > 1 {
            if let Some(f) = self.frames.pop_front() {
                self.bytes -= f.len();
                self.first += 1;
            }
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
        self.signals.closed.store(true, Ordering::SeqCst);
        self.signals.demand.notify_one();
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

    /// Where a subscriber starts: the position it has seen whole, and the
    /// rest of the entry `after` names. `None`: the window no longer holds
    /// it (or the reader failed before it), the subscriber goes alone.
    async fn start(
        self: &Arc<Self>,
        log: &Arc<dyn RunLog>,
        run_id: &str,
        after: Option<FrameId>,
    ) -> Result<Option<Cursor>, SubscribeError> {
        let Some(after) = after else {
            let held = self.lock().first == 1;
            return Ok(held.then_some(Cursor {
                position: 0,
                pending: None,
            }));
        };
        if after.position > self.lock().head() {
            // Unknown to the reader yet: the log must hold it now.
            let batch = log
                .read(run_id, after.position - 1, 1, std::time::Duration::ZERO)
                .await?;
            if batch.entries.is_empty() {
                return Err(SubscribeError::UnknownId);
            }
        }
        loop {
            let changed = self.changed.notified();
            let (held, end) = {
                let window = self.lock();
                if after.position < window.first {
                    return Ok(None);
                }
                (window.get(after.position).cloned(), window.end)
            };
            let frames = match held {
                Some(frames) => frames,
                None if end == End::Open => {
                    self.signals.demand.notify_one();
                    changed.await;
                    continue;
                }
                None => return Ok(None),
            };
            let Some(rest) = after_frame(&frames, after.index) else {
                return Err(SubscribeError::UnknownId);
            };
            return Ok(Some(Cursor {
                position: after.position,
                pending: (!rest.is_empty()).then_some(rest),
            }));
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

/// A subscriber's place: the last position it has seen whole, and the rest
/// of the entry it resumed in.
struct Cursor {
    position: u64,
    pending: Option<Bytes>,
}

/// What a subscriber needs to go on alone.
struct Alone<E> {
    log: Arc<dyn RunLog>,
    run_id: Arc<str>,
    encoder: E,
    ids: bool,
    takeover: Option<Takeover>,
}

impl<E: FrameEncoder + Send + 'static> Alone<E> {
    /// A lone subscription after the whole entry at `position`.
    async fn open(self, position: u64) -> Result<FrameStream, SubscribeError> {
        let after = (position > 0).then_some((position, None));
        let opened =
            Subscription::open_after(self.log, &self.run_id, self.encoder, after, self.ids).await;
        let mut sub = opened.map_err(|e| match e {
            // The log expired under a slow reader, as a lone one's read finds.
            SubscribeError::NotFound => SubscribeError::Log(LogError::NotFound),
            e => e,
        })?;
        if let Some(takeover) = self.takeover {
            sub = sub.take_over(takeover);
        }
        Ok(Box::pin(sub.into_stream()))
    }
}

/// What a subscriber does next.
enum Step {
    Chunk(Bytes),
    Wait,
    Done,
    Alone,
}

/// A subscriber's next step at `position` (the last position it has seen
/// whole): the next frames the window holds, up to about
/// [`SUBSCRIBER_BYTES`] of them, moving `position` on.
fn next_step(hub: &Hub, position: &mut u64) -> Step {
    let window = hub.lock();
    if *position + 1 < window.first {
        return Step::Alone;
    }
    let mut parts: Vec<Bytes> = Vec::new();
    let mut bytes = 0;
    while bytes < SUBSCRIBER_BYTES {
        let Some(frames) = window.get(*position + 1) else {
            break;
        };
        *position += 1;
        if !frames.is_empty() {
            bytes += frames.len();
            parts.push(frames.clone());
        }
    }
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

/// A subscriber: from the window while it holds its next entry, then alone.
enum Follow<E> {
    Shared {
        hub: Arc<Hub>,
        cursor: Cursor,
        alone: Alone<E>,
    },
    Alone(FrameStream),
    Done,
}

/// A subscriber's frames (see [`Follow`]).
fn follow<E: FrameEncoder + Send + 'static>(
    hub: Arc<Hub>,
    cursor: Cursor,
    alone: Alone<E>,
) -> impl Stream<Item = Result<Bytes, SubscribeError>> + Send + 'static {
    let state = Follow::Shared { hub, cursor, alone };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            match state {
                Follow::Done => return None,
                Follow::Alone(mut frames) => {
                    let item = futures::StreamExt::next(&mut frames).await?;
                    return Some((item, Follow::Alone(frames)));
                }
                Follow::Shared {
                    hub,
                    mut cursor,
                    alone,
                } => {
                    if let Some(pending) = cursor.pending.take() {
                        return Some((Ok(pending), Follow::Shared { hub, cursor, alone }));
                    }
                    let step = {
                        // Made before the window is looked at: a change
                        // after the look wakes it.
                        let changed = hub.changed.notified();
                        let step = next_step(&hub, &mut cursor.position);
                        if matches!(step, Step::Wait) {
                            hub.signals.demand.notify_one();
                            changed.await;
                        }
                        step
                    };
                    match step {
                        Step::Chunk(chunk) => {
                            return Some((Ok(chunk), Follow::Shared { hub, cursor, alone }));
                        }
                        Step::Wait => state = Follow::Shared { hub, cursor, alone },
                        Step::Done => return None,
                        Step::Alone => {
                            drop(hub);
                            match alone.open(cursor.position).await {
                                Ok(frames) => state = Follow::Alone(frames),
                                Err(e) => return Some((Err(e), Follow::Done)),
                            }
                        }
                    }
                }
            }
        }
    })
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
