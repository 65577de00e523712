//! Request bodies at the door, in the router itself (so a host that nests
//! [`Gateway::router`](crate::Gateway::router) in its own server gets the
//! same bounds as `lce serve`):
//!
//! - a JSON request body is read whole, at most `max_request_bytes`
//!   ([`ApiError::BodyTooLarge`], 413) and with no gap longer than
//!   `body_idle_timeout` between two of its chunks
//!   ([`ApiError::BodyTimeout`], 408);
//! - a pushed run (`POST /api/v1/runs`) is a stream of lines, not a body to
//!   buffer: its raw bytes are bounded by D19's `bytes_per_run` (plus two
//!   bytes of line end per event of `events_per_run`), and when no line
//!   arrives for `ingest_idle_timeout` its source ends, which the
//!   coordinator closes as rule 12 says.
//!
//! A zero timeout is none. Logs carry run ids, sizes and times, never a
//! byte of the body.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody as _};
use bytes::BytesMut;
use futures::{Stream, StreamExt as _};
use lce_stream::LceError;
use lce_types::{Event, Limits};

use crate::error::ApiError;

/// Where logs go.
const TARGET: &str = "lce::gateway";

/// Reads a JSON request body whole: at most `limit` bytes (declared or
/// not), each chunk arriving within `idle` of the one before (zero: no
/// bound in time). The body is not parsed here.
pub(crate) async fn read_json(body: Body, limit: usize, idle: Duration) -> Result<Bytes, ApiError> {
    let limit_u64 = u64::try_from(limit).unwrap_or(u64::MAX);
    if body.size_hint().lower() > limit_u64 {
        tracing::info!(target: TARGET, max_bytes = limit, "request body too large: 413");
        return Err(ApiError::BodyTooLarge);
    }
    let mut data = body.into_data_stream();
    let mut buf = BytesMut::new();
    loop {
        let Some(next) = within(idle, data.next()).await else {
            tracing::info!(target: TARGET, idle_secs = idle.as_secs_f64(), "request body stopped arriving: 408");
            return Err(ApiError::BodyTimeout);
        };
        match next {
            None => return Ok(buf.freeze()),
            // The client's connection failed mid-body: nobody reads the
            // answer, which stays what it always was.
            Some(Err(_)) => return Err(ApiError::BodyTooLarge),
            Some(Ok(chunk)) => {
                if chunk.len() > limit.saturating_sub(buf.len()) {
                    tracing::info!(target: TARGET, max_bytes = limit, "request body too large: 413");
                    return Err(ApiError::BodyTooLarge);
                }
                buf.extend_from_slice(&chunk);
            }
        }
    }
}

/// `future`'s output, or `None` when it is not ready within `idle` (zero:
/// waits as long as it takes).
pub(crate) async fn within<F: Future>(idle: Duration, future: F) -> Option<F::Output> {
    if idle.is_zero() {
        Some(future.await)
    } else {
        tokio::time::timeout(idle, future).await.ok()
    }
}

/// The most raw bytes a pushed body may hold under `limits`: D19's bytes
/// per run (which the validator counts on the canonical JSON of the events
/// it sees) plus a `\r\n` per event it allows, so a run the coordinator
/// takes whole is never cut here; what the chain never counts (dropped
/// empty deltas, blank space) is bounded by it all the same.
pub(crate) fn max_push_bytes(limits: &Limits) -> u64 {
    limits
        .bytes_per_run
        .saturating_add(limits.events_per_run.saturating_mul(2))
}

/// The events of a pushed body, one per line (D8's 4 MiB line bound),
/// ending with an I/O error item once the body's raw bytes pass
/// [`max_push_bytes`] (the coordinator ends the run with
/// `run.error{harness_event_invalid}`, D8); nothing is read after it.
pub(crate) fn push_lines(
    body: Body,
    limits: &Limits,
) -> impl Stream<Item = Result<Event, LceError>> + Send + 'static {
    let max = max_push_bytes(limits);
    let data = body
        .into_data_stream()
        .scan(0u64, move |seen, chunk| {
            let items = match chunk {
                // Past the bound: the error was the last item.
                _ if *seen > max => None,
                Ok(mut chunk) => {
                    let len = u64::try_from(chunk.len()).unwrap_or(u64::MAX);
                    let room = max - *seen;
                    *seen = seen.saturating_add(len);
                    if len <= room {
                        Some(vec![Ok(chunk)])
                    } else {
                        // The bytes up to the bound, then the error.
                        tracing::info!(target: TARGET, max_bytes = max, "pushed body over the per-run bytes bound");
                        chunk.truncate(usize::try_from(room).unwrap_or(usize::MAX));
                        Some(vec![
                            Ok(chunk),
                            Err(std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                "pushed body over the per-run bytes bound (D19)",
                            )),
                        ])
                    }
                }
                Err(e) => Some(vec![Err(std::io::Error::other(e))]),
            };
            futures::future::ready(items)
        })
        .flat_map(futures::stream::iter);
    lce_stream::codec::read_event_lines(tokio_util::io::StreamReader::new(data))
}

pin_project_lite::pin_project! {
    /// A pushed run's lines that end (`None`) when the harness sends no
    /// line for `idle`: the coordinator then ends the run as a stream that
    /// closed without a terminal (rule 12, D9). The time counts from when
    /// the chain asked for a line and none was ready, so a slow log never
    /// counts against the harness.
    pub(crate) struct IdleEnd<S> {
        #[pin]
        inner: S,
        idle: Duration,
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
        armed: bool,
        done: bool,
        run_id: String,
    }
}

impl<S> IdleEnd<S> {
    /// `inner` ending after `idle` without a line (zero: never); `run_id`
    /// names the run in the log line that says so.
    pub(crate) fn new(inner: S, idle: Duration, run_id: String) -> Self {
        IdleEnd {
            inner,
            idle,
            timer: None,
            armed: false,
            done: false,
            run_id,
        }
    }
}

impl<S: Stream> Stream for IdleEnd<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        match this.inner.poll_next(cx) {
            Poll::Ready(Some(item)) => {
                *this.armed = false;
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                *this.done = true;
                Poll::Ready(None)
            }
            Poll::Pending if this.idle.is_zero() => Poll::Pending,
            Poll::Pending => {
                if !*this.armed {
                    let deadline = tokio::time::Instant::now() + *this.idle;
                    match this.timer {
                        Some(timer) => timer.as_mut().reset(deadline),
                        None => *this.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
                    }
                    *this.armed = true;
                }
                let fired = this
                    .timer
                    .as_mut()
                    .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
                if !fired {
                    return Poll::Pending;
                }
                tracing::info!(
                    target: TARGET,
                    run_id = %this.run_id,
                    idle_secs = this.idle.as_secs_f64(),
                    "the pushing harness sent no line for the ingest idle timeout: its run ends (rule 12)"
                );
                *this.done = true;
                Poll::Ready(None)
            }
        }
    }
}
