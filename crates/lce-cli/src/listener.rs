//! `lce serve`'s accept loop: the limits that keep a server alive on an open
//! network, and a shutdown that ends every run properly.
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
//! - On SIGTERM or SIGINT (Ctrl-C) the listener is closed at once, idle
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
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// The most a request body may hold: 16 MiB. A larger body is answered 413.
pub(crate) const MAX_BODY_BYTES: u64 = 16 * 1024 * 1024;

/// How long, after the shutdown hook, the connections may take to write
/// their runs' terminals before the server returns anyway.
pub(crate) const DRAIN: Duration = Duration::from_secs(5);

/// The longest any of the time limits may be set to: a day.
const MAX_SECS: f64 = 86_400.0;

/// Where logs go.
const TARGET: &str = "lce::serve";

/// Limits on what a client may hold open, and how the server stops.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Server limits and shutdown")]
pub(crate) struct ServerLimits {
    /// Seconds a client has to send a whole request header.
    ///
    /// Counted from when the connection opens and, on a kept-alive
    /// connection, from the end of the previous response (so it also closes
    /// idle connections). When it runs out the connection is closed without
    /// an answer. More than 0, at most 86400.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_timeout)]
    pub(crate) header_timeout: Duration,
    /// Seconds a request body may stop arriving before it is cut.
    ///
    /// The request is answered 408 with a JSON error (code `body_timeout`)
    /// and the connection is closed. A body of more than 16 MiB is answered
    /// 413 (code `body_too_large`). More than 0, at most 86400.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_timeout)]
    pub(crate) body_idle_timeout: Duration,
    /// Connections served at once.
    ///
    /// Beyond N, new connections are not accepted: they wait in the kernel's
    /// listen backlog until a served connection closes. At least 1.
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections: u32,
    /// Seconds in-flight responses may take to finish after SIGTERM/Ctrl-C.
    ///
    /// On the signal the server stops accepting at once and closes
    /// kept-alive connections between requests. Then the runs still going
    /// are ended: with the in-memory run log (the default) as
    /// `run.cancelled` (reason `shutdown`, audited): `agui-v1` streams end
    /// with `RUN_FINISHED` (outcome `cancelled`), `custom` and `agui`
    /// streams after their last whole frame. The server exits 0 as soon as
    /// the connections have closed, at most 5 s after the grace. A second
    /// signal ends the grace period at once. At least 0, at most 86400.
    #[arg(long, value_name = "SECS", default_value = "20", value_parser = parse_grace)]
    pub(crate) shutdown_grace: Duration,
}

fn parse_secs(s: &str, zero_ok: bool) -> Option<Duration> {
    let secs = s.parse::<f64>().ok()?;
    let ok = secs.is_finite() && secs <= MAX_SECS && (secs > 0.0 || (zero_ok && secs == 0.0));
    ok.then(|| Duration::try_from_secs_f64(secs).ok()).flatten()
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    parse_secs(s, false).ok_or_else(|| "must be a number of seconds > 0 and <= 86400".to_owned())
}

fn parse_grace(s: &str) -> Result<Duration, String> {
    parse_secs(s, true).ok_or_else(|| "must be a number of seconds >= 0 and <= 86400".to_owned())
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

/// Serves `router` on `listener` until SIGTERM or SIGINT, with `limits`.
///
/// HTTP/1.1 only. On the signal: stop accepting, let in-flight responses
/// finish for `limits.shutdown_grace`, then call `on_grace_expired` (which
/// must end the remaining responses, e.g. cancel their runs), then wait at
/// most [`DRAIN`] for the connections to finish and return `Ok`. Errors only
/// when the connection loop cannot run; accept errors are logged
/// and retried.
pub(crate) async fn serve_http(
    listener: TcpListener,
    router: Router,
    limits: &ServerLimits,
    mut signals: Signals,
    on_grace_expired: impl FnOnce() + Send + 'static,
) -> io::Result<()> {
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
    let max = usize::try_from(limits.max_connections)
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
            s = signals.recv() => break s,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return Err(io::Error::other("the connection limit was closed")),
            },
        };
        let (stream, peer) = tokio::select! {
            biased;
            s = signals.recv() => break s,
            r = listener.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait, then retry.
                    tracing::error!(target: TARGET, error = %e, open = open(&slots), "cannot accept a connection; retrying in 1 s");
                    drop(permit);
                    tokio::select! {
                        s = signals.recv() => break s,
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
        s = signals.recv() => {
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

/// SIGTERM and SIGINT (Ctrl-C), installed up front: before the server
/// says it listens, so that no signal finds the default action.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers (fails only if the OS refuses).
    pub(crate) fn new() -> io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// The next signal's name.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = self.term.recv() => "SIGTERM",
                Some(()) = self.int.recv() => "SIGINT",
                // Both streams ended (the runtime is going away): no signal.
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                Err(_) => std::future::pending().await,
            }
        }
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
    let mut response = if why == CUT_IDLE {
        tracing::info!(target: TARGET, idle_secs = idle.as_secs_f64(), "request body stopped arriving: 408");
        crate::serve::bad_request(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            "The request body stopped arriving.",
        )
    } else {
        tracing::info!(target: TARGET, max_bytes = MAX_BODY_BYTES, "request body too large: 413");
        crate::serve::bad_request(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "The request body is larger than 16 MiB.",
        )
    };
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
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
