//! [`FileAudit`]: audit records as JSON Lines in a file, written off the
//! async path. The coordinator calls [`AuditSink::record`] inside its poll;
//! the record is formatted there (ids, types, codes, counts only) and
//! handed to a writer thread through a bounded queue, so no file I/O ever
//! blocks a runtime worker. A record the queue has no room for is dropped,
//! counted ([`FileAudit::dropped`]) and logged as a safe summary.

use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::thread::JoinHandle;

use lce_core::{AuditRecord, AuditSink};
use lce_stream::TracingAudit;

/// How many records may wait for the writer thread.
pub const AUDIT_QUEUE: usize = 4096;

/// Audit records as JSON Lines appended to a file (one object per run's
/// end), each also logged as `TracingAudit` does.
pub struct FileAudit {
    queue: Mutex<Option<SyncSender<String>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    dropped: AtomicU64,
}

impl std::fmt::Debug for FileAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileAudit")
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl FileAudit {
    /// Opens `path` for appending (creating it) and starts its writer
    /// thread.
    pub fn open(path: &Path) -> std::io::Result<FileAudit> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let (queue, lines) = std::sync::mpsc::sync_channel::<String>(AUDIT_QUEUE);
        let writer = std::thread::Builder::new()
            .name("lce-audit".to_owned())
            .spawn(move || {
                for line in lines {
                    let written = writeln!(file, "{line}").and_then(|()| file.flush());
                    if let Err(e) = written {
                        tracing::error!(target: "lce::audit", error = %e.kind(), "an audit record could not be written");
                    }
                }
            })?;
        Ok(FileAudit {
            queue: Mutex::new(Some(queue)),
            writer: Mutex::new(Some(writer)),
            dropped: AtomicU64::new(0),
        })
    }

    /// Records dropped because the writer fell [`AUDIT_QUEUE`] behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Writes what is queued and stops the writer (records after this are
    /// only logged). Blocks until the file holds every queued record: call
    /// it once the runs have ended, before the process exits.
    pub fn close(&self) {
        if let Ok(mut queue) = self.queue.lock() {
            queue.take();
        }
        let writer = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(writer) = writer {
            let _ = writer.join();
        }
    }
}

impl Drop for FileAudit {
    fn drop(&mut self) {
        self.close();
    }
}

impl AuditSink for FileAudit {
    fn record(&self, record: &AuditRecord) {
        TracingAudit.record(record);
        let line = audit_json(record).to_string();
        let sent = match self.queue.lock() {
            Ok(queue) => match queue.as_ref() {
                Some(queue) => queue.try_send(line),
                None => Err(TrySendError::Disconnected(line)),
            },
            Err(_) => Err(TrySendError::Disconnected(line)),
        };
        if sent.is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(target: "lce::audit", run_id = %record.run_id, dropped, "audit record not written to the file (writer behind or closed)");
        }
    }
}

/// One audit record as a JSON object (ids, types, codes, counts only).
pub fn audit_json(r: &AuditRecord) -> serde_json::Value {
    serde_json::json!({
        "run_id": r.run_id,
        "conversation_id": r.conversation_id,
        "terminal": r.terminal.as_str(),
        "sequence": r.sequence,
        "code": r.code,
        "side_effect_status": r.side_effect_status.map(|s| s.as_str()),
        "rule": r.rule.map(|c| c.as_str()),
        "coordinator_terminal": r.coordinator_terminal,
        "events_in": r.counters.events_in,
        "forwarded": r.counters.forwarded,
        "dropped": r.counters.dropped,
        "empty_deltas": r.counters.empty_deltas,
        "after_terminal": r.counters.after_terminal,
        "cleaned": r.counters.cleaned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(run_id: &str) -> AuditRecord {
        AuditRecord {
            run_id: run_id.to_owned(),
            conversation_id: "conv".to_owned(),
            terminal: lce_types::EventType::RunFinished,
            sequence: Some(3),
            code: None,
            side_effect_status: None,
            rule: None,
            reason: Some("payload-free words".to_owned()),
            coordinator_terminal: false,
            counters: Default::default(),
        }
    }

    #[test]
    fn records_reach_the_file_in_order_once_closed_and_later_ones_are_counted() {
        let dir = std::env::temp_dir().join(format!("lce-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        let audit = FileAudit::open(&path).unwrap();
        for k in 0..100 {
            audit.record(&record(&format!("run-{k}")));
        }
        audit.close();
        let text = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["run_id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            ids,
            (0..100).map(|k| format!("run-{k}")).collect::<Vec<_>>()
        );
        assert!(
            !text.contains("payload-free words"),
            "the reason stays out of the file"
        );
        audit.record(&record("late"));
        assert_eq!(audit.dropped(), 1);
        assert!(format!("{audit:?}").contains("dropped: 1"));
        drop(audit);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
