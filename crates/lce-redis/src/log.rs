//! [`RedisRunLog`]: the run log on Redis Streams (see the crate
//! documentation for the keys and the scripts).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lce_runlog::{LogBatch, LogEntry, LogError, LogFuture, Refusal, Renewal, RunInfo, RunLog};
use lce_types::EventParser;
use redis::Value;
use tokio::time::Instant;

use crate::engine::{Engine, Failure, int, millis, text};
use crate::scripts::{APPEND_GUARD, CONFIRM, Scripts, UNFENCE};
use crate::topology::Passwords;
use crate::wakeups::{CANCEL_NOTICE, Waiting, Wakeups, shard_channel};

/// How long a thread's revisions are kept after its last commit when no
/// thread retention is given: 30 days.
pub const DEFAULT_THREAD_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// How [`RedisRunLog`] keeps its logs.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisLogOptions {
    /// How long a log is kept after its terminal (default 24 hours); an
    /// unfinished run's keys expire this long after its owner's last
    /// renewal.
    pub retention: Duration,
    /// How long a thread's revisions are kept after its last commit
    /// (default 30 days).
    pub thread_retention: Duration,
    /// The first part of every key (default `lce`): `<prefix>:{<run_id>}:log`,
    /// `<prefix>:active`, ... Replicas that share runs use the same one.
    pub prefix: String,
    /// The bound of one operation on the engine, retries after a lost
    /// connection included (default 5 s); a read that waits waits its own
    /// `wait` on top of it.
    pub timeout: Duration,
    /// How many replicas of the engine must hold an append before it
    /// counts as acknowledged and its entries may reach a reader (`WAIT`;
    /// default 0: the primary's acknowledgement is enough). See
    /// [`RedisLogOptions::with_replicas`].
    pub replicas: u32,
    /// How long one append waits for those replicas (default 1 s) before
    /// it is tried again, within [`RedisLogOptions::timeout`].
    pub replica_timeout: Duration,
    /// The engine's password ([`RedisLogOptions::with_password`]), so that
    /// it need not be written in a url on a command line.
    pub(crate) password: Option<EnginePassword>,
    /// The Sentinels' own password
    /// ([`RedisLogOptions::with_sentinel_password`]).
    pub(crate) sentinel_password: Option<EnginePassword>,
}

/// A password that never shows in a `Debug` output or a log line.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct EnginePassword(pub(crate) String);

impl std::fmt::Debug for EnginePassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnginePassword(..)")
    }
}

impl Default for RedisLogOptions {
    fn default() -> Self {
        RedisLogOptions {
            retention: Duration::from_secs(24 * 3600),
            thread_retention: DEFAULT_THREAD_RETENTION,
            prefix: "lce".to_owned(),
            timeout: Duration::from_secs(5),
            replicas: 0,
            replica_timeout: Duration::from_secs(1),
            password: None,
            sentinel_password: None,
        }
    }
}

impl RedisLogOptions {
    /// The defaults: 24 h retention, 30 days of thread revisions, prefix
    /// `lce`, 5 s per operation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps logs for `retention` after their terminal.
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// Keeps a thread's revisions for `retention` after its last commit.
    pub fn with_thread_retention(mut self, retention: Duration) -> Self {
        self.thread_retention = retention;
        self
    }

    /// Starts every key with `prefix`.
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Authenticates with `password` (it replaces one the url holds).
    /// Kept out of every `Debug` output, log line and error.
    pub fn with_password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(EnginePassword(password.into()));
        self
    }

    /// Authenticates with `password` to the Sentinels of a
    /// `redis+sentinel://` url (Sentinel's own `requirepass`; without it
    /// they are asked without a password). The data nodes' password is
    /// [`RedisLogOptions::with_password`]. Kept out of every `Debug`
    /// output, log line and error.
    pub fn with_sentinel_password(mut self, password: impl Into<String>) -> Self {
        self.sentinel_password = Some(EnginePassword(password.into()));
        self
    }

    /// The passwords a connection authenticates with: the data nodes' and
    /// the Sentinels'.
    pub(crate) fn passwords(&self) -> Passwords<'_> {
        Passwords {
            node: self.password.as_ref().map(|p| p.0.as_str()),
            sentinel: self.sentinel_password.as_ref().map(|p| p.0.as_str()),
        }
    }

    /// Bounds each operation by `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Counts an append as acknowledged only once `replicas` replicas of
    /// the engine hold it (`WAIT replicas timeout`), each wait bounded by
    /// `timeout`: what a failover to one of them keeps (guarantee 7). An
    /// append not confirmed in time is tried again within the operation's
    /// bound ([`RedisLogOptions::with_timeout`]), then fails
    /// (`LogError::Unavailable`: the gateway ends the run as `log_failed`).
    /// Readers see an entry only once it is confirmed. Every replica of
    /// the gateway must use the same setting.
    pub fn with_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replicas = replicas;
        self.replica_timeout = timeout;
        self
    }
}

/// How long an append that found a gap waits before trying its position
/// again, while earlier appends of its run are in flight.
const GAP_PAUSE: Duration = Duration::from_millis(20);

/// How many orphan candidates one [`RunLog::orphans`] looks at per part
/// of the active-run index.
const ORPHANS_PER_CALL: usize = 1000;

/// How many parts the active-run index has: a run is recorded in the part
/// its id hashes to, so that on a Cluster no key is written by every run
/// and the index spreads over as many slots.
const ACTIVE_BUCKETS: u32 = 16;

/// The part of the active-run index `run_id` is recorded in (FNV-1a of
/// its bytes; the same on every replica).
fn active_bucket(run_id: &str) -> u32 {
    let hash = run_id.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    hash % ACTIVE_BUCKETS
}

/// `lce_runlog::RunLog` on Redis Streams, shared by every replica that
/// connects to the same engine with the same prefix.
///
/// Cheap to clone (the clones share the connections). Commands go over four
/// multiplexed, self-reconnecting connections (`ConnectionManager`); reads
/// that wait for entries are woken through one pub/sub subscription per
/// handle (a fifth connection, with a task that resubscribes by itself;
/// see the crate documentation). Must be connected inside a tokio runtime.
#[derive(Clone)]
pub struct RedisRunLog {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    scripts: Scripts,
    options: RedisLogOptions,
    /// `<prefix>:appended`, where every append publishes its run id (one
    /// server); on a Cluster, each run's own shard channel instead.
    appended: String,
    /// The reads that wait, woken by the notices on `appended`.
    wakeups: Arc<Wakeups>,
    /// The task that listens to `appended`, stopped with the handle.
    listener: tokio::task::AbortHandle,
    /// The positions of the appends in flight from this handle, per run
    /// (see [`InFlight`]).
    in_flight: PendingAppends,
}

type PendingAppends = Mutex<HashMap<String, BTreeSet<u64>>>;

/// One append's entry in [`Inner::in_flight`], made when the append is
/// issued (the call, not the first poll of its future) and removed when
/// it is dropped (the append returned, or its future was dropped).
struct InFlight {
    inner: Arc<Inner>,
    run_id: String,
    position: u64,
}

impl InFlight {
    fn enter(inner: &Arc<Inner>, run_id: &str, position: u64) -> Self {
        if let Ok(mut map) = inner.in_flight.lock() {
            map.entry(run_id.to_owned()).or_default().insert(position);
        }
        InFlight {
            inner: Arc::clone(inner),
            run_id: run_id.to_owned(),
            position,
        }
    }

    /// Whether an append of the same run at an earlier position is still
    /// in flight.
    fn earlier_pending(&self) -> bool {
        self.inner.in_flight.lock().is_ok_and(|map| {
            map.get(&self.run_id)
                .and_then(|positions| positions.first())
                .is_some_and(|first| *first < self.position)
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut map) = self.inner.in_flight.lock()
            && let Some(positions) = map.get_mut(&self.run_id)
        {
            positions.remove(&self.position);
            if positions.is_empty() {
                map.remove(&self.run_id);
            }
        }
    }
}

impl fmt::Debug for RedisRunLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the client: its connection info may hold a password.
        f.debug_struct("RedisRunLog")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// The keys of one run.
struct RunKeys {
    meta: String,
    log: String,
    lease: String,
    /// Where an append's guard moves the stream while it refuses the
    /// append (see `scripts::APPEND_GUARD`); never there otherwise.
    fenced: String,
}

impl RunKeys {
    fn new(prefix: &str, run_id: &str) -> Self {
        RunKeys {
            meta: format!("{prefix}:{{{run_id}}}:meta"),
            log: format!("{prefix}:{{{run_id}}}:log"),
            lease: format!("{prefix}:{{{run_id}}}:lease"),
            fenced: format!("{prefix}:{{{run_id}}}:fenced"),
        }
    }
}

fn unavailable(_: Failure) -> LogError {
    LogError::Unavailable
}

impl RedisRunLog {
    /// Connects to the engine at `url` (`redis://HOST:PORT[/DB]`, with
    /// `redis://:PASSWORD@HOST...` or `redis://USER:PASSWORD@HOST...` where
    /// it needs one).
    ///
    /// # Errors
    ///
    /// [`LogError::Unavailable`] when the url is not one, or the engine does
    /// not answer within the options' timeout (neither the url nor the
    /// engine's words are kept).
    pub async fn connect(url: &str, options: RedisLogOptions) -> Result<Self, LogError> {
        let waits = if options.replicas > 0 {
            options.replica_timeout
        } else {
            Duration::ZERO
        };
        let engine = Engine::connect(url, options.passwords(), options.timeout, waits)
            .await
            .map_err(unavailable)?;
        let scripts = Scripts::new();
        // Loaded up front: otherwise the first pipelined appends all meet
        // NOSCRIPT and are sent again one by one, in an order of their own.
        // Not on a Cluster, where `SCRIPT LOAD` reaches one node: there the
        // first call of each script on a node is an `EVAL` after `NOSCRIPT`.
        if !engine.topology.is_cluster() {
            for script in scripts.all() {
                let mut load = redis::cmd("SCRIPT");
                load.arg("LOAD").arg(script.code);
                engine.query("load", &load).await.map_err(unavailable)?;
            }
        }
        let appended = format!("{}:appended", options.prefix);
        let (wakeups, listener) = Wakeups::start(
            Arc::clone(&engine.source),
            &engine.topology,
            appended.clone(),
            &options.prefix,
            options.timeout,
        );
        Ok(RedisRunLog {
            inner: Arc::new(Inner {
                engine,
                scripts,
                options,
                appended,
                wakeups,
                listener,
                in_flight: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The options it was connected with.
    pub fn options(&self) -> &RedisLogOptions {
        &self.inner.options
    }

    /// A thread store on the same connection and prefix.
    pub fn thread_store(&self) -> crate::RedisStore {
        crate::RedisStore::from_engine(self.inner.engine.clone(), &self.inner.options)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl Inner {
    fn keys(&self, run_id: &str) -> RunKeys {
        RunKeys::new(&self.options.prefix, run_id)
    }

    /// `<prefix>:{conv:<conversation_id>}:running`: the run last created
    /// for the conversation, while it is unsealed (a slot of its own: the
    /// conversation's, not the run's).
    fn running_key(&self, conversation_id: &str) -> String {
        format!("{}:{{conv:{conversation_id}}}:running", self.options.prefix)
    }

    /// Names `run_id` the running run of `conversation_id`, expiring after
    /// the retention (refreshed by each renewal), so the keys of
    /// conversations whose runs all ended without cleanup do not stay. A
    /// failure is logged, not returned: the run exists, only the cancel
    /// route will not find it.
    async fn mark_running(&self, conversation_id: &str, run_id: &str) {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.running_key(conversation_id))
            .arg(run_id)
            .arg("PX")
            .arg(millis(self.options.retention));
        if self.engine.query("create", &cmd).await.is_err() {
            tracing::warn!(
                run_id,
                "redis: the conversation's running run was not recorded"
            );
        }
    }

    /// Clears the running run of `conversation_id` if it still names
    /// `run_id` (logged, not returned: [`Inner::running_run`] checks the
    /// run it finds anyway).
    async fn unmark_running(&self, op: &'static str, conversation_id: &str, run_id: &str) {
        let key = self.running_key(conversation_id);
        let cleared = self
            .engine
            .eval(op, &self.scripts.unmark_running, &[&key], &[run_id], false)
            .await;
        if cleared.is_err() {
            tracing::warn!(
                op,
                run_id,
                "redis: the conversation's running run was not cleared"
            );
        }
    }

    /// Records `run_id`'s lease deadline in the active set (a hint for
    /// `orphans`; a failure is logged, not returned: the owner's next
    /// renewal records it again). The set expires the retention after the
    /// last run recorded in it, so that nothing lce writes lives forever.
    async fn mark_active(&self, op: &'static str, run_id: &str, deadline_ms: i64) {
        let active = self.active_key(active_bucket(run_id));
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD").arg(&active).arg(deadline_ms).arg(run_id);
        pipe.cmd("PEXPIRE")
            .arg(&active)
            .arg(millis(self.options.retention));
        if self.engine.pipeline(op, &pipe).await.is_err() {
            tracing::warn!(op, run_id, "redis: the active-run index was not updated");
        }
    }

    /// Takes `run_id` out of the active set (a hint, as above).
    async fn mark_done(&self, op: &'static str, run_ids: &[&str]) {
        let mut buckets: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for run_id in run_ids {
            buckets
                .entry(active_bucket(run_id))
                .or_default()
                .push(run_id);
        }
        for (bucket, run_ids) in buckets {
            let mut cmd = redis::cmd("ZREM");
            cmd.arg(self.active_key(bucket)).arg(run_ids);
            if self.engine.query(op, &cmd).await.is_err() {
                tracing::warn!(op, "redis: the active-run index was not updated");
            }
        }
    }

    /// `<prefix>:active:{<bucket>}`: one of the [`ACTIVE_BUCKETS`] parts of
    /// the active-run index (each in a slot of its own, so that no key is
    /// written by every run).
    fn active_key(&self, bucket: u32) -> String {
        format!("{}:active:{{{bucket}}}", self.options.prefix)
    }

    /// A wake-up for the reads waiting on `run_id` (`notice`: the run id,
    /// or a cancel announcement), to end a transaction with: `PUBLISH` on
    /// the handle's channel, or on a Cluster `SPUBLISH` on the run's shard
    /// channel (its own slot).
    fn publish(&self, pipe: &mut redis::Pipeline, run_id: &str, notice: &str) {
        if self.engine.topology.is_cluster() {
            pipe.cmd("SPUBLISH")
                .arg(shard_channel(&self.options.prefix, run_id))
                .arg(notice);
        } else {
            pipe.cmd("PUBLISH").arg(&self.appended).arg(notice);
        }
    }

    async fn create(&self, info: RunInfo, lease: Duration) -> Result<(), LogError> {
        let keys = self.keys(&info.run_id);
        let lease_ms = millis(lease);
        let reply = self
            .engine
            .eval_confirmed(
                "create",
                &self.scripts.create,
                &[&keys.meta, &keys.log, &keys.lease],
                &[
                    &info.conversation_id,
                    &info.owner,
                    &lease_ms.to_string(),
                    &millis(self.options.retention).to_string(),
                    &info.nonce,
                    if self.options.replicas > 0 { "1" } else { "0" },
                ],
                true,
                self.options.replicas,
            )
            .await
            .map_err(unavailable)?;
        match int(&reply) {
            Some(-1) => Err(LogError::Exists),
            Some(now) if now >= 0 => {
                self.mark_active("create", &info.run_id, deadline(now, lease_ms))
                    .await;
                self.mark_running(&info.conversation_id, &info.run_id).await;
                Ok(())
            }
            _ => Err(LogError::Unavailable),
        }
    }

    async fn append(
        &self,
        in_flight: &InFlight,
        owner: &str,
        entries: &[LogEntry],
    ) -> Result<(), LogError> {
        let (run_id, position) = (in_flight.run_id.as_str(), in_flight.position);
        let Some(terminal) = check_batch(position, entries)? else {
            return Ok(());
        };
        let keys = self.keys(run_id);
        let stored = stored_entries(position, entries)?;
        let guard_args = [
            owner.to_owned(),
            position.to_string(),
            entries.len().to_string(),
            if terminal { "1" } else { "0" }.to_owned(),
            millis(self.options.retention).to_string(),
        ];
        let deadline = Instant::now() + self.options.timeout;
        // From the second round of the gap loop on, every attempt counts as
        // a retry: an earlier round's lost attempt may land late.
        let mut later_round = false;
        loop {
            // Looked at before the transaction: an earlier append that was
            // in flight then may have landed just after it.
            let earlier_pending = in_flight.earlier_pending();
            let replies = self
                .engine
                .transaction("append", self.options.replicas, |pipe, retry| {
                    self.append_transaction(
                        pipe,
                        (run_id, &keys),
                        &guard_args,
                        &stored,
                        position,
                        retry || later_round,
                    )
                })
                .await
                .map_err(unavailable)?;
            let (answer, conversation_id) = guard_answer(&replies)?;
            let all_added = replies
                .get(1..=entries.len())
                .is_some_and(|added| added.iter().all(|id| text(id).is_some()));
            if answer == Some(b"ok") && !all_added {
                // The guard granted the write but an `XADD` did not store
                // its entry: the engine is not the one these scripts know.
                tracing::warn!(run_id, "redis: an append's entries were not stored");
                return Err(LogError::Unavailable);
            }
            let refused = |refusal| Err(LogError::Refused { position, refusal });
            return match answer {
                Some(b"ok" | b"written") => {
                    if self.options.replicas > 0 {
                        let last = position + entries.len() as u64 - 1;
                        self.confirm(run_id, &keys, last).await?;
                    }
                    if terminal {
                        self.after_terminal(run_id, conversation_id).await;
                    }
                    Ok(())
                }
                // Appends issued in order without waiting for each other
                // can reach the engine out of order (tasks polled in any
                // order, each retried on its own across a lost connection
                // or an engine restart): while an append of the same run
                // at an earlier position is in flight from this handle, a
                // gap waits for it, within the bound. Otherwise a gap is the
                // caller's mistake, refused at once.
                Some(b"gap") if earlier_pending && Instant::now() + GAP_PAUSE < deadline => {
                    tokio::time::sleep(GAP_PAUSE).await;
                    later_round = true;
                    continue;
                }
                Some(b"gap" | b"out_of_order") => refused(Refusal::OutOfOrder),
                Some(b"not_found") => Err(LogError::NotFound),
                Some(b"sealed") => refused(Refusal::Sealed),
                Some(b"not_owner") => refused(Refusal::NotOwner),
                _ => Err(LogError::Unavailable),
            };
        }
    }

    /// One append as one transaction: the guard, the entries as plain
    /// `XADD`s (written only when the guard answers `ok`; see
    /// `scripts::APPEND_GUARD`), the unfence, the wake-up. `retry`: the
    /// guard also accepts the first entry already there (an attempt whose
    /// answer was lost may have landed).
    fn append_transaction(
        &self,
        pipe: &mut redis::Pipeline,
        (run_id, keys): (&str, &RunKeys),
        guard_args: &[String],
        stored: &[Stored<'_>],
        position: u64,
        retry: bool,
    ) {
        let guard = pipe
            .cmd("EVAL")
            .arg(APPEND_GUARD)
            .arg(4)
            .arg(&keys.meta)
            .arg(&keys.log)
            .arg(&keys.lease)
            .arg(&keys.fenced)
            .arg(guard_args);
        if retry {
            guard.arg("1").arg(&stored[0]);
        } else {
            guard.arg("0");
        }
        for (k, entry) in stored.iter().enumerate() {
            // Room for the whole command at once (built from empty, its
            // buffer grew by doubling: a reallocation each time).
            let mut xadd = redis::Cmd::with_capacity(6, 48 + keys.log.len() + entry.size_hint());
            xadd.arg("XADD")
                .arg(&keys.log)
                .arg("NOMKSTREAM")
                .arg(EntryId(position + k as u64))
                .arg(entry);
            pipe.add_command(xadd);
        }
        pipe.cmd("EVAL")
            .arg(UNFENCE)
            .arg(2)
            .arg(&keys.log)
            .arg(&keys.fenced);
        // Wakes the reads waiting on the run, on every replica (a refused
        // append wakes them for nothing: they look and wait again). With
        // replicas to wait for, the confirmation wakes them instead.
        if self.options.replicas == 0 {
            self.publish(pipe, run_id, run_id);
        }
    }

    /// Records that the run's entries up to `last` are held by the
    /// replicas the options require (readers see entries up to there), and
    /// wakes its readers; the record itself is waited for too, so that a
    /// failover keeps it.
    async fn confirm(&self, run_id: &str, keys: &RunKeys, last: u64) -> Result<(), LogError> {
        let last = last.to_string();
        let replies = self
            .engine
            .transaction("append", self.options.replicas, |pipe, _retry| {
                pipe.cmd("EVAL")
                    .arg(CONFIRM)
                    .arg(1)
                    .arg(&keys.meta)
                    .arg(&last);
                self.publish(pipe, run_id, run_id);
            })
            .await
            .map_err(unavailable)?;
        match replies.first().and_then(int) {
            Some(1) => Ok(()),
            Some(_) => Err(LogError::NotFound),
            None => Err(LogError::Unavailable),
        }
    }

    /// After the terminal's append: the run is no longer active, nor its
    /// conversation's running run.
    async fn after_terminal(&self, run_id: &str, conversation_id: Option<&Value>) {
        self.mark_done("append", &[run_id]).await;
        if let Some(conversation_id) = conversation_id
            .and_then(|v| text(v))
            .and_then(|b| std::str::from_utf8(b).ok())
        {
            self.unmark_running("append", conversation_id, run_id).await;
        }
    }

    /// One consistent look at the run: its entries after `after` (at most
    /// `max`), sealed, owned.
    async fn snapshot(&self, keys: &RunKeys, after: u64, max: usize) -> Result<LogBatch, LogError> {
        let first = format!("{}-0", after.saturating_add(1));
        let count = u64::try_from(max).unwrap_or(u64::MAX).min(i64::MAX as u64);
        // A transaction, not a script: a script would copy every entry into
        // Lua and back (see `docs/performance.md`).
        let snapshot = |pipe: &mut redis::Pipeline, _retry: bool| {
            pipe.cmd("HMGET")
                .arg(&keys.meta)
                .arg("sealed")
                .arg("confirmed")
                .arg("last")
                .cmd("EXISTS")
                .arg(&keys.lease)
                .cmd("XRANGE")
                .arg(&keys.log)
                .arg(&first)
                .arg("+")
                .arg("COUNT")
                .arg(count);
        };
        let parts = self
            .engine
            .transaction("read", 0, &snapshot)
            .await
            .map_err(unavailable)?;
        let [Value::Array(state), owned, stored] = parts.as_slice() else {
            return Err(LogError::Unavailable);
        };
        let [sealed, confirmed, last] = state.as_slice() else {
            return Err(LogError::Unavailable);
        };
        let stored = match (sealed, stored) {
            (Value::Nil, _) => return Err(LogError::NotFound),
            (_, Value::Array(stored)) => stored,
            _ => return Err(LogError::Unavailable),
        };
        // A run appended with replicas to wait for shows its entries only
        // up to the last confirmed one, and is sealed for readers only
        // once its terminal is confirmed.
        let (visible, sealed) = match (confirmed, int(last)) {
            (Value::Nil, _) => (u64::MAX, text(sealed) == Some(b"1")),
            (confirmed, last) => {
                let confirmed = int(confirmed)
                    .and_then(|c| u64::try_from(c).ok())
                    .unwrap_or(0);
                let last = last.and_then(|l| u64::try_from(l).ok()).unwrap_or(0);
                (confirmed, text(sealed) == Some(b"1") && confirmed >= last)
            }
        };
        let mut entries = Vec::with_capacity(stored.len());
        // One parser for the batch: consecutive events share their ids.
        let mut parser = EventParser::new();
        for (k, item) in stored.iter().enumerate() {
            let position = after.saturating_add(1).saturating_add(k as u64);
            if position > visible {
                break;
            }
            entries.push(decode(&mut parser, position, item)?);
        }
        Ok(LogBatch {
            entries,
            sealed,
            owned: int(owned) == Some(1),
        })
    }

    async fn read(
        &self,
        run_id: &str,
        after: u64,
        max: usize,
        wait: Duration,
    ) -> Result<LogBatch, LogError> {
        let start = Instant::now();
        let keys = self.keys(run_id);
        let max = max.max(1);
        // Registered before the first look: an append that lands after it
        // publishes after the registration, so its notice is not missed.
        let waiting: Option<Waiting> = (!wait.is_zero()).then(|| self.wakeups.register(run_id));
        let mut batch = self.snapshot(&keys, after, max).await?;
        let Some(mut waiting) = waiting else {
            return Ok(batch);
        };
        // Far enough for "forever" when `wait` is too long to add.
        let until = start
            .checked_add(wait)
            .unwrap_or_else(|| start + Duration::from_secs(365 * 24 * 3600));
        // A wake-up can be for nothing (a notice of an earlier append
        // arriving late, a refused append, the subscription coming back):
        // look again, and wait on until an entry, the seal or `until`.
        while batch.entries.is_empty() && !batch.sealed && Instant::now() < until {
            waiting.wait(until).await;
            batch = self.snapshot(&keys, after, max).await?;
        }
        Ok(batch)
    }

    async fn info(&self, run_id: &str) -> Result<Option<RunInfo>, LogError> {
        let keys = self.keys(run_id);
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(&keys.meta)
            .arg("conversation_id")
            .arg("owner")
            .arg("nonce");
        let reply = self.engine.query("info", &cmd).await.map_err(unavailable)?;
        let Value::Array(fields) = reply else {
            return Err(LogError::Unavailable);
        };
        match fields.as_slice() {
            [Value::Nil, Value::Nil, _] => Ok(None),
            [conversation_id, owner, nonce] => {
                let string = |v: &Value| {
                    text(v)
                        .and_then(|b| std::str::from_utf8(b).ok())
                        .map(str::to_owned)
                        .ok_or(LogError::Unavailable)
                };
                Ok(Some(RunInfo {
                    run_id: run_id.to_owned(),
                    conversation_id: string(conversation_id)?,
                    owner: string(owner)?,
                    // A log written before nonces were kept has none.
                    nonce: match nonce {
                        Value::Nil => String::new(),
                        nonce => string(nonce)?,
                    },
                }))
            }
            _ => Err(LogError::Unavailable),
        }
    }

    /// Renews the lease: whether it is still held, and whether a cancel
    /// was requested (the renewal script answers both).
    async fn renew(&self, run_id: &str, owner: &str, lease: Duration) -> Result<Renewal, LogError> {
        let keys = self.keys(run_id);
        let lease_ms = millis(lease);
        let reply = self
            .engine
            .eval(
                "renew",
                &self.scripts.renew,
                &[&keys.meta, &keys.lease, &keys.log],
                &[
                    owner,
                    &lease_ms.to_string(),
                    &millis(self.options.retention).to_string(),
                ],
                false,
            )
            .await
            .map_err(unavailable)?;
        if let Value::Array(parts) = &reply
            && let [now, conversation_id, cancel] = parts.as_slice()
            && let Some(now) = int(now)
        {
            self.mark_active("renew", run_id, deadline(now, lease_ms))
                .await;
            if let Some(conversation_id) =
                text(conversation_id).and_then(|b| std::str::from_utf8(b).ok())
            {
                self.refresh_running(conversation_id).await;
            }
            return Ok(Renewal::new(true, text(cancel) == Some(b"1")));
        }
        match int(&reply) {
            Some(-2) => Err(LogError::NotFound),
            Some(-1) => Ok(Renewal::new(false, false)),
            _ => Err(LogError::Unavailable),
        }
    }

    /// Resolves once a cancel of the run was requested: asks the engine,
    /// then waits for the request's announcement (or, while the run's
    /// notices are not heard, asks again every second).
    async fn cancel_notice(self: Arc<Self>, run_id: String) -> Result<(), LogError> {
        let mut waiting = self.wakeups.register(&run_id);
        loop {
            if self.cancel_requested(&run_id).await? {
                return Ok(());
            }
            waiting.wait_cancel().await;
        }
    }

    /// Pushes back the expiry of the conversation's running-run key (a
    /// renewal: its run goes on). Whatever run the key names, it is kept
    /// at most the retention after the last renewal of a run of the
    /// conversation. Logged, not returned.
    async fn refresh_running(&self, conversation_id: &str) {
        let mut cmd = redis::cmd("PEXPIRE");
        cmd.arg(self.running_key(conversation_id))
            .arg(millis(self.options.retention));
        if self.engine.query("renew", &cmd).await.is_err() {
            tracing::warn!("redis: the conversation's running run was not refreshed");
        }
    }

    async fn request_cancel(&self, run_id: &str) -> Result<bool, LogError> {
        let keys = self.keys(run_id);
        let reply = self
            .engine
            .eval("cancel", &self.scripts.cancel, &[&keys.meta], &[], false)
            .await
            .map_err(unavailable)?;
        match int(&reply) {
            Some(-1) => Err(LogError::NotFound),
            Some(0) => Ok(false),
            Some(1) => {
                self.announce_cancel(run_id).await;
                Ok(true)
            }
            _ => Err(LogError::Unavailable),
        }
    }

    /// Announces a recorded cancel request to the run's owner, wherever it
    /// runs (`!cancel:<run id>` on the wake-up channel). A lost
    /// announcement delays the cancel to the owner's next renewal, which
    /// answers the flag too.
    async fn announce_cancel(&self, run_id: &str) {
        let mut pipe = redis::pipe();
        self.publish(&mut pipe, run_id, &format!("{CANCEL_NOTICE}{run_id}"));
        let announced = self.engine.pipeline("cancel", &pipe).await;
        if announced.is_err() {
            tracing::debug!(run_id, "redis: a cancel request was not announced");
        }
    }

    async fn cancel_requested(&self, run_id: &str) -> Result<bool, LogError> {
        let keys = self.keys(run_id);
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(&keys.meta).arg("sealed").arg("cancel");
        let reply = self
            .engine
            .query("cancel_requested", &cmd)
            .await
            .map_err(unavailable)?;
        match reply {
            Value::Array(fields) => match fields.as_slice() {
                [Value::Nil, _] => Err(LogError::NotFound),
                [_, cancel] => Ok(text(cancel) == Some(b"1")),
                _ => Err(LogError::Unavailable),
            },
            _ => Err(LogError::Unavailable),
        }
    }

    /// The run the conversation's key names, if its log says it is still
    /// unsealed: a run sealed elsewhere (a takeover whose cleanup failed)
    /// or gone is not named, and its stale key is cleared.
    async fn running_run(&self, conversation_id: &str) -> Result<Option<String>, LogError> {
        let mut get = redis::cmd("GET");
        get.arg(self.running_key(conversation_id));
        let run_id = match self
            .engine
            .query("running_run", &get)
            .await
            .map_err(unavailable)?
        {
            Value::Nil => return Ok(None),
            value => text(&value)
                .and_then(|b| std::str::from_utf8(b).ok())
                .map(str::to_owned)
                .ok_or(LogError::Unavailable)?,
        };
        let mut sealed = redis::cmd("HGET");
        sealed.arg(&self.keys(&run_id).meta).arg("sealed");
        let sealed = self
            .engine
            .query("running_run", &sealed)
            .await
            .map_err(unavailable)?;
        if text(&sealed) == Some(b"0") {
            return Ok(Some(run_id));
        }
        self.unmark_running("running_run", conversation_id, &run_id)
            .await;
        Ok(None)
    }

    async fn abandon(&self, run_id: &str, owner: &str) -> Result<bool, LogError> {
        let keys = self.keys(run_id);
        let reply = self
            .engine
            .eval(
                "abandon",
                &self.scripts.abandon,
                &[&keys.meta, &keys.log, &keys.lease],
                &[owner],
                false,
            )
            .await
            .map_err(unavailable)?;
        if let Value::Array(parts) = &reply
            && let [_, conversation_id] = parts.as_slice()
        {
            if let Some(conversation_id) =
                text(conversation_id).and_then(|b| std::str::from_utf8(b).ok())
            {
                self.unmark_running("abandon", conversation_id, run_id)
                    .await;
            }
            self.mark_done("abandon", &[run_id]).await;
            return Ok(true);
        }
        match int(&reply) {
            Some(-2) => Err(LogError::NotFound),
            Some(0) => Ok(false),
            _ => Err(LogError::Unavailable),
        }
    }

    async fn release(&self, run_id: &str, owner: &str) -> Result<(), LogError> {
        let keys = self.keys(run_id);
        let reply = self
            .engine
            .eval(
                "release",
                &self.scripts.release,
                &[&keys.meta, &keys.lease],
                &[owner],
                false,
            )
            .await
            .map_err(unavailable)?;
        match int(&reply) {
            Some(-2) => Err(LogError::NotFound),
            Some(-1) => Ok(()),
            Some(now) if now >= 0 => {
                // An orphan from now on: its readers may take it over.
                self.mark_active("release", run_id, now).await;
                let mut publish = redis::pipe();
                self.publish(&mut publish, run_id, run_id);
                if self.engine.pipeline("release", &publish).await.is_err() {
                    tracing::debug!(run_id, "redis: a release was not announced");
                }
                Ok(())
            }
            _ => Err(LogError::Unavailable),
        }
    }

    async fn claim(&self, run_id: &str, claimant: &str, lease: Duration) -> Result<bool, LogError> {
        let keys = self.keys(run_id);
        let lease_ms = millis(lease);
        let reply = self
            .engine
            .eval_confirmed(
                "claim",
                &self.scripts.claim,
                &[&keys.meta, &keys.lease, &keys.log],
                &[claimant, &lease_ms.to_string()],
                true,
                self.options.replicas,
            )
            .await
            .map_err(unavailable)?;
        match int(&reply) {
            Some(-2) => Err(LogError::NotFound),
            Some(-3) => {
                self.mark_done("claim", &[run_id]).await;
                Ok(false)
            }
            Some(-1) => Ok(false),
            Some(now) if now >= 0 => {
                self.mark_active("claim", run_id, deadline(now, lease_ms))
                    .await;
                Ok(true)
            }
            _ => Err(LogError::Unavailable),
        }
    }

    /// The active-run index's runs whose deadline passed, checked against
    /// their keys: sealed or vanished ones are dropped from the index, ones
    /// whose lease holds again (renewed) are skipped. Every part of the
    /// index is read (and `<prefix>:active`, the one-key index of earlier
    /// versions, which no run writes any more).
    async fn orphans(&self) -> Result<Vec<String>, LogError> {
        let mut keys: Vec<String> = (0..ACTIVE_BUCKETS).map(|b| self.active_key(b)).collect();
        keys.push(format!("{}:active", self.options.prefix));
        let mut candidates = Vec::new();
        for key in &keys {
            let reply = self
                .engine
                .eval(
                    "orphans",
                    &self.scripts.expired,
                    &[key],
                    &[&ORPHANS_PER_CALL.to_string()],
                    false,
                )
                .await
                .map_err(unavailable)?;
            let Value::Array(items) = reply else {
                return Err(LogError::Unavailable);
            };
            candidates.extend(
                items
                    .iter()
                    .filter_map(|v| std::str::from_utf8(text(v)?).ok().map(str::to_owned)),
            );
        }
        // Each candidate's keys are in its own slot: one small pipeline
        // per run, a few at a time.
        let pipes: Vec<redis::Pipeline> = candidates
            .iter()
            .map(|run_id| {
                let keys = self.keys(run_id);
                let mut pipe = redis::pipe();
                pipe.cmd("HGET").arg(&keys.meta).arg("sealed");
                pipe.cmd("EXISTS").arg(&keys.lease);
                pipe
            })
            .collect();
        let engine = &self.engine;
        let mut states: Vec<Result<Vec<Value>, Failure>> = Vec::with_capacity(pipes.len());
        for chunk in pipes.chunks(16) {
            let looks = chunk.iter().map(|pipe| engine.pipeline("orphans", pipe));
            states.extend(futures::future::join_all(looks).await);
        }
        let mut orphans = Vec::new();
        let mut done = Vec::new();
        for (run_id, state) in candidates.iter().zip(states) {
            let state = state.map_err(unavailable)?;
            let [sealed, lease] = state.as_slice() else {
                return Err(LogError::Unavailable);
            };
            match (text(sealed), int(lease)) {
                (Some(b"0"), Some(0)) => orphans.push(run_id.clone()),
                (Some(b"0"), _) => {}
                _ => done.push(run_id.as_str()),
            }
        }
        self.mark_done("orphans", &done).await;
        // Earlier versions' one-key index: emptied as its runs end.
        let mut legacy = redis::cmd("ZREM");
        legacy
            .arg(format!("{}:active", self.options.prefix))
            .arg(&done);
        if !done.is_empty() && self.engine.query("orphans", &legacy).await.is_err() {
            tracing::debug!("redis: the earlier active-run index was not updated");
        }
        Ok(orphans)
    }
}

/// A lease deadline in the engine's milliseconds.
fn deadline(now_ms: i64, lease_ms: u64) -> i64 {
    now_ms.saturating_add(i64::try_from(lease_ms).unwrap_or(i64::MAX))
}

/// One stored stream entry, `[id, [field, value]]`, expected at `position`.
fn decode(parser: &mut EventParser, position: u64, item: &Value) -> Result<LogEntry, LogError> {
    let corrupt = LogError::Corrupt { position };
    let Value::Array(parts) = item else {
        return Err(corrupt);
    };
    let [id, Value::Array(fields)] = parts.as_slice() else {
        return Err(corrupt);
    };
    if !text(id).is_some_and(|id| is_entry_id(id, position)) {
        return Err(corrupt);
    }
    let [name, value] = fields.as_slice() else {
        return Err(corrupt);
    };
    match text(name) {
        Some(b"event") => {
            let json = text(value).ok_or_else(|| corrupt.clone())?;
            parser
                .parse_slice(json)
                .map(LogEntry::Event)
                .map_err(|_| corrupt)
        }
        Some(b"idle") => Ok(LogEntry::Idle),
        _ => Err(corrupt),
    }
}

/// `true` when `id` is the stream entry id `<position>-0`, compared
/// without formatting the position.
fn is_entry_id(id: &[u8], position: u64) -> bool {
    id.strip_suffix(b"-0")
        .and_then(|digits| std::str::from_utf8(digits).ok())
        // The engine's own form: no sign, no leading zero.
        .filter(|digits| *digits == "0" || !digits.starts_with(['+', '0']))
        .is_some_and(|digits| digits.parse::<u64>() == Ok(position))
}

impl RunLog for RedisRunLog {
    fn create(&self, info: RunInfo, lease: Duration) -> LogFuture<()> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.create(info, lease).await })
    }

    fn append(&self, run_id: &str, owner: &str, position: u64, entry: LogEntry) -> LogFuture<()> {
        let in_flight = InFlight::enter(&self.inner, run_id, position);
        let owner = owner.to_owned();
        Box::pin(async move {
            let inner = Arc::clone(&in_flight.inner);
            inner.append(&in_flight, &owner, &[entry]).await
        })
    }

    /// One script call for the whole batch: written whole or not at all.
    fn append_batch(
        &self,
        run_id: &str,
        owner: &str,
        at: u64,
        entries: Vec<LogEntry>,
    ) -> LogFuture<()> {
        let in_flight = InFlight::enter(&self.inner, run_id, at);
        let owner = owner.to_owned();
        Box::pin(async move {
            let inner = Arc::clone(&in_flight.inner);
            inner.append(&in_flight, &owner, &entries).await
        })
    }

    fn read(&self, run_id: &str, after: u64, max: usize, wait: Duration) -> LogFuture<LogBatch> {
        let inner = Arc::clone(&self.inner);
        let run_id = run_id.to_owned();
        Box::pin(async move { inner.read(&run_id, after, max, wait).await })
    }

    fn info(&self, run_id: &str) -> LogFuture<Option<RunInfo>> {
        let inner = Arc::clone(&self.inner);
        let run_id = run_id.to_owned();
        Box::pin(async move { inner.info(&run_id).await })
    }

    fn renew(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<bool> {
        let inner = Arc::clone(&self.inner);
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move { Ok(inner.renew(&run_id, &owner, lease).await?.held) })
    }

    fn renew_and_check(&self, run_id: &str, owner: &str, lease: Duration) -> LogFuture<Renewal> {
        let inner = Arc::clone(&self.inner);
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move { inner.renew(&run_id, &owner, lease).await })
    }

    fn cancel_notice(&self, run_id: &str) -> Option<LogFuture<()>> {
        Some(Box::pin(
            Arc::clone(&self.inner).cancel_notice(run_id.to_owned()),
        ))
    }

    fn release(&self, run_id: &str, owner: &str) -> LogFuture<()> {
        let inner = Arc::clone(&self.inner);
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move { inner.release(&run_id, &owner).await })
    }

    fn abandon(&self, run_id: &str, owner: &str) -> LogFuture<bool> {
        let inner = Arc::clone(&self.inner);
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move { inner.abandon(&run_id, &owner).await })
    }

    fn claim(&self, run_id: &str, claimant: &str, lease: Duration) -> LogFuture<bool> {
        let inner = Arc::clone(&self.inner);
        let (run_id, claimant) = (run_id.to_owned(), claimant.to_owned());
        Box::pin(async move { inner.claim(&run_id, &claimant, lease).await })
    }

    fn orphans(&self) -> LogFuture<Vec<String>> {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.orphans().await })
    }

    /// Sets `cancel` = `1` in the run's meta hash, by a script that checks
    /// `sealed` in the same step.
    fn request_cancel(&self, run_id: &str) -> LogFuture<bool> {
        let inner = Arc::clone(&self.inner);
        let run_id = run_id.to_owned();
        Box::pin(async move { inner.request_cancel(&run_id).await })
    }

    fn cancel_requested(&self, run_id: &str) -> LogFuture<bool> {
        let inner = Arc::clone(&self.inner);
        let run_id = run_id.to_owned();
        Box::pin(async move { inner.cancel_requested(&run_id).await })
    }

    /// Reads `<prefix>:{conv:C}:running`, then the named run's `sealed`.
    fn running_run(&self, conversation_id: &str) -> LogFuture<Option<String>> {
        let inner = Arc::clone(&self.inner);
        let conversation_id = conversation_id.to_owned();
        Box::pin(async move { inner.running_run(&conversation_id).await })
    }

    /// `true`: the engine outlives every replica.
    fn durable(&self) -> bool {
        true
    }
}

/// Checks a batch before anything is sent: `None` when it is empty, else
/// whether it ends with a terminal. Nothing may follow a terminal in a
/// batch, and positions start at 1 (`0-0` is no stream entry id the engine
/// takes, even in a fenced transaction).
fn check_batch(position: u64, entries: &[LogEntry]) -> Result<Option<bool>, LogError> {
    let Some((last, before)) = entries.split_last() else {
        return Ok(None);
    };
    if before.iter().any(LogEntry::is_terminal) {
        return Err(LogError::Refused {
            position,
            refusal: Refusal::Sealed,
        });
    }
    if position == 0 {
        return Err(LogError::Refused {
            position,
            refusal: Refusal::OutOfOrder,
        });
    }
    Ok(Some(last.is_terminal()))
}

/// One entry as it is stored: its stream field and value (`event` and its
/// canonical JSON, or `idle` and `1`), written straight into the command's
/// buffer as two arguments.
enum Stored<'a> {
    Event(&'a lce_types::Event),
    Idle,
}

impl Stored<'_> {
    /// The bytes of the value: the event's canonical JSON.
    fn size_hint(&self) -> usize {
        match self {
            Stored::Event(event) => lce_validate::canonical_json_len(event),
            Stored::Idle => 1,
        }
    }
}

impl redis::ToRedisArgs for Stored<'_> {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        match self {
            Stored::Event(event) => {
                out.write_arg(b"event");
                // Writing our own event to a buffer cannot fail (see
                // `Event::to_json`).
                let _ = event.write_json(out.writer_for_next_arg());
            }
            Stored::Idle => {
                out.write_arg(b"idle");
                out.write_arg(b"1");
            }
        }
    }

    fn num_of_args(&self) -> usize {
        2
    }
}

/// A stream entry id, `<position>-0`, written without an intermediate
/// string.
struct EntryId(u64);

impl redis::ToRedisArgs for EntryId {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        use std::io::Write as _;
        // Writing to the command's buffer cannot fail.
        let _ = write!(out.writer_for_next_arg(), "{}-0", self.0);
    }
}

/// Each entry as it is stored (see [`Stored`]).
fn stored_entries(position: u64, entries: &[LogEntry]) -> Result<Vec<Stored<'_>>, LogError> {
    entries
        .iter()
        .zip(position..)
        .map(|(entry, at)| match entry {
            LogEntry::Event(event) => Ok(Stored::Event(event)),
            LogEntry::Idle => Ok(Stored::Idle),
            // An entry this version cannot store.
            _ => Err(LogError::Corrupt { position: at }),
        })
        .collect()
}

/// The guard's answer in an append transaction's replies, and the run's
/// conversation id when the guard sent it.
fn guard_answer(replies: &[Value]) -> Result<(Option<&[u8]>, Option<&Value>), LogError> {
    let Some(reply) = replies.first() else {
        return Err(LogError::Unavailable);
    };
    Ok(match reply {
        Value::Array(parts) => match parts.as_slice() {
            [answer, conversation_id] => (text(answer), Some(conversation_id)),
            _ => (None, None),
        },
        other => (text(other), None),
    })
}

#[cfg(test)]
mod tests {
    use super::is_entry_id;

    #[test]
    fn entry_ids_are_recognised_without_formatting() {
        assert!(is_entry_id(b"1-0", 1));
        assert!(is_entry_id(b"18446744073709551615-0", u64::MAX));
        for (id, position) in [
            (&b"1-0"[..], 2),
            (b"01-0", 1),
            (b"1-1", 1),
            (b"-0", 0),
            (b"1", 1),
            (b"1a-0", 1),
            (b"18446744073709551616-0", 0),
            (b"", 0),
        ] {
            assert!(!is_entry_id(id, position), "{id:?} at {position}");
        }
    }
}
