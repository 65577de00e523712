//! The hardened accept loop `lce serve` runs the gateway's router on (a
//! host that has its own server nests [`Gateway::router`](crate::Gateway::router)
//! instead): the limits that keep a server alive on an open network, and a
//! shutdown that ends every run properly.
//!
//! - A request header must arrive whole within `--header-timeout`, counted
//!   from when the connection opens and, on a kept-alive connection, from
//!   the end of the previous response; otherwise the connection is closed
//!   without an answer.
//! - Request bodies are bounded by the router itself (so a host's own
//!   server gets the same): JSON bodies by `--max-request-bytes` and
//!   `--body-idle-timeout`, pushed runs by D19's bytes per run and
//!   `--ingest-idle-timeout` (see `GatewayBuilder`).
//! - At most `--max-connections` connections are served at once: a permit is
//!   taken before `accept`, so beyond the limit new connections wait in the
//!   kernel's listen backlog until a served one closes.
//! - At most `--max-connections-per-ip` of them come from one address: a
//!   connection from an address that already holds that many is closed at
//!   once, unanswered (refusals are logged as counts, at most once a
//!   second).
//! - A connection whose socket accepts no byte for `--write-timeout` while
//!   the server has bytes for it is closed (a reader that stopped reading):
//!   its run, and the run's other readers, go on.
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
//! Logs carry counts, times and (at debug level) peer addresses only, never
//! request content.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::middleware::AddExtension;
use futures::{Stream, StreamExt as _};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// How long, after the shutdown hook, the connections may take to write
/// their runs' terminals before the server returns anyway.
pub const DRAIN: Duration = Duration::from_secs(5);

/// Where logs go.
const TARGET: &str = "lce::serve";

/// The shortest time between two log lines about refused connections.
const REFUSAL_REPORT_EVERY: Duration = Duration::from_secs(1);

/// Limits on what a client may hold open, and how the server stops
/// (`lce serve`'s "Server limits and shutdown" options). Request bodies are
/// bounded by the gateway's router itself (`GatewayBuilder::
/// body_idle_timeout`, `ingest_idle_timeout`, `max_request_bytes`).
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Time a client has to send a whole request header, counted from when
    /// the connection opens and, on a kept-alive connection, from the end
    /// of the previous response (so it also closes idle connections).
    pub header_timeout: Duration,
    /// Connections served at once (at least 1); beyond it new connections
    /// wait in the kernel's listen backlog.
    pub max_connections: u32,
    /// Connections served at once from one IP address (at least 1): a
    /// connection from an address that holds this many already is closed
    /// at once, unanswered.
    pub max_connections_per_ip: u32,
    /// Time a connection's socket may accept no byte while the server has
    /// bytes to write to it; then the connection is closed (zero: never).
    pub write_timeout: Duration,
    /// Time in-flight responses may take to finish after the signal.
    pub shutdown_grace: Duration,
}

impl Default for ServerLimits {
    /// 10 s, 1024 connections, 256 per address, 30 s, 20 s (`lce serve`'s
    /// defaults).
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            max_connections: 1024,
            max_connections_per_ip: 256,
            write_timeout: Duration::from_secs(30),
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
type Conn = hyper::server::conn::http1::Connection<
    TokioIo<TimedWrites<TcpStream>>,
    TowerToHyperService<AddExtension<Router, ConnectInfo<SocketAddr>>>,
>;

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
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // At least one: a limit of 0 would never accept.
    let max = usize::try_from(limits.max_connections.max(1))
        .unwrap_or(usize::MAX)
        .min(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max));
    let open = |slots: &Semaphore| max.saturating_sub(slots.available_permits());
    let per_address = Arc::new(PerAddress::new(limits.max_connections_per_ip));
    let mut refusals = Refusals::new();
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
        let Some(place) = per_address.take(peer.ip()) else {
            // Closed at once, unanswered: the address holds its share.
            drop(stream);
            drop(permit);
            refusals.count(per_address.max);
            continue;
        };
        let timed_out = Arc::new(AtomicBool::new(false));
        let io = TimedWrites::new(stream, limits.write_timeout, timed_out.clone());
        // The peer's address for the routes that need it (the inspector's
        // loopback gate): `ConnectInfo`, as axum's own `serve` gives it.
        let service = TowerToHyperService::new(tower::Layer::layer(
            &axum::Extension(ConnectInfo(peer)),
            router.clone(),
        ));
        let conn = http.serve_connection(TokioIo::new(io), service);
        let held = Held {
            _permit: permit,
            _place: place,
            timed_out,
            write_timeout: limits.write_timeout,
        };
        tokio::spawn(serve_connection(conn, phase.subscribe(), held, peer));
    };
    drop(listener);
    refusals.flush(per_address.max);

    tracing::info!(target: TARGET, signal, open = open(&slots), "stopping: no new connections, in-flight responses may finish");
    wind_down(
        &phase,
        &mut signals,
        limits.shutdown_grace,
        || open(&slots),
        on_grace_expired,
    )
    .await;
    Ok(())
}

/// After the signal: lets in-flight responses finish for `grace` (a second
/// signal ends it), calls `on_grace_expired`, then gives the connections at
/// most [`DRAIN`] to write their runs' ends.
async fn wind_down<S>(
    phase: &watch::Sender<Phase>,
    signals: &mut S,
    grace: Duration,
    open: impl Fn() -> usize,
    on_grace_expired: impl FnOnce(),
) where
    S: Stream<Item = &'static str> + Unpin,
{
    phase.send_replace(Phase::Stopping);
    // Resolves when every connection task has ended (each holds a receiver).
    let mut all_closed = pin!(phase.closed());
    let finished = tokio::select! {
        () = &mut all_closed => true,
        () = tokio::time::sleep(grace) => false,
        s = next_signal(signals) => {
            tracing::info!(target: TARGET, signal = s, "second signal: ending the grace period");
            false
        }
    };
    if !finished {
        tracing::info!(target: TARGET, open = open(), "grace period over: ending the runs still in flight");
    }
    on_grace_expired();
    if !finished {
        // Poll every connection again, so that each response body sees its
        // run's end even where the hook's wake-up reached another task (a
        // cancellation handle shared by several runs wakes only one).
        phase.send_replace(Phase::Ending);
        if tokio::time::timeout(DRAIN, &mut all_closed).await.is_err() {
            tracing::warn!(target: TARGET, open = open(), "connections still open after the drain; closing them");
        }
    }
    tracing::info!(target: TARGET, "stopped");
}

/// What a served connection holds until it closes: its slot among the
/// `max_connections`, its place among its address's, and whether its
/// writes timed out.
struct Held {
    _permit: OwnedSemaphorePermit,
    _place: AddressPlace,
    timed_out: Arc<AtomicBool>,
    write_timeout: Duration,
}

/// Drives one connection to its end, shutting it down gracefully when the
/// phase leaves `Serving`; `held` is given back when it closes.
async fn serve_connection(
    conn: Conn,
    mut phase: watch::Receiver<Phase>,
    held: Held,
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
    if held.timed_out.load(Ordering::Acquire) {
        crate::metrics::connection_closed("write_timeout");
        // No address: the refusal of a slow reader says nothing of it.
        tracing::info!(
            target: TARGET,
            write_timeout_secs = held.write_timeout.as_secs_f64(),
            "write timeout: the client accepted no byte in time; connection closed"
        );
    } else if let Err(e) = result {
        // hyper's messages are fixed texts, never request content.
        let reason = if e.is_timeout() {
            "header timeout"
        } else {
            "error"
        };
        tracing::debug!(target: TARGET, %peer, reason, error = %e, "connection closed");
    }
    drop(held);
}

/// How many connections each address holds, bounded by `max` per address.
/// Entries leave the table when their count falls to zero, so it holds at
/// most one entry per open connection.
struct PerAddress {
    max: u32,
    open: Mutex<HashMap<IpAddr, u32>>,
}

impl PerAddress {
    fn new(max: u32) -> Self {
        PerAddress {
            // At least one: a limit of 0 would serve nobody.
            max: max.max(1),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A place for one more connection from `ip`, or `None` when it holds
    /// `max` already. An IPv4 address mapped into IPv6 counts as itself.
    fn take(self: &Arc<Self>, ip: IpAddr) -> Option<AddressPlace> {
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let held = open.entry(ip).or_insert(0);
        if *held >= self.max {
            return None;
        }
        *held += 1;
        Some(AddressPlace {
            table: self.clone(),
            ip,
        })
    }
}

/// One connection's place among its address's; given back on drop.
struct AddressPlace {
    table: Arc<PerAddress>,
    ip: IpAddr,
}

impl Drop for AddressPlace {
    fn drop(&mut self) {
        let mut open = self
            .table
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.ip) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Connections refused for their address, logged as a count at most once
/// every [`REFUSAL_REPORT_EVERY`] (a flood from one address cannot flood
/// the log).
struct Refusals {
    unreported: u64,
    last_report: Option<Instant>,
}

impl Refusals {
    fn new() -> Self {
        Refusals {
            unreported: 0,
            last_report: None,
        }
    }

    fn count(&mut self, max_per_ip: u32) {
        crate::metrics::connection_closed("per_ip_limit");
        self.unreported = self.unreported.saturating_add(1);
        let now = Instant::now();
        if self
            .last_report
            .is_some_and(|last| now.duration_since(last) < REFUSAL_REPORT_EVERY)
        {
            return;
        }
        self.flush(max_per_ip);
        self.last_report = Some(now);
    }

    /// Logs the refusals not yet reported (those within the last second
    /// of a flood, when the listener closes), if any.
    fn flush(&mut self, max_per_ip: u32) {
        if self.unreported == 0 {
            return;
        }
        tracing::warn!(
            target: TARGET,
            refused = self.unreported,
            max_per_ip,
            "connections closed at once: their address holds --max-connections-per-ip already"
        );
        self.unreported = 0;
    }
}

pin_project_lite::pin_project! {
    /// A connection's socket whose writes fail with `TimedOut` once they
    /// have been pending for `limit` (counted from the first `Pending`
    /// since the last byte written): a client that stops reading cannot
    /// hold the connection, and what the server buffers for it, forever.
    /// Reads are untouched. `timed_out` says that it happened.
    struct TimedWrites<IO> {
        #[pin]
        io: IO,
        clock: StallClock,
    }
}

impl<IO> TimedWrites<IO> {
    fn new(io: IO, limit: Duration, timed_out: Arc<AtomicBool>) -> Self {
        TimedWrites {
            io,
            clock: StallClock {
                limit,
                timer: None,
                armed: false,
                timed_out,
            },
        }
    }
}

/// How long a connection's writes have been stalled: armed at the first
/// `Pending` since the last progress, failing the write once `limit` has
/// passed (and saying so in `timed_out`).
struct StallClock {
    limit: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    armed: bool,
    timed_out: Arc<AtomicBool>,
}

impl StallClock {
    /// A write that returned `poll`: progress disarms the timer; `Pending`
    /// arms it (if it is not armed) and fails once it fires.
    fn timed<T>(&mut self, poll: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.armed = false;
            return poll;
        }
        if self.limit.is_zero() {
            return Poll::Pending;
        }
        if !self.armed {
            let deadline = tokio::time::Instant::now() + self.limit;
            match &mut self.timer {
                Some(timer) => timer.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        let fired = self
            .timer
            .as_mut()
            .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
        if !fired {
            return Poll::Pending;
        }
        self.timed_out.store(true, Ordering::Release);
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "write timeout: the client accepted no byte",
        )))
    }
}

impl<IO: AsyncRead> AsyncRead for TimedWrites<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite> AsyncWrite for TimedWrites<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        this.clock.timed(this.io.poll_write(cx, buf), cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        this.clock.timed(this.io.poll_write_vectored(cx, bufs), cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        this.clock.timed(this.io.poll_flush(cx), cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.project();
        this.clock.timed(this.io.poll_shutdown(cx), cx)
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn writes_that_stay_pending_fail_after_the_limit_and_progress_restarts_it() {
        let (near, mut far) = tokio::io::duplex(16);
        let flag = Arc::new(AtomicBool::new(false));
        let mut io = TimedWrites::new(near, Duration::from_secs(30), flag.clone());
        // The peer reads now and then: every write makes progress in time.
        for _ in 0..4 {
            io.write_all(&[7; 16]).await.unwrap();
            tokio::time::sleep(Duration::from_secs(20)).await;
            let mut buf = [0; 16];
            far.read_exact(&mut buf).await.unwrap();
        }
        assert!(!flag.load(Ordering::Acquire));
        // The peer stops reading: the buffer fills, the write times out.
        let started = tokio::time::Instant::now();
        let e = io.write_all(&[7; 64]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_secs(30));
        assert!(flag.load(Ordering::Acquire));
    }

    #[test]
    fn an_address_holds_at_most_its_share_and_gets_it_back() {
        let table = Arc::new(PerAddress::new(2));
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = table.take(a).unwrap();
        let _second = table.take(mapped).unwrap();
        assert!(table.take(a).is_none(), "a third from the same address");
        let other = table.take(b).unwrap();
        drop(first);
        let _again = table.take(a).unwrap();
        drop(other);
        let open = table.open.lock().unwrap();
        assert_eq!(open.get(&a), Some(&2));
        assert_eq!(open.get(&b), None, "an address with none open is forgotten");
    }
}
