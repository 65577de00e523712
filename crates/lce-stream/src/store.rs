//! Thread-state commits (D10, rules 13-15): the in-memory store (the
//! trait and its types are `lce-core`'s).

use std::collections::HashMap;
use std::sync::Mutex;

use lce_core::{CommitError, CommitFuture, CommitRequest, Committed, ThreadStore};

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
    fn commit_final(&self, request: CommitRequest) -> CommitFuture {
        let r = self.commit(&request);
        Box::pin(async move { r })
    }

    fn commit_interrupt(&self, request: CommitRequest) -> CommitFuture {
        let r = self.commit(&request);
        Box::pin(async move { r })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn request(conversation_id: &str, interrupt_id: Option<&str>) -> CommitRequest {
        CommitRequest {
            run_id: "r".to_owned(),
            conversation_id: conversation_id.to_owned(),
            sequence: 9,
            interrupt_id: interrupt_id.map(str::to_owned),
        }
    }

    #[test]
    fn revisions_count_up_per_conversation() {
        let store = MemoryStore::new();
        assert_eq!(store.revision("a"), None);
        let first = futures::executor::block_on(store.commit_final(request("a", None))).unwrap();
        assert_eq!(
            first,
            Committed {
                durable_revision: 1,
                head_ref: "mem:a:1".to_owned(),
            }
        );
        let second =
            futures::executor::block_on(store.commit_interrupt(request("a", Some("i")))).unwrap();
        assert_eq!(second.durable_revision, 2);
        futures::executor::block_on(store.commit_final(request("b", None))).unwrap();
        assert_eq!(store.revision("a"), Some(2));
        assert_eq!(store.revision("b"), Some(1));
        assert_eq!(store.revision("c"), None);
    }
}
