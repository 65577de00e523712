//! A thread store for tests that injects faults (D10, rules 13-15).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use lce_core::{CommitError, CommitFuture, CommitRequest, Committed, ThreadStore};

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
    interrupts: AtomicUsize,
    revision: AtomicU64,
    last: Mutex<Option<CommitRequest>>,
}

impl FaultyStore {
    /// A store that applies `fault` to every commit.
    pub fn new(fault: Fault) -> Self {
        FaultyStore {
            fault,
            calls: AtomicUsize::new(0),
            interrupts: AtomicUsize::new(0),
            revision: AtomicU64::new(0),
            last: Mutex::new(None),
        }
    }

    /// How many commits were asked for (a failed commit is never retried).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// How many of those were interrupt commits (`commit_interrupt`).
    pub fn interrupts(&self) -> usize {
        self.interrupts.load(Ordering::SeqCst)
    }

    /// The last commit asked for, if any.
    pub fn last_request(&self) -> Option<CommitRequest> {
        self.last.lock().ok().and_then(|last| last.clone())
    }

    fn commit(&self, request: CommitRequest) -> CommitFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut last) = self.last.lock() {
            *last = Some(request);
        }
        let rev = self.revision.fetch_add(1, Ordering::SeqCst) + 1;
        let ok = Committed {
            durable_revision: rev,
            head_ref: format!("faulty:{rev}"),
        };
        match self.fault {
            Fault::None => Box::pin(async move { Ok(ok) }),
            Fault::Fail => Box::pin(async { Err(CommitError::Failed) }),
            Fault::Hang => Box::pin(std::future::pending()),
            Fault::Delay(d) => Box::pin(async move {
                tokio::time::sleep(d).await;
                Ok(ok)
            }),
        }
    }
}

impl ThreadStore for FaultyStore {
    fn commit_final(&self, request: CommitRequest) -> CommitFuture {
        self.commit(request)
    }

    fn commit_interrupt(&self, request: CommitRequest) -> CommitFuture {
        self.interrupts.fetch_add(1, Ordering::SeqCst);
        self.commit(request)
    }
}
