//! Plug in your own `ThreadStore`: the coordinator commits the thread state
//! through it before it forwards `run.finished` (rules 13-15), fills
//! `thread_state` from your answer, and turns a failed commit into
//! `run.error{thread_durability_uncertain}`.
//!
//! Run with `cargo run -p lce --example own_store`.
#![allow(clippy::print_stdout, clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::future::BoxFuture;
use lce::prelude::*;
use lce::stream::{CommitError, CommitRequest, Committed};

/// A store that keeps a journal of its commits (a real one would write to a
/// database); it refuses every commit while `read_only` is set.
#[derive(Default)]
struct JournalStore {
    journal: Mutex<Vec<String>>,
    read_only: bool,
}

impl JournalStore {
    fn commit(&self, kind: &str, r: &CommitRequest) -> Result<Committed, CommitError> {
        if self.read_only {
            return Err(CommitError::Failed);
        }
        let mut journal = self.journal.lock().unwrap();
        journal.push(format!("{kind} {} seq {}", r.conversation_id, r.sequence));
        let revision = journal.len() as u64;
        Ok(Committed {
            durable_revision: revision,
            head_ref: format!("journal:{revision}"),
        })
    }
}

impl ThreadStore for JournalStore {
    fn commit_final(&self, r: CommitRequest) -> BoxFuture<'static, Result<Committed, CommitError>> {
        let result = self.commit("final", &r);
        Box::pin(async move { result })
    }

    fn commit_interrupt(
        &self,
        r: CommitRequest,
    ) -> BoxFuture<'static, Result<Committed, CommitError>> {
        let result = self.commit("interrupt", &r);
        Box::pin(async move { result })
    }
}

/// One short run through a coordinator that commits to `store`; returns the
/// terminal the coordinator forwarded.
fn run(store: Arc<JournalStore>) -> Event {
    let event = |seq: u64, ty: &str, data: &str| {
        Event::from_json(&format!(
            r#"{{"version":1,"type":"{ty}","run_id":"run-1","conversation_id":"conv-1","sequence":{seq},"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{data}}}"#
        ))
        .unwrap()
    };
    let adapter = futures::stream::iter([
        event(
            0,
            "run.started",
            r#"{"harness_id":"demo","adapter_version":"1.0.0"}"#,
        ),
        event(1, "run.finished", r#"{"outcome":"success"}"#),
    ]);
    let coordinator = Coordinator::new(CoordinatorOptions::new("run-1", "conv-1")).store(store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let out: Vec<Event> = runtime.block_on(
        lce::stream::events(adapter)
            .enforced(coordinator)
            .map(|r| r.expect("the coordinator yields events"))
            .collect(),
    );
    out.last().cloned().expect("a terminal")
}

fn main() {
    let store = Arc::new(JournalStore::default());
    let terminal = run(store.clone());
    println!("committed run ends with: {}", terminal.to_json());
    println!("journal: {:?}", store.journal.lock().unwrap());
    match &terminal.payload {
        Payload::RunFinished(f) => {
            let state = f.thread_state.as_ref().expect("committed state");
            assert_eq!(state.head_ref, "journal:1", "filled from this store");
        }
        other => unreachable!("a committed run finishes, got {other:?}"),
    }

    let failing = Arc::new(JournalStore {
        read_only: true,
        ..JournalStore::default()
    });
    let terminal = run(failing);
    println!("failed commit ends with: {}", terminal.to_json());
    assert_eq!(terminal.event_type(), EventType::RunError, "rule 15");
}
