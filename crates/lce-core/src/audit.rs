//! The audit record of every run, and where it goes (D11).

use lce_types::{EventType, SideEffectStatus};

use crate::Cause;

/// Counters of one run, as the coordinator saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunCounters {
    /// Items read from the adapter (events and rejected items).
    pub events_in: u64,
    /// Events forwarded downstream (the terminal included).
    pub forwarded: u64,
    /// Events dropped: after a terminal, after a violation, empty deltas.
    pub dropped: u64,
    /// Of `dropped`, the empty deltas (D7).
    pub empty_deltas: u64,
    /// Of `dropped`, the items read after the terminal was decided (the
    /// adapter's events after its terminal, or the rest drained after a
    /// violation).
    pub after_terminal: u64,
    /// Events the sanitizer changed (replaced characters, truncations, ...).
    pub cleaned: u64,
}

/// How a run ended, for audit and metrics. Payload-free: ids, types, codes,
/// rule numbers and counts only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditRecord {
    /// The run.
    pub run_id: String,
    /// The conversation.
    pub conversation_id: String,
    /// The terminal's type.
    pub terminal: EventType,
    /// The terminal's sequence, when one was emitted.
    pub sequence: Option<u64>,
    /// `run.error` code or `run.cancelled` reason, when there is one.
    pub code: Option<String>,
    /// The side-effect status of an error or cancellation.
    pub side_effect_status: Option<SideEffectStatus>,
    /// When the adapter broke the contract: what it broke, never the
    /// payload. Written as its id ([`Cause::as_str`]): `"12"`, `"6"`, `"X"`,
    /// `"sanitize"`, `"parse"`, `"4"` for events after its own terminal; a
    /// decision's check has the number of the rule it refines (the value
    /// keeps the decision, and `reason` names it).
    pub rule: Option<Cause>,
    /// When the coordinator intervened: what the validator, sanitizer or
    /// parser said, in their payload-free words (`seq 7: rule 5 (...): ...`).
    pub reason: Option<String>,
    /// `true` when the coordinator (not the adapter) decided the terminal.
    pub coordinator_terminal: bool,
    /// The run's counters.
    pub counters: RunCounters,
}

/// Receives every run's audit record, including terminals no wire shows.
pub trait AuditSink: Send + Sync + 'static {
    /// Records one run's end. Called exactly once per run.
    fn record(&self, record: &AuditRecord);
}

/// A shared sink records through what it shares.
impl<T: AuditSink> AuditSink for std::sync::Arc<T> {
    fn record(&self, record: &AuditRecord) {
        (**self).record(record);
    }
}
