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
use memchr::memmem;
use pin_project_lite::pin_project;

use crate::coordinator::{Coordinated, Coordinator};
use crate::encoder::FrameEncoder;
use crate::error::LceError;

/// Adaptors over streams of `Result<Event, LceError>` (a lifecycle stream).
///
/// Errors pass through every adaptor untouched except [`validated`] (which
/// ends after the first problem) and [`coordinated`] (which turns problems
/// into the contract's terminals). Named so it does not clash with
/// `futures::StreamExt`.
///
/// [`validated`]: LifecycleStreamExt::validated
/// [`coordinated`]: LifecycleStreamExt::coordinated
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

    /// Sanitizes each event; a rejected event becomes an error item.
    fn sanitized(self, sanitizer: Sanitizer) -> Sanitized<Self> {
        Sanitized {
            inner: self,
            sanitizer,
            cleaned: 0,
        }
    }

    /// Validates the run; yields its events, or the first violation (rule 12
    /// included, when the stream ends without a terminal) and then ends.
    fn validated(self, options: ValidatorOptions) -> Validated<Self> {
        Validated {
            inner: self,
            validator: RunValidator::new(options),
            done: false,
        }
    }

    /// Runs the stream through `coordinator`: the output always satisfies
    /// the contract.
    fn coordinated(self, coordinator: Coordinator) -> Coordinated<Self> {
        coordinator.coordinate(self)
    }

    /// Encodes the events into SSE bytes, one chunk per frame. Never waits
    /// for more input before yielding what it has; when the upstream would
    /// wait it gives the encoder a chance to release held frames (D13a).
    fn encoded<E: FrameEncoder>(self, encoder: E) -> Encoded<Self, E> {
        Encoded {
            inner: self,
            encoder,
            buf: BytesMut::new(),
            done: false,
            frame_end: memmem::Finder::new(b"\n\n"),
        }
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> LifecycleStreamExt for S {}

/// The lifting function of [`events`].
pub type LiftEvent = fn(Event) -> Result<Event, LceError>;

/// Turns a stream of plain events (an adapter) into a lifecycle stream.
pub fn events<S: Stream<Item = Event>>(stream: S) -> futures::stream::Map<S, LiftEvent> {
    futures::StreamExt::map(stream, Ok as LiftEvent)
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

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        match this.inner.poll_next(cx) {
            Poll::Ready(Some(Ok(mut e))) => {
                e.sequence = *this.next;
                *this.next = this.next.saturating_add(1);
                Poll::Ready(Some(Ok(e)))
            }
            other => other,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

delegate_access_inner!(Sequenced<S>);
fused_when_inner_is!(Sequenced);

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

impl<S> DropEmptyDeltas<S> {
    /// How many empty deltas were dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for DropEmptyDeltas<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(e))) if e.is_empty_delta() => {
                    *this.dropped += 1;
                }
                Poll::Ready(None) => {
                    if *this.dropped > 0 {
                        tracing::debug!(target: "lce::stream", dropped = *this.dropped, "empty deltas dropped (D7)");
                    }
                    return Poll::Ready(None);
                }
                other => return other,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.inner.size_hint().1)
    }
}

delegate_access_inner!(DropEmptyDeltas<S>);
fused_when_inner_is!(DropEmptyDeltas);

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

impl<S> Sanitized<S> {
    /// How many events the sanitizer changed so far.
    pub fn cleaned(&self) -> u64 {
        self.cleaned
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for Sanitized<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        match this.inner.poll_next(cx) {
            Poll::Ready(Some(Ok(e))) => {
                let (sequence, event_type) = (e.sequence, e.event_type());
                Poll::Ready(Some(match this.sanitizer.sanitize(e) {
                    Ok(clean) => {
                        if !clean.report.is_clean() {
                            *this.cleaned += 1;
                        }
                        Ok(clean.event)
                    }
                    Err(rejection) => Err(LceError::Rejected {
                        sequence,
                        event_type,
                        rejection,
                    }),
                }))
            }
            other => other,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

delegate_access_inner!(Sanitized<S>);
fused_when_inner_is!(Sanitized);

pin_project! {
    /// See [`LifecycleStreamExt::validated`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Validated<S> {
        #[pin]
        inner: S,
        validator: RunValidator,
        done: bool,
    }
}

impl<S: Stream<Item = Result<Event, LceError>>> Stream for Validated<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        match this.inner.poll_next(cx) {
            Poll::Ready(Some(Ok(e))) => match this.validator.push(&e) {
                Ok(()) => Poll::Ready(Some(Ok(e))),
                Err(v) => {
                    *this.done = true;
                    Poll::Ready(Some(Err(LceError::Violation(v))))
                }
            },
            Poll::Ready(Some(Err(err))) => {
                *this.done = true;
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(None) => {
                *this.done = true;
                match this.validator.finish() {
                    Ok(()) => Poll::Ready(None),
                    Err(v) => Poll::Ready(Some(Err(LceError::Violation(v)))),
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            return (0, Some(0));
        }
        let (_, hi) = self.inner.size_hint();
        (0, hi.and_then(|h| h.checked_add(1)))
    }
}

delegate_access_inner!(Validated<S>);

/// Terminated once it has yielded its last item: the first error, or the
/// end of the run (and rule 12's violation, if there was one to report).
impl<S: Stream<Item = Result<Event, LceError>>> FusedStream for Validated<S> {
    fn is_terminated(&self) -> bool {
        self.done
    }
}

/// The underlying stream, how many events the validator accepted, and
/// whether the adaptor is done; not the validator's state (open spans and
/// ids, possibly many).
impl<S: fmt::Debug> fmt::Debug for Validated<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validated")
            .field("inner", &self.inner)
            .field("events", &self.validator.events())
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
        // Finds the blank line ending a frame; built once per stream.
        frame_end: memmem::Finder<'static>,
    }
}

impl<S, E> Encoded<S, E> {
    /// The encoder.
    pub fn encoder(&self) -> &E {
        &self.encoder
    }
}

/// Splits the first complete SSE frame (ending in a blank line) off `buf`.
///
/// `frame_end` looks for the two newlines as a pair, many bytes at a time,
/// instead of stopping at every newline the encoder wrote.
fn next_frame(buf: &mut BytesMut, frame_end: &memmem::Finder<'_>) -> Option<Bytes> {
    let end = frame_end.find(buf)?;
    Some(buf.split_to(end + 2).freeze())
}

impl<S, E> Stream for Encoded<S, E>
where
    S: Stream<Item = Result<Event, LceError>>,
    E: FrameEncoder,
{
    type Item = Result<Bytes, LceError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        loop {
            if let Some(frame) = next_frame(this.buf, this.frame_end) {
                return Poll::Ready(Some(Ok(frame)));
            }
            if *this.done {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(e))) => {
                    if let Err(err) = this.encoder.encode_frame(&e, this.buf) {
                        return Poll::Ready(Some(Err(LceError::Encode(err.into()))));
                    }
                }
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err))),
                Poll::Ready(None) => *this.done = true,
                Poll::Pending => {
                    if let Err(err) = this.encoder.on_idle(this.buf) {
                        return Poll::Ready(Some(Err(LceError::Encode(err.into()))));
                    }
                    match next_frame(this.buf, this.frame_end) {
                        Some(frame) => return Poll::Ready(Some(Ok(frame))),
                        None => return Poll::Pending,
                    }
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

/// Terminated once the underlying stream has ended and every frame it led
/// to has been yielded.
impl<S, E> FusedStream for Encoded<S, E>
where
    S: Stream<Item = Result<Event, LceError>>,
    E: FrameEncoder,
{
    fn is_terminated(&self) -> bool {
        self.done && self.frame_end.find(&self.buf).is_none()
    }
}

/// The underlying stream, the encoder, how many bytes of frames wait to be
/// yielded (not the bytes: they are the events' text) and whether the
/// underlying stream has ended.
impl<S: fmt::Debug, E: fmt::Debug> fmt::Debug for Encoded<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoded")
            .field("inner", &self.inner)
            .field("encoder", &self.encoder)
            .field("buffered", &self.buf.len())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
