//! [`RedisStore`]: thread-state commits (D10, rules 13-15) whose revisions
//! live in Redis.

use std::fmt;
use std::sync::Arc;

use lce_core::{CommitError, CommitFuture, CommitRequest, Committed, ThreadStore};
use redis::Value;

use crate::RedisLogOptions;
use crate::engine::{Engine, Failure, Lua, int};
use crate::scripts;

/// A thread store on Redis: each commit counts the conversation's revision
/// up by one (`INCR <prefix>:{thread:<conversation_id>}:rev`), so
/// revisions survive restarts and every replica shares them. The head
/// reference is `redis:<conversation_id>:<revision>`.
///
/// Cheap to clone. A commit whose answer was lost to a dropped connection is
/// tried again within the timeout, and counts once.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    prefix: String,
    thread_retention_ms: String,
    script: Lua,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the client: its connection info may hold a password.
        f.debug_struct("RedisStore")
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to the engine at `url` (`redis://HOST:PORT[/DB]`) with the
    /// prefix and timeout of `options` (its retention does not apply:
    /// revisions are kept for good).
    /// [`RedisRunLog::thread_store`](crate::RedisRunLog::thread_store)
    /// shares a run log's connection instead.
    ///
    /// # Errors
    ///
    /// [`CommitError::Failed`] or [`CommitError::TimedOut`] when the url is
    /// not one or the engine does not answer.
    pub async fn connect(url: &str, options: &RedisLogOptions) -> Result<Self, CommitError> {
        let engine = Engine::connect(
            url,
            options.passwords(),
            options.timeout,
            std::time::Duration::ZERO,
        )
        .await
        .map_err(commit_error)?;
        Ok(Self::from_engine(engine, options))
    }

    pub(crate) fn from_engine(engine: Engine, options: &RedisLogOptions) -> Self {
        RedisStore {
            inner: Arc::new(Inner {
                engine,
                prefix: options.prefix.clone(),
                thread_retention_ms: crate::engine::millis(options.thread_retention).to_string(),
                script: scripts::commit(),
            }),
        }
    }

    /// The last revision committed for `conversation_id`, if any.
    ///
    /// # Errors
    ///
    /// [`CommitError::Failed`] or [`CommitError::TimedOut`] when the engine
    /// does not answer.
    pub async fn revision(&self, conversation_id: &str) -> Result<Option<u64>, CommitError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(rev_key(&self.inner.prefix, conversation_id));
        let reply = self
            .inner
            .engine
            .query("revision", &cmd)
            .await
            .map_err(commit_error)?;
        match reply {
            Value::Nil => Ok(None),
            other => int(&other)
                .and_then(|n| u64::try_from(n).ok())
                .map(Some)
                .ok_or(CommitError::Failed),
        }
    }

    fn commit(&self, request: CommitRequest) -> CommitFuture {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            let rev_key = rev_key(&inner.prefix, &request.conversation_id);
            let last_key = format!(
                "{}:{{thread:{}}}:last",
                inner.prefix, request.conversation_id
            );
            // What makes a retried commit recognisable: the run and the
            // terminal's sequence.
            let commit_id = format!("{}\n{}", request.run_id, request.sequence);
            let reply = inner
                .engine
                .eval(
                    "commit",
                    &inner.script,
                    &[&rev_key, &last_key],
                    &[&commit_id, &inner.thread_retention_ms],
                    true,
                )
                .await
                .map_err(commit_error)?;
            let revision = int(&reply)
                .and_then(|n| u64::try_from(n).ok())
                .ok_or(CommitError::Failed)?;
            Ok(Committed {
                durable_revision: revision,
                head_ref: format!("redis:{}:{}", request.conversation_id, revision),
            })
        })
    }
}

fn rev_key(prefix: &str, conversation_id: &str) -> String {
    format!("{prefix}:{{thread:{conversation_id}}}:rev")
}

fn commit_error(failure: Failure) -> CommitError {
    match failure {
        Failure::Failed => CommitError::Failed,
        Failure::TimedOut => CommitError::TimedOut,
    }
}

impl ThreadStore for RedisStore {
    fn commit_final(&self, request: CommitRequest) -> CommitFuture {
        self.commit(request)
    }

    fn commit_interrupt(&self, request: CommitRequest) -> CommitFuture {
        self.commit(request)
    }
}
