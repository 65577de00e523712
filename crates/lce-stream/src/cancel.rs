//! Cancellation handles (D11): client request and shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::Context;

use futures::task::AtomicWaker;
use lce_types::CancelReason;

#[derive(Debug, Default)]
struct Shared {
    /// 0 = not cancelled; otherwise 1 + index into `REASONS`.
    state: AtomicU8,
    waker: AtomicWaker,
}

const REASONS: [CancelReason; 4] = [
    CancelReason::ClientRequest,
    CancelReason::Disconnect,
    CancelReason::Shutdown,
    CancelReason::Deadline,
];

/// A handle that cancels one run (or, cloned, many) from anywhere.
///
/// The first `cancel` wins; later calls change nothing. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct CancelHandle {
    shared: Arc<Shared>,
}

impl CancelHandle {
    /// A handle that has not been cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests cancellation with `reason`. Returns `false` when the handle
    /// was already cancelled.
    pub fn cancel(&self, reason: CancelReason) -> bool {
        let code = REASONS
            .iter()
            .position(|r| *r == reason)
            .map_or(1, |i| i as u8 + 1);
        let won = self
            .shared
            .state
            .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if won {
            self.shared.waker.wake();
        }
        won
    }

    /// The reason, once cancelled.
    pub fn reason(&self) -> Option<CancelReason> {
        let code = self.shared.state.load(Ordering::Acquire);
        REASONS.get(usize::from(code).checked_sub(1)?).copied()
    }

    /// Like [`CancelHandle::reason`], and registers the task to be woken on cancel.
    pub(crate) fn poll_reason(&self, cx: &mut Context<'_>) -> Option<CancelReason> {
        if let Some(r) = self.reason() {
            return Some(r);
        }
        self.shared.waker.register(cx.waker());
        self.reason()
    }
}
