//! The inspector's memory (`GatewayBuilder::inspector`): a bounded index of
//! the runs this replica drives, with each run's audit record once it ends,
//! kept in this process only while the inspector is on (no run log key, no
//! write per run to the engine), and the encoder that turns a run's log
//! entries into the inspector's table rows.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use lce_core::{AuditRecord, AuditSink, FrameEncoder};
use lce_types::Event;
use lce_wire::EncodeError;

/// How many runs the index keeps; past it the oldest ended run goes first
/// (the oldest open one when none has ended).
pub const INSPECTOR_RUNS: usize = 1000;

/// How many characters of an event's text a row shows.
const EXCERPT_CHARS: usize = 80;

/// The inspector of one gateway: its gate and its index.
pub(crate) struct Inspector {
    /// `Some`: every data request needs `Authorization: Bearer` this.
    pub(crate) token: Option<String>,
    /// Oldest first (the order runs began in).
    runs: Mutex<VecDeque<Entry>>,
}

/// One run of the index.
struct Entry {
    run_id: String,
    conversation_id: String,
    started_ms: u64,
    ended: Option<serde_json::Value>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Inspector {
    /// An inspector whose data requests need `token` (`None`: loopback only).
    pub(crate) fn new(token: Option<String>) -> Inspector {
        Inspector {
            token,
            runs: Mutex::new(VecDeque::new()),
        }
    }

    /// A run this replica begins to drive.
    pub(crate) fn begin(&self, run_id: &str, conversation_id: &str) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        if runs.len() >= INSPECTOR_RUNS {
            let oldest_ended = runs.iter().position(|e| e.ended.is_some()).unwrap_or(0);
            runs.remove(oldest_ended);
        }
        runs.push_back(Entry {
            run_id: run_id.to_owned(),
            conversation_id: conversation_id.to_owned(),
            started_ms: now_ms(),
            ended: None,
        });
    }

    /// A run's audit record (its end): ids, types, codes, counts only.
    fn end(&self, record: &AuditRecord) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        if let Some(entry) = runs.iter_mut().rev().find(|e| e.run_id == record.run_id) {
            let mut ended = crate::audit::audit_json(record);
            // The payload-free words of the stage that refused an event.
            ended["reason"] = serde_json::json!(record.reason);
            entry.ended = Some(ended);
        }
    }

    /// The index: open runs first, then the most recent.
    pub(crate) fn runs_json(&self) -> serde_json::Value {
        let Ok(runs) = self.runs.lock() else {
            return serde_json::json!({"runs": []});
        };
        let mut list: Vec<&Entry> = runs.iter().collect();
        // Stable: within open and ended, the most recent (last begun) first.
        list.reverse();
        list.sort_by_key(|e| e.ended.is_some());
        let runs: Vec<serde_json::Value> = list.iter().map(|e| entry_json(e)).collect();
        serde_json::json!({ "runs": runs, "capacity": INSPECTOR_RUNS })
    }

    /// One run of the index, `None` when it is not (or no longer) there.
    pub(crate) fn run_json(&self, run_id: &str) -> Option<serde_json::Value> {
        let runs = self.runs.lock().ok()?;
        runs.iter()
            .rev()
            .find(|e| e.run_id == run_id)
            .map(entry_json)
    }
}

fn entry_json(e: &Entry) -> serde_json::Value {
    serde_json::json!({
        "run_id": e.run_id,
        "conversation_id": e.conversation_id,
        "started_ms": e.started_ms,
        "open": e.ended.is_none(),
        "ended": e.ended,
    })
}

/// The gateway's audit sink, also recording each run's end in the index.
pub(crate) struct InspectAudit {
    pub(crate) inner: Arc<dyn AuditSink>,
    pub(crate) inspector: Arc<Inspector>,
}

impl AuditSink for InspectAudit {
    fn record(&self, record: &AuditRecord) {
        self.inspector.end(record);
        self.inner.record(record);
    }
}

/// A log entry as one row of the inspector's table: an SSE frame whose
/// data is `{seq, type, namespace, ids, size, text}` (`text`: the first
/// characters of the event's text, if it has any).
#[derive(Debug, Default)]
pub(crate) struct RowEncoder;

impl FrameEncoder for RowEncoder {
    type Error = EncodeError;

    fn encode_frame(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), EncodeError> {
        dst.extend_from_slice(b"data: ");
        dst.extend_from_slice(row(event).to_string().as_bytes());
        dst.extend_from_slice(b"\n\n");
        Ok(())
    }
}

/// What a row shows of `event`.
pub(crate) fn row(event: &Event) -> serde_json::Value {
    let json = event.to_json();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
    let data = &value["data"];
    let mut ids = serde_json::Map::new();
    if let Some(members) = data.as_object() {
        for (k, v) in members {
            if k.ends_with("_id") {
                ids.insert(k.clone(), v.clone());
            }
        }
    }
    let text = ["delta", "message", "result", "prompt", "reason", "code"]
        .iter()
        .find_map(|k| data[*k].as_str())
        .map(|t| t.chars().take(EXCERPT_CHARS).collect::<String>());
    serde_json::json!({
        "seq": event.sequence,
        "type": event.event_type().as_str(),
        "namespace": event.namespace,
        "ids": ids,
        "size": json.len(),
        "text": text,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_index_lists_open_runs_first_and_is_bounded() {
        let inspector = Inspector::new(None);
        for k in 0..INSPECTOR_RUNS + 5 {
            inspector.begin(&format!("run-{k}"), "c");
        }
        let record = AuditRecord {
            run_id: format!("run-{}", INSPECTOR_RUNS + 1),
            conversation_id: "c".to_owned(),
            terminal: lce_types::EventType::RunError,
            sequence: Some(4),
            code: Some("harness_event_invalid".to_owned()),
            side_effect_status: None,
            rule: Some(lce_core::Cause::Rule(lce_core::Rule::TextSpan)),
            reason: Some("seq 3: rule 5 (text_span): ...".to_owned()),
            coordinator_terminal: true,
            counters: Default::default(),
        };
        inspector.end(&record);
        let runs = inspector.runs_json();
        let runs = runs["runs"].as_array().unwrap();
        assert_eq!(runs.len(), INSPECTOR_RUNS);
        // The ended run is last; the most recent open run first.
        assert_eq!(runs[0]["run_id"], format!("run-{}", INSPECTOR_RUNS + 4));
        let last = &runs[INSPECTOR_RUNS - 1];
        assert_eq!(last["ended"]["rule"], "5");
        assert_eq!(last["open"], false);
        assert!(
            inspector.run_json("run-0").is_none(),
            "the oldest went first"
        );
    }
}
