//! The connection to the engine and the bounded retry every operation goes
//! through.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ErrorKind, RedisError, RedisResult, RetryMethod, ServerErrorKind, Value};
use tokio::time::Instant;

/// Why an operation did not happen (the engine's own words are dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The engine refused, or the connection failed and did not come back
    /// in time.
    Failed,
    /// The operation's time bound passed.
    TimedOut,
}

/// A shared, self-reconnecting connection (one multiplexed socket) and the
/// bound of one operation.
#[derive(Clone)]
pub(crate) struct Engine {
    pub(crate) client: Client,
    pub(crate) conn: ConnectionManager,
    pub(crate) timeout: Duration,
    /// See [`Engine::disturbances`].
    disturbances: Arc<AtomicU64>,
}

impl Engine {
    /// Connects to `url` (`redis://HOST:PORT[/DB]`); the first connection
    /// must succeed within `timeout`.
    pub(crate) async fn connect(url: &str, timeout: Duration) -> Result<Engine, Failure> {
        let client = Client::open(url).map_err(|e| {
            tracing::warn!(kind = ?e.kind(), "redis: the url was not accepted");
            Failure::Failed
        })?;
        // Reconnection after a dropped connection: the manager swaps in a
        // new connection in the background, trying 6 times with growing
        // random pauses of at most 1 s; a command issued meanwhile waits
        // for it.
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(timeout))
            .set_connection_timeout(Some(timeout))
            .set_max_delay(Duration::from_secs(1));
        let connecting = ConnectionManager::new_with_config(client.clone(), config);
        let conn = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                tracing::warn!(kind = ?e.kind(), "redis: could not connect");
                return Err(Failure::Failed);
            }
            Err(_) => {
                tracing::warn!("redis: could not connect in time");
                return Err(Failure::TimedOut);
            }
        };
        Ok(Engine {
            client,
            conn,
            timeout,
            disturbances: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Runs `attempt` until it succeeds, fails for good, or the time bound
    /// passes. `attempt(retry)` gets a fresh handle on the shared
    /// connection; `retry` is true from the second attempt on, which only
    /// follows a failure of the connection (the earlier attempt may or may
    /// not have reached the engine).
    pub(crate) async fn attempts<T, F, Fut>(
        &self,
        op: &'static str,
        mut attempt: F,
    ) -> Result<T, Failure>
    where
        F: FnMut(ConnectionManager, bool) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let deadline = Instant::now() + self.timeout;
        let mut pause = Duration::from_millis(20);
        let mut retry = false;
        loop {
            let outcome =
                tokio::time::timeout_at(deadline, attempt(self.conn.clone(), retry)).await;
            match outcome {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if transient(&e) && Instant::now() + pause < deadline => {
                    self.disturbed();
                    tracing::debug!(op, kind = ?e.kind(), "redis: trying again after a connection failure");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                    retry = true;
                }
                Ok(Err(e)) => {
                    tracing::warn!(op, kind = ?e.kind(), "redis: the operation failed");
                    return Err(Failure::Failed);
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
            let command = |name: &str, body: &str| {
                let mut cmd = redis::cmd(name);
                cmd.arg(body).arg(keys.len()).arg(keys).arg(args);
                if retry_arg {
                    cmd.arg(if retry { "1" } else { "0" });
                }
                cmd
            };
            let evalsha = command("EVALSHA", &script.hash);
            let eval = command("EVAL", script.code);
            async move {
                match evalsha.query_async(&mut conn).await {
                    Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                        self.disturbed();
                        eval.query_async(&mut conn).await
                    }
                    other => other,
                }
            }
        })
        .await
    }

    /// How many disturbances (a failed connection, an engine that forgot
    /// the scripts) the operations have met so far. Calls issued in order
    /// may reach the engine out of order across one: each is retried on
    /// its own.
    pub(crate) fn disturbances(&self) -> u64 {
        self.disturbances.load(Ordering::Relaxed)
    }

    fn disturbed(&self) {
        self.disturbances.fetch_add(1, Ordering::Relaxed);
    }
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

/// Whether an error is the connection's (worth a new attempt once the
/// manager has reconnected) rather than the engine's answer.
pub(crate) fn transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || matches!(
            e.retry_method(),
            RetryMethod::Reconnect | RetryMethod::RetryImmediately | RetryMethod::WaitAndRetry
        )
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
