//! The connection to the engine and the bounded retry every operation goes
//! through.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionManagerConfig;
use redis::{ErrorKind, RedisError, RedisResult, RetryMethod, ServerErrorKind, Value};
use tokio::time::Instant;

use crate::topology::{Conn, Passwords, Source, Topology};

/// Why an operation did not happen (the engine's own words are dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The engine refused, or the connection failed and did not come back
    /// in time.
    Failed,
    /// The operation's time bound passed.
    TimedOut,
}

/// How many multiplexed connections carry the commands of one handle
/// (round robin).
const CONNECTIONS: usize = 4;

/// How many requests one connection carries at once; the others wait their
/// turn in the client (bursts of thousands of requests on one connection
/// are where the client's driver was seen to wedge).
const IN_FLIGHT_PER_CONNECTION: usize = 128;

/// The longest one attempt may wait for its answer before its connection
/// is taken for wedged and replaced (the operation's own bound still
/// applies). The engine answers the commands lce sends in milliseconds.
const ATTEMPT_BOUND: Duration = Duration::from_secs(2);

/// A small set of shared, self-reconnecting connections (multiplexed
/// sockets) and the bound of one operation.
///
/// Each connection is a `ConnectionManager`, which reconnects by itself
/// when the engine drops it (to the same address: behind Sentinel, a
/// connection that fails, or finds a replica where the primary was, is
/// replaced by one to the primary Sentinel names now), or a Cluster
/// connection, which follows the slot map by itself. One that stops answering while its socket
/// stays open (seen here with about 2,000 commands in flight on one
/// connection: the client's driver parked with requests queued and nothing
/// written, until every operation timed out) is replaced by the first
/// attempt that waits [`ATTEMPT_BOUND`] on it; the attempt is then tried
/// again, as after a dropped connection.
#[derive(Clone)]
pub(crate) struct Engine {
    pub(crate) source: Arc<Source>,
    pub(crate) topology: Arc<Topology>,
    conns: Arc<[Slot]>,
    next: Arc<AtomicUsize>,
    config: ConnectionManagerConfig,
    pub(crate) timeout: Duration,
    /// How much longer than [`ATTEMPT_BOUND`] an attempt that ends with
    /// `WAIT` may take (the replica timeout).
    waits: Duration,
}

/// One connection of the set and how many times it was replaced.
struct Slot {
    current: Mutex<(u64, Conn)>,
    /// Held while a replacement connects, so one wedge is replaced once.
    replacing: tokio::sync::Mutex<()>,
}

impl Engine {
    /// Connects to the engine `url` names (see [`Topology`]),
    /// authenticating with `passwords` when given (the data nodes' replaces
    /// one the url holds); the first connections must succeed within
    /// `timeout`.
    pub(crate) async fn connect(
        url: &str,
        passwords: Passwords<'_>,
        timeout: Duration,
        waits: Duration,
    ) -> Result<Engine, Failure> {
        let topology = Topology::parse(url, passwords).map_err(|e| {
            tracing::warn!(error = %e, "redis: the url was not accepted");
            Failure::Failed
        })?;
        let source = Source::new(&topology, ATTEMPT_BOUND.min(timeout)).map_err(|e| {
            tracing::warn!(kind = ?e.kind(), "redis: the url was not accepted");
            Failure::Failed
        })?;
        // Reconnection after a dropped connection: the manager swaps in a
        // new connection in the background, trying 6 times with growing
        // random pauses of at most 1 s; a command issued meanwhile waits
        // for it.
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(ATTEMPT_BOUND.min(timeout) + waits))
            .set_connection_timeout(Some(timeout))
            .set_max_delay(Duration::from_secs(1))
            .set_concurrency_limit(IN_FLIGHT_PER_CONNECTION);
        let mut conns = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let conn = connect(&source, &config, timeout).await?;
            conns.push(Slot {
                current: Mutex::new((0, conn)),
                replacing: tokio::sync::Mutex::new(()),
            });
        }
        Ok(Engine {
            source: Arc::new(source),
            topology: Arc::new(topology),
            conns: conns.into(),
            next: Arc::new(AtomicUsize::new(0)),
            config,
            timeout,
            waits,
        })
    }

    /// The next connection of the set: its index, generation and handle.
    fn pick(&self) -> Option<(usize, u64, Conn)> {
        let k = self.next.fetch_add(1, Ordering::Relaxed) % self.conns.len();
        let current = self.conns[k].current.lock().ok()?;
        Some((k, current.0, current.1.clone()))
    }

    /// Whether a failed attempt's connection must be replaced, not only
    /// tried again: it found a replica or a moved slot, or (behind
    /// Sentinel) it failed, and its own reconnection would go back to the
    /// address where the primary was.
    fn moved(&self, e: &RedisError) -> bool {
        redirected(e) || matches!(*self.source, Source::Sentinel(_))
    }

    /// Replaces connection `k` if it is still generation `generation` (an
    /// attempt on it got no answer in time); logged, never returned: the
    /// next attempt uses whatever connection is there.
    async fn replace(&self, k: usize, generation: u64) {
        let slot = &self.conns[k];
        let _replacing = slot.replacing.lock().await;
        if slot.current.lock().map(|c| c.0).ok() != Some(generation) {
            return;
        }
        match connect(&self.source, &self.config, self.timeout).await {
            Ok(conn) => {
                if let Ok(mut current) = slot.current.lock() {
                    *current = (generation + 1, conn);
                }
                tracing::warn!(connection = k, "redis: replaced a connection");
            }
            Err(_) => tracing::warn!(
                connection = k,
                "redis: a connection was to be replaced and no new one could be made"
            ),
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or the time bound
    /// passes. `attempt(retry)` gets a fresh handle on a shared connection;
    /// `retry` is true from the second attempt on, which only follows a
    /// failure of the connection or an attempt left unanswered (the earlier
    /// attempt may or may not have reached the engine).
    pub(crate) async fn attempts<T, F, Fut>(
        &self,
        op: &'static str,
        mut attempt: F,
    ) -> Result<T, Failure>
    where
        F: FnMut(Conn, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let deadline = Instant::now() + self.timeout;
        let mut pause = Duration::from_millis(20);
        let mut retry = false;
        loop {
            let Some((k, generation, conn)) = self.pick() else {
                return Err(Failure::Failed);
            };
            let bound = deadline.min(Instant::now() + ATTEMPT_BOUND + self.waits);
            let outcome = tokio::time::timeout_at(bound, attempt(conn, retry)).await;
            match outcome {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if transient(&e) && Instant::now() + pause < deadline => {
                    if e.is_timeout() || self.moved(&e) {
                        self.replace(k, generation).await;
                    }
                    tracing::debug!(op, kind = ?e.kind(), "redis: trying again after a connection failure");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                    retry = true;
                }
                Ok(Err(e)) => {
                    tracing::warn!(op, kind = ?e.kind(), "redis: the operation failed");
                    return Err(Failure::Failed);
                }
                Err(_) if Instant::now() + pause < deadline => {
                    self.replace(k, generation).await;
                    tracing::debug!(
                        op,
                        "redis: trying again after an attempt got no answer in time"
                    );
                    retry = true;
                }
                Err(_) => {
                    tracing::warn!(op, "redis: the operation did not finish in time");
                    return Err(Failure::TimedOut);
                }
            }
        }
    }

    /// Runs one command (idempotent: it may be sent again).
    pub(crate) async fn query(&self, op: &'static str, cmd: &redis::Cmd) -> Result<Value, Failure> {
        self.attempts(
            op,
            |mut conn, _| async move { cmd.query_async(&mut conn).await },
        )
        .await
    }

    /// Runs the commands `build(pipe, retry)` adds to `pipe` as one
    /// transaction (`MULTI` ...
    /// `EXEC`), and answers each command's reply in order. `retry` is as in
    /// [`Engine::attempts`]. A command that fails inside the transaction
    /// fails the whole call (the engine ran the others: a transaction is
    /// not rolled back), so the commands are ones that do not fail on
    /// their own, and scripts are sent whole (`EVAL`): an `EVALSHA` that met
    /// `NOSCRIPT` would leave the rest of the transaction to run without
    /// it.
    ///
    /// With `replicas` above 0, `WAIT replicas <ms>` follows `EXEC` in the
    /// same write on the same connection, so it covers this transaction's
    /// writes; an attempt that fewer replicas confirm in time is tried
    /// again (as one whose answer was lost: `retry` is true).
    pub(crate) async fn transaction<F>(
        &self,
        op: &'static str,
        replicas: u32,
        build: F,
    ) -> Result<Vec<Value>, Failure>
    where
        F: Fn(&mut redis::Pipeline, bool),
    {
        let wait_ms = millis(self.waits);
        self.attempts(op, |mut conn, retry| {
            // The commands go straight into the pipeline between `MULTI`
            // and `EXEC` (no copy of each).
            let mut pipe = redis::pipe();
            pipe.cmd("MULTI");
            build(&mut pipe, retry);
            pipe.cmd("EXEC");
            if replicas > 0 {
                pipe.cmd("WAIT").arg(replicas).arg(wait_ms);
            }
            async move {
                let mut replies: Vec<Value> = pipe.query_async(&mut conn).await?;
                if replicas > 0 {
                    let confirmed = replies.pop().as_ref().and_then(int).unwrap_or(0);
                    if confirmed < i64::from(replicas) {
                        return Err(RedisError::from((
                            ErrorKind::Server(ServerErrorKind::TryAgain),
                            "fewer replicas confirmed the write than required",
                        )));
                    }
                }
                match replies.pop() {
                    Some(Value::Array(results)) => Ok(results),
                    _ => Err(RedisError::from((
                        ErrorKind::Server(ServerErrorKind::ExecAbort),
                        "the transaction did not run",
                    ))),
                }
            }
        })
        .await
    }

    /// Runs a script with `keys` and `args`; with `retry_arg`, one more
    /// argument: `1` on an attempt that follows a lost answer, else `0`.
    ///
    /// `EVALSHA` first; on `NOSCRIPT` (the engine restarted, or its scripts
    /// were flushed), `EVAL` with the code: one round trip, which caches it
    /// again.
    pub(crate) async fn eval(
        &self,
        op: &'static str,
        script: &Lua,
        keys: &[&str],
        args: &[&str],
        retry_arg: bool,
    ) -> Result<Value, Failure> {
        self.attempts(op, |mut conn, retry| {
            let retry = retry_arg.then_some(retry);
            let evalsha = script_call("EVALSHA", &script.hash, keys, args, retry);
            let eval = script_call("EVAL", script.code, keys, args, retry);
            async move {
                match evalsha.query_async(&mut conn).await {
                    Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                        eval.query_async(&mut conn).await
                    }
                    other => other,
                }
            }
        })
        .await
    }

    /// Runs the commands of `pipe` (not a transaction), each reply in
    /// order; tried again as [`Engine::attempts`] says, so the commands are
    /// ones that may be sent twice.
    pub(crate) async fn pipeline(
        &self,
        op: &'static str,
        pipe: &redis::Pipeline,
    ) -> Result<Vec<Value>, Failure> {
        self.attempts(op, |mut conn, _| async move {
            pipe.query_async(&mut conn).await
        })
        .await
    }

    /// [`Engine::eval`], and with `replicas` above 0 the script's writes
    /// confirmed by that many replicas (`WAIT`, in one transaction with
    /// the script sent whole), so that a failover keeps them: a run's
    /// creation and a takeover's claim, which the entries that follow rely
    /// on.
    pub(crate) async fn eval_confirmed(
        &self,
        op: &'static str,
        script: &Lua,
        keys: &[&str],
        args: &[&str],
        retry_arg: bool,
        replicas: u32,
    ) -> Result<Value, Failure> {
        if replicas == 0 {
            return self.eval(op, script, keys, args, retry_arg).await;
        }
        let replies = self
            .transaction(op, replicas, |pipe, retry| {
                let retry = retry_arg.then_some(retry);
                pipe.add_command(script_call("EVAL", script.code, keys, args, retry));
            })
            .await?;
        replies.into_iter().next().ok_or(Failure::Failed)
    }
}

/// `EVAL` or `EVALSHA` of `body` (the code or its hash) with `keys` and
/// `args`, and with `retry` one more argument: `1` on an attempt that
/// follows a lost answer, else `0`.
fn script_call(
    name: &str,
    body: &str,
    keys: &[&str],
    args: &[&str],
    retry: Option<bool>,
) -> redis::Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg(body).arg(keys.len()).arg(keys).arg(args);
    if let Some(retry) = retry {
        cmd.arg(if retry { "1" } else { "0" });
    }
    cmd
}

/// A Lua script: its code and its SHA-1 (the name `EVALSHA` calls it by).
pub(crate) struct Lua {
    pub(crate) code: &'static str,
    hash: String,
}

impl Lua {
    pub(crate) fn new(code: &'static str) -> Self {
        Lua {
            code,
            hash: redis::Script::new(code).get_hash().to_owned(),
        }
    }
}

/// Whether an error is the connection's or the topology's (worth a new
/// attempt once the manager has reconnected, Sentinel has named the new
/// primary or the Cluster's slot map is read again) rather than the
/// engine's answer.
pub(crate) fn transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || redirected(e)
        || matches!(
            e.retry_method(),
            RetryMethod::Reconnect | RetryMethod::RetryImmediately | RetryMethod::WaitAndRetry
        )
}

/// Whether the error says the node is not (or no longer) where the write
/// goes: a replica (`READONLY`, or `WAIT` refused by a replica, after a
/// failover), a slot served elsewhere (`MOVED`, `ASK`), a transaction
/// aborted, or a pipeline that failed for one of these.
fn redirected(e: &RedisError) -> bool {
    let moved = |kind: Option<ServerErrorKind>| {
        matches!(
            kind,
            Some(
                ServerErrorKind::ReadOnly
                    | ServerErrorKind::Moved
                    | ServerErrorKind::Ask
                    | ServerErrorKind::ExecAbort
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
            )
        )
    };
    matches!(
        e.retry_method(),
        RetryMethod::RefreshSlotsAndRetry | RetryMethod::MovedRedirect | RetryMethod::AskRedirect
    ) || e.kind() == ErrorKind::Server(ServerErrorKind::ExecAbort)
        || e.clone().into_server_errors().is_some_and(|errors| {
            errors.iter().any(|(_, error)| {
                moved(error.kind())
                    || (error.code() == "ERR"
                        && error
                            .details()
                            .is_some_and(|d| d.contains("with replica instances")))
            })
        })
}

/// A reply's bytes, when it is a string.
pub(crate) fn text(value: &Value) -> Option<&[u8]> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        Value::SimpleString(s) => Some(s.as_bytes()),
        Value::Okay => Some(b"OK"),
        _ => None,
    }
}

/// A reply's integer (an integer reply, or a string of digits).
pub(crate) fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        other => std::str::from_utf8(text(other)?).ok()?.parse().ok(),
    }
}

/// A duration in whole milliseconds, rounded up, at least 1 (`PX 0` and
/// `BLOCK 0` mean something else) and at most `i64::MAX`.
pub(crate) fn millis(d: Duration) -> u64 {
    let ms = d.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX).min(i64::MAX as u64)
}

/// A new connection to the engine, within `timeout`.
async fn connect(
    source: &Source,
    config: &ConnectionManagerConfig,
    timeout: Duration,
) -> Result<Conn, Failure> {
    match tokio::time::timeout(timeout, source.connect(config)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => {
            tracing::warn!(kind = ?e.kind(), "redis: could not connect");
            Err(Failure::Failed)
        }
        Err(_) => {
            tracing::warn!("redis: could not connect in time");
            Err(Failure::TimedOut)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use lce_testkit::redis_server::RedisServer;

    use super::*;

    fn generation(engine: &Engine, k: usize) -> u64 {
        engine.conns[k].current.lock().unwrap().0
    }

    /// A fresh engine and an engine handle on it bounded by `timeout`
    /// (`None` where no `redis-server` is installed, outside CI).
    async fn engine(timeout: Duration) -> Option<(RedisServer, Engine)> {
        let server = RedisServer::start()?;
        let engine = Engine::connect(&server.url(), Passwords::default(), timeout, Duration::ZERO)
            .await
            .unwrap();
        Some((server, engine))
    }

    /// The error of a connection the peer dropped.
    fn connection_reset() -> RedisError {
        RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
    }

    /// Attempts left unanswered, or failing with the connection's errors,
    /// end once the time bound has passed (unanswered: `TimedOut`); an
    /// error of the engine's own ends them at once; an answer after
    /// failures is the result, and each attempt after the first is a retry.
    #[tokio::test]
    async fn attempts_end_at_the_bound_or_at_the_first_answer() {
        // Long enough that a pause of the machine cannot use it up before
        // the second try.
        let Some((_server, engine)) = engine(Duration::from_secs(2)).await else {
            return;
        };
        let tries = AtomicUsize::new(0);
        let unanswered: Result<(), Failure> = engine
            .attempts("test", |_, _| {
                tries.fetch_add(1, Ordering::Relaxed);
                std::future::pending()
            })
            .await;
        assert_eq!(unanswered, Err(Failure::TimedOut));
        assert_eq!(tries.swap(0, Ordering::Relaxed), 1, "one bounded attempt");

        let dropped = engine
            .attempts("test", |_, _| {
                tries.fetch_add(1, Ordering::Relaxed);
                std::future::ready(Err::<(), _>(connection_reset()))
            })
            .await;
        assert_eq!(dropped, Err(Failure::Failed));
        assert!(tries.swap(0, Ordering::Relaxed) > 1, "tried again");

        let refused = engine
            .attempts("test", |_, _| {
                tries.fetch_add(1, Ordering::Relaxed);
                let e = RedisError::from((ErrorKind::Client, "refused"));
                std::future::ready(Err::<(), _>(e))
            })
            .await;
        assert_eq!(refused, Err(Failure::Failed));
        assert_eq!(tries.swap(0, Ordering::Relaxed), 1, "not tried again");

        let retries = Mutex::new(Vec::new());
        let answered = engine
            .attempts("test", |_, retry| {
                let mut seen = retries.lock().unwrap();
                seen.push(retry);
                std::future::ready(if seen.len() < 3 {
                    Err(connection_reset())
                } else {
                    Ok(7)
                })
            })
            .await;
        assert_eq!(answered, Ok(7));
        assert_eq!(*retries.lock().unwrap(), [false, true, true]);
    }

    /// A replacement moves the connection one generation on, once: a second
    /// attempt that met the same (replaced) connection replaces nothing.
    #[tokio::test]
    async fn a_connection_is_replaced_once_per_generation() {
        let Some((_server, engine)) = engine(Duration::from_secs(5)).await else {
            return;
        };
        let (k, g, _) = engine.pick().unwrap();
        assert_eq!(g, 0);
        engine.replace(k, g).await;
        assert_eq!(generation(&engine, k), 1);
        engine.replace(k, g).await;
        assert_eq!(generation(&engine, k), 1, "a stale replacement");
        engine.replace(k, 1).await;
        assert_eq!(generation(&engine, k), 2);
        // The replacement answers.
        let mut ping = redis::cmd("PING");
        ping.arg("x");
        for _ in 0..CONNECTIONS {
            assert_eq!(
                engine
                    .query("ping", &ping)
                    .await
                    .ok()
                    .as_ref()
                    .and_then(text),
                Some(&b"x"[..])
            );
        }
    }
}
