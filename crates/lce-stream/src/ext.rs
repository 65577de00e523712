//! The adaptors: one small struct per step, and the extension trait that
//! builds them.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use futures::stream::FusedStream;
use lce_sanitize::Sanitizer;
use lce_types::Event;
use lce_validate::{RunValidator, ValidatorOptions};
use pin_project_lite::pin_project;

use crate::coordinator::{Coordinated, Coordinator};
use crate::error::LceError;
use crate::stage::{LifecycleStream, StageCounts};
use lce_core::FrameEncoder;

/// Adaptors over streams of `Result<Event, LceError>` (a lifecycle stream).
///
/// The chain lce builds (`lce encode`, `lce serve`, [`enforced`]) is
///
/// ```text
/// events(adapter)            // or source(items): the adapter's items
///     .drop_empty_deltas()   // D7
///     .sanitized(sanitizer)  // bounds, hygiene: a rejected event becomes an error item
///     .validated(options)    // the 15 rules, adapter mode: a violation becomes an error item
///     .coordinated(coord)    // error items and closure become terminals; commits, cancel, audit
///     .encoded(encoder)      // SSE frames
/// ```
///
/// A stage that finds a problem yields a typed error item ([`LceError`]) in
/// place of the event; every other stage passes error items on untouched,
/// and [`coordinated`] turns them into the contract's terminals. Leave a
/// stage out and its guarantee goes with it. Named so it does not clash
/// with `futures::StreamExt`.
///
/// [`validated`]: LifecycleStreamExt::validated
/// [`coordinated`]: LifecycleStreamExt::coordinated
/// [`enforced`]: LifecycleStreamExt::enforced
pub trait LifecycleStreamExt: Stream<Item = Result<Event, LceError>> + Sized {
    /// Stamps `sequence` 0, 1, 2, ... on the events, for adapters that do
    /// not number their events.
    fn sequenced(self) -> Sequenced<Self> {
        Sequenced {
            inner: self,
            next: 0,
        }
    }

    /// Drops empty text, reasoning and argument deltas (D7), counting them.
    fn drop_empty_deltas(self) -> DropEmptyDeltas<Self> {
        DropEmptyDeltas {
            inner: self,
            dropped: 0,
        }
    }

    /// Sanitizes each event in place; a rejected event becomes an error item
    /// ([`LceError::Rejected`]).
    fn sanitized(self, sanitizer: Sanitizer) -> Sanitized<Self> {
        Sanitized {
            inner: self,
            sanitizer,
            cleaned: 0,
        }
    }

    /// Validates the run: yields its events, and in place of the first event
    /// that breaks a rule the [`LceError::Violation`] (rule 12 when the
    /// stream ends without a terminal). The first error item (a violation, or
    /// an error from upstream, passed on) ends the run: whatever the stream
    /// sends after it is drained and dropped (D8), counted in
    /// [`StageCounts::discarded`], and the adaptor ends with the stream.
    fn validated(self, options: ValidatorOptions) -> Validated<Self> {
        Validated {
            inner: self,
            validator: RunValidator::new(options),
            failed: false,
            done: false,
            discarded: 0,
        }
    }

    /// Runs the stream through `coordinator`, which turns error items and a
    /// closure without terminal into the contract's terminals and commits,
    /// cancels and audits the run (see [`coordinator`](crate::coordinator)).
    /// It does not sanitize or validate: that is the stages' work, and
    /// [`enforced`](Self::enforced) builds them all.
    fn coordinated(self, coordinator: Coordinator) -> Coordinated<Self>
    where
        Self: LifecycleStream,
    {
        coordinator.coordinate(self)
    }

    /// The whole chain lce builds for a run, configured from `coordinator`'s
    /// options:
    /// `self.drop_empty_deltas().sanitized(..).validated(..).coordinated(coordinator)`,
    /// the sanitizer with the options' limits, the validator in adapter mode
    /// (D10a) with their limits, schemas, ephemerality and run identity. Its
    /// output satisfies the contract whatever the adapter did.
    fn enforced(self, coordinator: Coordinator) -> Enforced<Self>
    where
        Self: LifecycleStream,
    {
        let options = coordinator.options();
        let sanitizer = Sanitizer::new(options.limits.clone());
        let validator = options.validator_options();
        self.drop_empty_deltas()
            .sanitized(sanitizer)
            .validated(validator)
            .coordinated(coordinator)
    }

    /// Encodes the events into SSE bytes: one chunk per encoder call, that
    /// is, the whole frames one event led to (none, one or several), or the
    /// frames the encoder released while the upstream waited (D13a). The
    /// boundaries are the encoder's: a [`FrameEncoder`] appends whole frames
    /// only, so a chunk never holds part of a frame and the output is never
    /// searched for them. Never waits for more input before yielding what it
    /// has.
    fn encoded<E: FrameEncoder>(self, encoder: E) -> Encoded<Self, E> {
        Encoded {
            inner: self,
            encoder,
            buf: BytesMut::new(),
            done: false,
        }
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> LifecycleStreamExt for S {}

/// The chain [`LifecycleStreamExt::enforced`] builds over `S`.
pub type Enforced<S> = Coordinated<Validated<Sanitized<DropEmptyDeltas<S>>>>;

/// The lifting function of [`events`].
pub type LiftEvent = fn(Event) -> Result<Event, LceError>;

/// Turns a stream of plain events (an adapter) into a lifecycle stream, the
/// start of a chain.
pub fn events<S: Stream<Item = Event>>(stream: S) -> Source<futures::stream::Map<S, LiftEvent>> {
    source(futures::StreamExt::map(stream, Ok as LiftEvent))
}

/// Starts a chain with a stream of `Result<Event, LceError>`: an adapter
/// that reports its own errors, or lines being parsed (a parse error is an
/// error item like any other).
pub fn source<S: Stream<Item = Result<Event, LceError>>>(stream: S) -> Source<S> {
    Source { inner: stream }
}

/// `get_ref`, `get_mut`, `get_pin_mut` and `into_inner` for an adaptor whose
/// stream is its pinned field `inner`, as `futures`' adaptors have them.
macro_rules! delegate_access_inner {
    ($name:ident<S $(, $param:ident)*>) => {
        impl<S $(, $param)*> $name<S $(, $param)*> {
            /// The underlying stream.
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            /// The underlying stream, mutably.
            ///
            /// Take care not to disturb its state in a way that confuses
            /// this adaptor (say, by polling it directly).
            pub fn get_mut(&mut self) -> &mut S {
                &mut self.inner
            }

            /// The underlying stream, pinned.
            ///
            /// Take care not to disturb its state in a way that confuses
            /// this adaptor (say, by polling it directly).
            pub fn get_pin_mut(self: Pin<&mut Self>) -> Pin<&mut S> {
                self.project().inner
            }

            /// The underlying stream, giving up this adaptor and its state.
            pub fn into_inner(self) -> S {
                self.inner
            }
        }
    };
}

/// `FusedStream` for an adaptor that ends when its stream ends: terminated
/// when the underlying stream is.
macro_rules! fused_when_inner_is {
    ($name:ident) => {
        impl<S> FusedStream for $name<S>
        where
            S: FusedStream<Item = Result<Event, LceError>>,
        {
            fn is_terminated(&self) -> bool {
                self.inner.is_terminated()
            }
        }
    };
}

/// For a stage that counts what it does in its field `$count`: the getter
/// of that count (documented `$doc`), and its [`LifecycleStream`], its
/// stream's counts plus its own in [`StageCounts`]' field `$total`.
macro_rules! counting_stage {
    ($name:ident, $count:ident => $total:ident, $doc:literal) => {
        impl<S> $name<S> {
            #[doc = $doc]
            pub fn $count(&self) -> u64 {
                self.$count
            }
        }

        #[doc = concat!("Its stream's counts plus its own `", stringify!($count), "`.")]
        impl<S: LifecycleStream> LifecycleStream for $name<S> {
            fn stage_counts(&self) -> StageCounts {
                let mut counts = self.inner.stage_counts();
                counts.$total += self.$count;
                counts
            }
        }
    };
}

/// Polls `inner` and hands an event to `f` where it lies: the item goes on
/// as it came (no move of the event in or out), or, where `f` fails, its
/// error in the event's place.
#[inline]
fn poll_in_place<S: Stream<Item = Result<Event, LceError>>>(
    inner: Pin<&mut S>,
    cx: &mut Context<'_>,
    f: impl FnOnce(&mut Event) -> Result<(), LceError>,
) -> Poll<Option<S::Item>> {
    let mut poll = inner.poll_next(cx);
    if let Poll::Ready(Some(Ok(e))) = &mut poll {
        if let Err(err) = f(e) {
            return Poll::Ready(Some(Err(err)));
        }
    }
    poll
}

pin_project! {
    /// The start of a chain: see [`source`] and [`events`]. Passes the
    /// stream's items on as they are.
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct Source<S> {
        #[pin]
        inner: S,
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for Source<S> {
    type Item = S::Item;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project().inner.poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

/// Nothing dropped or changed: a source passes everything on.
impl<S: Stream<Item = Result<Event, LceError>>> LifecycleStream for Source<S> {
    fn stage_counts(&self) -> StageCounts {
        StageCounts::default()
    }
}

delegate_access_inner!(Source<S>);
fused_when_inner_is!(Source);

pin_project! {
    /// See [`LifecycleStreamExt::sequenced`].
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct Sequenced<S> {
        #[pin]
        inner: S,
        next: u64,
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for Sequenced<S> {
    type Item = S::Item;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        poll_in_place(this.inner, cx, |e| {
            e.sequence = *this.next;
            *this.next = this.next.saturating_add(1);
            Ok(())
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

delegate_access_inner!(Sequenced<S>);
fused_when_inner_is!(Sequenced);

/// Its stream's counts: numbering drops and changes nothing.
impl<S: LifecycleStream> LifecycleStream for Sequenced<S> {
    fn stage_counts(&self) -> StageCounts {
        self.inner.stage_counts()
    }
}

pin_project! {
    /// See [`LifecycleStreamExt::drop_empty_deltas`].
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct DropEmptyDeltas<S> {
        #[pin]
        inner: S,
        dropped: u64,
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for DropEmptyDeltas<S> {
    type Item = S::Item;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            // In place: what goes on is returned as it came.
            let poll = this.inner.as_mut().poll_next(cx);
            match &poll {
                Poll::Ready(Some(Ok(e))) if e.is_empty_delta() => {
                    *this.dropped += 1;
                }
                Poll::Ready(None) => {
                    if *this.dropped > 0 {
                        tracing::debug!(target: "lce::stream", dropped = *this.dropped, "empty deltas dropped (D7)");
                    }
                    return poll;
                }
                _ => return poll,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.inner.size_hint().1)
    }
}

delegate_access_inner!(DropEmptyDeltas<S>);
fused_when_inner_is!(DropEmptyDeltas);
counting_stage!(
    DropEmptyDeltas,
    dropped => empty_deltas,
    "How many empty deltas were dropped so far."
);

pin_project! {
    /// See [`LifecycleStreamExt::sanitized`].
    #[must_use = "streams do nothing unless polled"]
    #[derive(Debug)]
    pub struct Sanitized<S> {
        #[pin]
        inner: S,
        sanitizer: Sanitizer,
        cleaned: u64,
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for Sanitized<S> {
    type Item = S::Item;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let (sanitizer, cleaned) = (this.sanitizer, this.cleaned);
        poll_in_place(this.inner, cx, |e| match sanitizer.sanitize_in_place(e) {
            Ok(report) => {
                if !report.is_clean() {
                    *cleaned += 1;
                }
                Ok(())
            }
            Err(rejection) => {
                tracing::debug!(target: "lce::stream", kind = ?rejection.kind, "sanitizer rejection");
                let (sequence, event_type) = (e.sequence, e.event_type());
                Err(LceError::Rejected {
                    sequence,
                    event_type,
                    rejection,
                })
            }
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

delegate_access_inner!(Sanitized<S>);
fused_when_inner_is!(Sanitized);
counting_stage!(
    Sanitized,
    cleaned => cleaned,
    "How many events the sanitizer changed so far."
);

pin_project! {
    /// See [`LifecycleStreamExt::validated`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Validated<S> {
        #[pin]
        inner: S,
        validator: RunValidator,
        // The first error item went out: the rest is drained and dropped.
        failed: bool,
        // The stream ended (and rule 12, if broken, was reported).
        done: bool,
        discarded: u64,
    }
}

/// How many items [`Validated`] drains and drops in one poll before it
/// yields to the executor (it wakes itself to go on): an adapter with an
/// endless supply of ready items cannot hold the thread.
const DRAIN_BUDGET: u32 = 1024;

impl<S> Validated<S> {
    /// The validator, for its counts (events, bytes) and state.
    pub fn validator(&self) -> &RunValidator {
        &self.validator
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for Validated<S> {
    type Item = S::Item;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        if *this.failed {
            // D8: the run is over; drain and drop what the stream sends.
            for _ in 0..DRAIN_BUDGET {
                match this.inner.as_mut().poll_next(cx) {
                    Poll::Ready(Some(_)) => *this.discarded += 1,
                    Poll::Ready(None) => {
                        *this.done = true;
                        return Poll::Ready(None);
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        // In place: an accepted event is returned as it came.
        let poll = this.inner.poll_next(cx);
        match &poll {
            Poll::Ready(Some(Ok(e))) => {
                if let Err(v) = this.validator.push(e) {
                    *this.failed = true;
                    return Poll::Ready(Some(Err(LceError::Violation(v))));
                }
            }
            Poll::Ready(Some(Err(_))) => *this.failed = true,
            Poll::Ready(None) => {
                *this.done = true;
                if let Err(v) = this.validator.finish() {
                    return Poll::Ready(Some(Err(LceError::Violation(v))));
                }
            }
            Poll::Pending => {}
        }
        poll
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // After the first error it yields nothing more (it only drains).
        if self.done || self.failed {
            return (0, Some(0));
        }
        let (_, hi) = self.inner.size_hint();
        (0, hi.and_then(|h| h.checked_add(1)))
    }
}

delegate_access_inner!(Validated<S>);
counting_stage!(
    Validated,
    discarded => discarded,
    "How many items were drained and dropped after the first error item."
);

/// Terminated once the stream has ended (rule 12's violation, if there was
/// one to report, yielded).
impl<S: Stream<Item = Result<Event, LceError>>> FusedStream for Validated<S> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

/// The underlying stream, how many events the validator accepted, and
/// where the adaptor is; not the validator's state (open spans and ids,
/// possibly many).
impl<S: fmt::Debug> fmt::Debug for Validated<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validated")
            .field("inner", &self.inner)
            .field("events", &self.validator.events())
            .field("failed", &self.failed)
            .field("discarded", &self.discarded)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// See [`LifecycleStreamExt::encoded`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Encoded<S, E> {
        #[pin]
        inner: S,
        encoder: E,
        buf: BytesMut,
        done: bool,
    }
}

impl<S, E> Encoded<S, E> {
    /// The encoder.
    pub fn encoder(&self) -> &E {
        &self.encoder
    }
}

/// What one encoder call appended, as one chunk: `None` when it appended
/// nothing.
fn take_chunk(buf: &mut BytesMut) -> Option<Bytes> {
    (!buf.is_empty()).then(|| buf.split().freeze())
}

impl<S, E> Stream for Encoded<S, E>
where
    S: Stream<Item = Result<Event, LceError>>,
    E: FrameEncoder,
{
    type Item = Result<Bytes, LceError>;

    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if *this.done {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(e))) => {
                    if let Err(err) = this.encoder.encode_frame(&e, this.buf) {
                        return Poll::Ready(Some(Err(LceError::Encode(err.into()))));
                    }
                    if let Some(chunk) = take_chunk(this.buf) {
                        return Poll::Ready(Some(Ok(chunk)));
                    }
                }
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err))),
                Poll::Ready(None) => *this.done = true,
                Poll::Pending => {
                    if let Err(err) = this.encoder.on_idle(this.buf) {
                        return Poll::Ready(Some(Err(LceError::Encode(err.into()))));
                    }
                    return match take_chunk(this.buf) {
                        Some(chunk) => Poll::Ready(Some(Ok(chunk))),
                        None => Poll::Pending,
                    };
                }
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // An event may produce no frame or several.
        (0, None)
    }
}

delegate_access_inner!(Encoded<S, E>);

/// Terminated once the underlying stream has ended (every frame it led to
/// was yielded with the event that led to it).
impl<S, E> FusedStream for Encoded<S, E>
where
    S: Stream<Item = Result<Event, LceError>>,
    E: FrameEncoder,
{
    fn is_terminated(&self) -> bool {
        self.done
    }
}

/// The underlying stream, the encoder and whether the underlying stream has
/// ended (never the bytes: they are the events' text).
impl<S: fmt::Debug, E: fmt::Debug> fmt::Debug for Encoded<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoded")
            .field("inner", &self.inner)
            .field("encoder", &self.encoder)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::StageCounts;

    #[test]
    fn stage_counts_add_field_by_field() {
        let a = StageCounts {
            empty_deltas: 1,
            cleaned: 2,
            discarded: 3,
        };
        let b = StageCounts {
            empty_deltas: 10,
            cleaned: 20,
            discarded: 30,
        };
        assert_eq!(
            a + b,
            StageCounts {
                empty_deltas: 11,
                cleaned: 22,
                discarded: 33,
            }
        );
    }
}
