//! Thread-state commits (D10, rules 13-15): what a store implements.

use std::future::Future;
use std::pin::Pin;

/// The future a [`ThreadStore`] returns: boxed, `Send`, owning what it needs
/// (the same type as `futures::future::BoxFuture<'static, _>`).
pub type CommitFuture =
    Pin<Box<dyn Future<Output = Result<Committed, CommitError>> + Send + 'static>>;

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
    fn commit_final(&self, request: CommitRequest) -> CommitFuture;
    /// Commits the pending interrupt and the resumable state.
    fn commit_interrupt(&self, request: CommitRequest) -> CommitFuture;
}
