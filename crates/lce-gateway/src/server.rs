//! The hardened accept loop `lce serve` runs the gateway's router on (a
//! host that has its own server nests [`Gateway::router`](crate::Gateway::router)
//! instead): the limits that keep a server alive on an open network, and a
//! shutdown that ends every run properly.
//!
//! - A request header must arrive whole within `--header-timeout`, counted
//!   from when the connection opens and, on a kept-alive connection, from
//!   the end of the previous response; otherwise the connection is closed
//!   without an answer.
//! - A request body that stops arriving for `--body-idle-timeout` is cut:
//!   the request is answered 408 `{"error", "code": "body_timeout"}` and the
//!   connection closed. A body larger than [`MAX_BODY_BYTES`] is answered
//!   413 `{"error", "code": "body_too_large"}`.
//! - At most `--max-connections` connections are served at once: a permit is
//!   taken before `accept`, so beyond the limit new connections wait in the
//!   kernel's listen backlog until a served one closes.
//! - On a shutdown signal (`lce serve`: SIGTERM or SIGINT) the listener is closed at once, idle
//!   connections are closed, in-flight responses may finish for
//!   `--shutdown-grace`; then the shutdown hook is called (in `lce serve` it
//!   cancels every run, which the coordinator ends as
//!   `run.cancelled{shutdown}`, D11, and the encoders put on the wire),
//!   every connection is polled again so its response sees its run's end,
//!   and the connections get at most [`DRAIN`] to write their terminals. A
//!   second signal ends the grace period at once. Only connections are
//!   waited for: when none is open the hook is called and `serve_http`
//!   returns at once.
//!
//! Logs carry counts and peer addresses only, never request content.

use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use futures::{Stream, StreamExt as _};
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::error::ApiError;

/// The most a request body may hold: 16 MiB. A larger body is answered 413.
pub const MAX_BODY_BYTES: u64 = 16 * 1024 * 1024;

/// How long, after the shutdown hook, the connections may take to write
/// their runs' terminals before the server returns anyway.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Where logs go.
const TARGET: &str = "lce::serve";

/// Limits on what a client may hold open, and how the server stops
/// (`lce serve`'s "Server limits and shutdown" options).
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Time a client has to send a whole request header, counted from when
    /// the connection opens and, on a kept-alive connection, from the end
    /// of the previous response (so it also closes idle connections).
    pub header_timeout: Duration,
    /// Time a request body may stop arriving before it is cut (408).
    pub body_idle_timeout: Duration,
    /// Connections served at once (at least 1); beyond it new connections
    /// wait in the kernel's listen backlog.
    pub max_connections: u32,
    /// Time in-flight responses may take to finish after the signal.
    pub shutdown_grace: Duration,
}

impl Default for ServerLimits {
    /// 10 s, 30 s, 1024 connections, 20 s (`lce serve`'s defaults).
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(30),
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(20),
        }
    }
}

/// Where the server is in its life; every connection task watches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Accepting and serving.
    Serving,
    /// A signal came: finish the response in flight, then close.
    Stopping,
    /// The grace period is over and the runs were cancelled: poll again so
    /// the cancellation is seen and written.
    Ending,
}

/// One served connection.
type Conn = hyper::server::conn::http1::Connection<TokioIo<TcpStream>, TowerToHyperService<Router>>;

/// Serves `router` on `listener` until `signals` yields (a signal's name),
/// with `limits`.
///
/// HTTP/1.1 only. On the signal: stop accepting, let in-flight responses
/// finish for `limits.shutdown_grace` (a second signal ends it at once),
/// then call `on_grace_expired` (which
/// must end the remaining responses, e.g. cancel their runs), then wait at
/// most [`DRAIN`] for the connections to finish and return `Ok`. Errors only
/// when the connection loop cannot run; accept errors are logged
/// and retried.
pub async fn serve_http<S>(
    listener: TcpListener,
    router: Router,
    limits: &ServerLimits,
    mut signals: S,
    on_grace_expired: impl FnOnce() + Send + 'static,
) -> io::Result<()>
where
    S: Stream<Item = &'static str> + Unpin,
{
    let router = router
        .layer(axum::middleware::from_fn_with_state(
            limits.body_idle_timeout,
            guard_body,
        ))
        // The body's size is bounded by `guard_body` (with a JSON answer).
        .layer(DefaultBodyLimit::disable());
    let service = TowerToHyperService::new(router);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // At least one: a limit of 0 would never accept.
    let max = usize::try_from(limits.max_connections.max(1))
        .unwrap_or(usize::MAX)
        .min(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max));
    let open = |slots: &Semaphore| max.saturating_sub(slots.available_permits());
    let (phase, _) = watch::channel(Phase::Serving);

    let signal = loop {
        // A free slot first: beyond the limit, connections wait in the
        // kernel's backlog, not in this process.
        let permit = tokio::select! {
            biased;
            s = next_signal(&mut signals) => break s,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return Err(io::Error::other("the connection limit was closed")),
            },
        };
        let (stream, peer) = tokio::select! {
            biased;
            s = next_signal(&mut signals) => break s,
            r = listener.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait, then retry.
                    tracing::error!(target: TARGET, error = %e, open = open(&slots), "cannot accept a connection; retrying in 1 s");
                    drop(permit);
                    tokio::select! {
                        s = next_signal(&mut signals) => break s,
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    }
                }
            },
        };
        let conn = http.serve_connection(TokioIo::new(stream), service.clone());
        tokio::spawn(serve_connection(conn, phase.subscribe(), permit, peer));
    };
    drop(listener);

    tracing::info!(target: TARGET, signal, open = open(&slots), "stopping: no new connections, in-flight responses may finish");
    phase.send_replace(Phase::Stopping);
    // Resolves when every connection task has ended (each holds a receiver).
    let mut all_closed = pin!(phase.closed());
    let finished = tokio::select! {
        () = &mut all_closed => true,
        () = tokio::time::sleep(limits.shutdown_grace) => false,
        s = next_signal(&mut signals) => {
            tracing::info!(target: TARGET, signal = s, "second signal: ending the grace period");
            false
        }
    };
    if !finished {
        tracing::info!(target: TARGET, open = open(&slots), "grace period over: ending the runs still in flight");
    }
    on_grace_expired();
    if !finished {
        // Poll every connection again, so that each response body sees its
        // run's end even where the hook's wake-up reached another task (a
        // cancellation handle shared by several runs wakes only one).
        phase.send_replace(Phase::Ending);
        if tokio::time::timeout(DRAIN, &mut all_closed).await.is_err() {
            tracing::warn!(target: TARGET, open = open(&slots), "connections still open after the drain; closing them");
        }
    }
    tracing::info!(target: TARGET, "stopped");
    Ok(())
}

/// Drives one connection to its end, shutting it down gracefully when the
/// phase leaves `Serving`; the permit is its slot.
async fn serve_connection(
    conn: Conn,
    mut phase: watch::Receiver<Phase>,
    permit: OwnedSemaphorePermit,
    peer: SocketAddr,
) {
    let mut conn = pin!(conn);
    let mut graceful = false;
    let result = loop {
        if !graceful && *phase.borrow_and_update() != Phase::Serving {
            // Closes it now if idle; else after the response in flight.
            conn.as_mut().graceful_shutdown();
            graceful = true;
        }
        // Every phase change polls the connection again (`Ending`: so that
        // its response body sees the cancellation).
        tokio::select! {
            r = conn.as_mut() => break r,
            changed = phase.changed() => {
                if changed.is_err() {
                    break conn.as_mut().await;
                }
            }
        }
    };
    if let Err(e) = result {
        // hyper's messages are fixed texts, never request content.
        let reason = if e.is_timeout() {
            "header timeout"
        } else {
            "error"
        };
        tracing::debug!(target: TARGET, %peer, reason, error = %e, "connection closed");
    }
    drop(permit);
}

/// Accept errors that concern one connection only: skip it.
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// The next signal's name; none once `signals` ends.
async fn next_signal<S: Stream<Item = &'static str> + Unpin>(signals: &mut S) -> &'static str {
    match signals.next().await {
        Some(name) => name,
        None => std::future::pending().await,
    }
}

/// Why a request body was cut (`CUT_NONE`: it was not).
const CUT_NONE: u8 = 0;
const CUT_IDLE: u8 = 1;
const CUT_TOO_LARGE: u8 = 2;

/// Middleware: the request body is bounded in size and must keep arriving;
/// when it is cut the handler's answer (axum's 400 "Failed to buffer the
/// request body") is replaced by a 408 or 413 JSON error.
async fn guard_body(State(idle): State<Duration>, req: Request, next: Next) -> Response {
    if req.body().size_hint().lower() > MAX_BODY_BYTES {
        return cut_response(CUT_TOO_LARGE, idle);
    }
    let cut = Arc::new(AtomicU8::new(CUT_NONE));
    let req = req.map(|body| Body::new(GuardedBody::new(body, idle, cut.clone())));
    let response = next.run(req).await;
    match cut.load(Ordering::Acquire) {
        CUT_NONE => response,
        why => cut_response(why, idle),
    }
}

/// The JSON answer to a cut body; the connection is closed after it (the
/// rest of the body is never read).
fn cut_response(why: u8, idle: Duration) -> Response {
    if why == CUT_IDLE {
        tracing::info!(target: TARGET, idle_secs = idle.as_secs_f64(), "request body stopped arriving: 408");
        ApiError::BodyTimeout.into_response()
    } else {
        tracing::info!(target: TARGET, max_bytes = MAX_BODY_BYTES, "request body too large: 413");
        ApiError::BodyTooLarge.into_response()
    }
}

pin_project_lite::pin_project! {
    /// A request body that fails when no frame arrives for `idle`, or when
    /// it grows past [`MAX_BODY_BYTES`]; `cut` says which.
    struct GuardedBody {
        #[pin]
        inner: Body,
        idle: Duration,
        timer: Option<Pin<Box<tokio::time::Sleep>>>,
        // The timer counts from the last frame (reset lazily on `Pending`).
        armed: bool,
        seen: u64,
        cut: Arc<AtomicU8>,
        done: bool,
    }
}

impl GuardedBody {
    fn new(inner: Body, idle: Duration, cut: Arc<AtomicU8>) -> Self {
        GuardedBody {
            inner,
            idle,
            timer: None,
            armed: false,
            seen: 0,
            cut,
            done: false,
        }
    }
}

impl HttpBody for GuardedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        let why = match this.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                *this.armed = false;
                if let Some(data) = frame.data_ref() {
                    let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
                    *this.seen = this.seen.saturating_add(len);
                }
                if *this.seen <= MAX_BODY_BYTES {
                    return Poll::Ready(Some(Ok(frame)));
                }
                CUT_TOO_LARGE
            }
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => {
                *this.done = true;
                return Poll::Ready(None);
            }
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
                CUT_IDLE
            }
        };
        *this.done = true;
        this.cut.store(why, Ordering::Release);
        let message = if why == CUT_IDLE {
            "request body idle timeout"
        } else {
            "request body too large"
        };
        Poll::Ready(Some(Err(message.into())))
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
