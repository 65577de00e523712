//! The audit sinks lce ships: `tracing` and memory (the record and the
//! trait are `lce-core`'s).

use std::sync::Mutex;

use lce_core::{AuditRecord, AuditSink, Cause};

/// The default sink: one `tracing` event at INFO, target `lce::audit`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingAudit;

impl AuditSink for TracingAudit {
    fn record(&self, r: &AuditRecord) {
        tracing::info!(
            target: "lce::audit",
            run_id = %r.run_id,
            conversation_id = %r.conversation_id,
            terminal = r.terminal.as_str(),
            sequence = r.sequence,
            code = r.code.as_deref(),
            side_effect_status = r.side_effect_status.map(|s| s.as_str()),
            rule = r.rule.map(Cause::as_str),
            reason = r.reason.as_deref(),
            coordinator_terminal = r.coordinator_terminal,
            events_in = r.counters.events_in,
            forwarded = r.counters.forwarded,
            dropped = r.counters.dropped,
            empty_deltas = r.counters.empty_deltas,
            after_terminal = r.counters.after_terminal,
            cleaned = r.counters.cleaned,
            "run ended"
        );
    }
}

/// A sink that keeps records in memory (tests, the CLI's summary).
#[derive(Debug, Default)]
pub struct MemoryAudit {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAudit {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The records so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl AuditSink for MemoryAudit {
    fn record(&self, record: &AuditRecord) {
        if let Ok(mut r) = self.records.lock() {
            r.push(record.clone());
        }
    }
}
