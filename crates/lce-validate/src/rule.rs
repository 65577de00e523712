//! The rules a run can break, and the violation report.

use std::fmt;

use lce_types::EventType;

/// A rule of the contract's state machine, or a rule derived from the
/// project's decisions (`shared/spec/decisions.md`).
///
/// [`Rule::id`] is the stable short name used by `lce check --json` and by the
/// `fixtures/invalid/*.expect` files; [`Rule::name`] is a snake_case label.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// 1. `sequence` strictly increases with no duplicates.
    Sequence,
    /// 2. `run.started` is sequence `0` and appears once.
    RunStarted,
    /// 3. Exactly one run terminal appears (here: a second terminal).
    SingleTerminal,
    /// 4. No event follows a run terminal.
    AfterTerminal,
    /// 5. Text/reasoning ids start before delta and finish at most once.
    TextSpan,
    /// 6. Tool ids start before argument/result/error and terminate at most once.
    ToolCall,
    /// 7. A tool cannot both finish and error.
    ToolOutcome,
    /// 8. An interrupt is unique and immediately precedes `run.interrupted`.
    Interrupt,
    /// 9. Namespace enter/exit pairs are balanced.
    NamespaceBalance,
    /// 10. Child events reference an active namespace and delegation call (D1, D2).
    NamespaceActive,
    /// 11. Aggregate limits per run (D19).
    Limits,
    /// 12. The input ended without a run terminal.
    MissingTerminal,
    /// 13. `run.finished` carries a committed `thread_state` (D10, D10a).
    ThreadDurability,
    /// 14. `run.interrupted` names the pending interrupt.
    PendingInterrupt,
    /// 15. `run.error{thread_durability_uncertain}` is final.
    DurabilityUncertain,
    /// D3 (opt-in): sequences are contiguous, without gaps.
    D3Contiguous,
    /// D4: only close events between `interrupt.requested` and `run.interrupted`.
    D4CloseEvents,
    /// D5: what must be closed at each terminal.
    D5OpenSpans,
    /// D6: tool arguments, streamed or given, form one valid JSON object.
    D6Arguments,
    /// The `run_id` or `conversation_id` changed within the run.
    RunIdentity,
}

impl Rule {
    /// Every rule, numbered rules first.
    pub const ALL: &'static [Rule] = &[
        Rule::Sequence,
        Rule::RunStarted,
        Rule::SingleTerminal,
        Rule::AfterTerminal,
        Rule::TextSpan,
        Rule::ToolCall,
        Rule::ToolOutcome,
        Rule::Interrupt,
        Rule::NamespaceBalance,
        Rule::NamespaceActive,
        Rule::Limits,
        Rule::MissingTerminal,
        Rule::ThreadDurability,
        Rule::PendingInterrupt,
        Rule::DurabilityUncertain,
        Rule::D3Contiguous,
        Rule::D4CloseEvents,
        Rule::D5OpenSpans,
        Rule::D6Arguments,
        Rule::RunIdentity,
    ];

    /// The contract's rule number (1-15); `None` for derived rules.
    pub fn number(self) -> Option<u8> {
        Some(match self {
            Rule::Sequence => 1,
            Rule::RunStarted => 2,
            Rule::SingleTerminal => 3,
            Rule::AfterTerminal => 4,
            Rule::TextSpan => 5,
            Rule::ToolCall => 6,
            Rule::ToolOutcome => 7,
            Rule::Interrupt => 8,
            Rule::NamespaceBalance => 9,
            Rule::NamespaceActive => 10,
            Rule::Limits => 11,
            Rule::MissingTerminal => 12,
            Rule::ThreadDurability => 13,
            Rule::PendingInterrupt => 14,
            Rule::DurabilityUncertain => 15,
            Rule::D3Contiguous
            | Rule::D4CloseEvents
            | Rule::D5OpenSpans
            | Rule::D6Arguments
            | Rule::RunIdentity => return None,
        })
    }

    /// The stable id: `"1"`..`"15"`, `"D3"`..`"D6"`, or `"X"` for run identity.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Sequence => "1",
            Rule::RunStarted => "2",
            Rule::SingleTerminal => "3",
            Rule::AfterTerminal => "4",
            Rule::TextSpan => "5",
            Rule::ToolCall => "6",
            Rule::ToolOutcome => "7",
            Rule::Interrupt => "8",
            Rule::NamespaceBalance => "9",
            Rule::NamespaceActive => "10",
            Rule::Limits => "11",
            Rule::MissingTerminal => "12",
            Rule::ThreadDurability => "13",
            Rule::PendingInterrupt => "14",
            Rule::DurabilityUncertain => "15",
            Rule::D3Contiguous => "D3",
            Rule::D4CloseEvents => "D4",
            Rule::D5OpenSpans => "D5",
            Rule::D6Arguments => "D6",
            Rule::RunIdentity => "X",
        }
    }

    /// A snake_case name for messages and reports.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Sequence => "sequence",
            Rule::RunStarted => "run_started",
            Rule::SingleTerminal => "single_terminal",
            Rule::AfterTerminal => "after_terminal",
            Rule::TextSpan => "text_span",
            Rule::ToolCall => "tool_call",
            Rule::ToolOutcome => "tool_outcome",
            Rule::Interrupt => "interrupt",
            Rule::NamespaceBalance => "namespace_balance",
            Rule::NamespaceActive => "namespace_active",
            Rule::Limits => "limits",
            Rule::MissingTerminal => "missing_terminal",
            Rule::ThreadDurability => "thread_durability",
            Rule::PendingInterrupt => "pending_interrupt",
            Rule::DurabilityUncertain => "durability_uncertain",
            Rule::D3Contiguous => "contiguous_sequence",
            Rule::D4CloseEvents => "interrupt_close_events",
            Rule::D5OpenSpans => "open_at_terminal",
            Rule::D6Arguments => "tool_arguments",
            Rule::RunIdentity => "run_identity",
        }
    }

    /// The rule with id `id` (the inverse of [`Rule::id`]).
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {} ({})", self.id(), self.name())
    }
}

/// A broken rule: which rule, at which event, and a short message.
///
/// The message never holds payload text: only event types, identifiers
/// (shortened when long or unusual), member names and sizes.
///
/// Displays as `seq 7: rule 5 (text_span): text.delta for message that was never started`.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("seq {sequence}: {rule}: {message}")]
pub struct Violation {
    /// The rule broken.
    pub rule: Rule,
    /// The `sequence` of the event at which the break was detected (for rule
    /// 12, the last event seen; 0 when there was none).
    pub sequence: u64,
    /// The type of that event; `None` for rule 12 on an empty input.
    pub event_type: Option<EventType>,
    /// A short, payload-free explanation.
    pub message: String,
}

impl Violation {
    /// A violation of `rule` at `sequence`.
    pub fn new(
        rule: Rule,
        sequence: u64,
        event_type: Option<EventType>,
        message: impl Into<String>,
    ) -> Self {
        Violation {
            rule,
            sequence,
            event_type,
            message: message.into(),
        }
    }
}

/// An identifier fit for a message: short plain ids as they are, anything
/// else by its size only (ids are opaque input and may be anything).
pub(crate) fn safe_id(id: &str) -> String {
    if !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'/'))
    {
        format!("`{id}`")
    } else {
        format!("<{} byte id>", id.len())
    }
}
