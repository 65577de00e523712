//! Thread-state commits (D10, rules 13-15): the store trait and two stores.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;

/// What the coordinator asks a store to commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitRequest {
    /// The run.
    pub run_id: String,
    /// The conversation (thread) whose state is committed.
    pub conversation_id: String,
    /// The sequence of the terminal being committed.
    pub sequence: u64,
    /// For an interrupt: its id.
    pub interrupt_id: Option<String>,
}

/// A durable commit: the revision and the head reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The durable revision.
    pub durable_revision: u64,
    /// Opaque reference to the committed head.
    pub head_ref: String,
}

/// A commit that did not happen. Only its kind is kept: the store's own
/// error text may hold anything and never reaches an event or a log.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// The store refused or failed.
    #[error("the thread store failed to commit")]
    Failed,
    /// The commit took longer than the coordinator's bound.
    #[error("the thread store did not answer in time")]
    TimedOut,
}

/// Where the coordinator commits thread state before it forwards
/// `run.finished` or `run.interrupted` (D10). Commits are never retried.
pub trait ThreadStore: Send + Sync + 'static {
    /// Commits the final thread state of a finished run.
    fn commit_final(
        &self,
        request: CommitRequest,
    ) -> BoxFuture<'static, Result<Committed, CommitError>>;
    /// Commits the pending interrupt and the resumable state.
    fn commit_interrupt(
        &self,
        request: CommitRequest,
    ) -> BoxFuture<'static, Result<Committed, CommitError>>;
}

/// An in-memory store: revisions count up per conversation.
#[derive(Debug, Default)]
pub struct MemoryStore {
    revisions: Mutex<HashMap<String, u64>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last revision committed for `conversation_id`.
    pub fn revision(&self, conversation_id: &str) -> Option<u64> {
        self.revisions.lock().ok()?.get(conversation_id).copied()
    }

    fn commit(&self, request: &CommitRequest) -> Result<Committed, CommitError> {
        let mut map = self.revisions.lock().map_err(|_| CommitError::Failed)?;
        let rev = map.entry(request.conversation_id.clone()).or_insert(0);
        *rev += 1;
        Ok(Committed {
            durable_revision: *rev,
            head_ref: format!("mem:{}:{}", request.conversation_id, rev),
        })
    }
}

impl ThreadStore for MemoryStore {
    fn commit_final(
        &self,
        request: CommitRequest,
    ) -> BoxFuture<'static, Result<Committed, CommitError>> {
        let r = self.commit(&request);
        Box::pin(async move { r })
    }

    fn commit_interrupt(
        &self,
        request: CommitRequest,
    ) -> BoxFuture<'static, Result<Committed, CommitError>> {
        let r = self.commit(&request);
        Box::pin(async move { r })
    }
}

/// What a [`FaultyStore`] does on each commit.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Commit normally.
    None,
    /// Fail at once.
    Fail,
    /// Never answer (the coordinator's timeout must fire).
    Hang,
    /// Answer after a delay.
    Delay(Duration),
}

/// A store for tests that injects faults, counting the commits asked of it.
#[derive(Debug)]
pub struct FaultyStore {
    fault: Fault,
    calls: AtomicUsize,
    revision: AtomicU64,
}

impl FaultyStore {
    /// A store that applies `fault` to every commit.
    pub fn new(fault: Fault) -> Self {
        FaultyStore {
            fault,
            calls: AtomicUsize::new(0),
            revision: AtomicU64::new(0),
        }
    }

    /// How many commits were asked for (a failed commit is never retried).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn commit(&self) -> BoxFuture<'static, Result<Committed, CommitError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let rev = self.revision.fetch_add(1, Ordering::SeqCst) + 1;
        let ok = Committed {
            durable_revision: rev,
            head_ref: format!("faulty:{rev}"),
        };
        match self.fault {
            Fault::None => Box::pin(async move { Ok(ok) }),
            Fault::Fail => Box::pin(async { Err(CommitError::Failed) }),
            Fault::Hang => Box::pin(futures::future::pending()),
            Fault::Delay(d) => Box::pin(async move {
                tokio::time::sleep(d).await;
                Ok(ok)
            }),
        }
    }
}

impl ThreadStore for FaultyStore {
    fn commit_final(&self, _: CommitRequest) -> BoxFuture<'static, Result<Committed, CommitError>> {
        self.commit()
    }

    fn commit_interrupt(
        &self,
        _: CommitRequest,
    ) -> BoxFuture<'static, Result<Committed, CommitError>> {
        self.commit()
    }
}
