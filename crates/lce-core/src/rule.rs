//! The rules a run can break: the contract's, and the decisions' checks.

use std::fmt;

/// A rule of the contract's state machine, or a check of one of the
/// project's decisions (`shared/spec/decisions.md`).
///
/// Every decision that refines a numbered rule reports that rule (decision
/// D4: "every decision reports the contract rule it refines"), with the
/// decision as detail: [`Rule::number`] is the contract's rule number,
/// [`Rule::decision`] the decision, if any. So `tool.started` between
/// `interrupt.requested` and `run.interrupted` is [`Rule::D4CloseEvents`]:
/// rule 8, decision D4. Only the run identity check refines no numbered rule
/// ([`Rule::RunIdentity`], id `X`).
///
/// [`Rule::id`] is the stable short id used by `lce check --json` and by the
/// `fixtures/invalid/*.expect` files (the rule number, or `X`);
/// [`Rule::name`] is a snake_case label, distinct for every variant.
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
    /// Rule 1, D3 (opt-in): sequences are contiguous, without gaps.
    D3Contiguous,
    /// Rule 8, D4: only close events between `interrupt.requested` and
    /// `run.interrupted`.
    D4CloseEvents,
    /// Rule 5, D5: a text or reasoning span still open at `run.finished` or
    /// `run.interrupted`.
    D5OpenText,
    /// Rule 6, D5: a tool call still open at `run.finished`.
    D5OpenTool,
    /// Rule 9, D5: a namespace still active at `run.finished`.
    D5OpenNamespace,
    /// Rule 6, D6: tool arguments, streamed or given, form one valid JSON
    /// object (their aggregate size is rule 11, [`Rule::Limits`]).
    D6Arguments,
    /// The `run_id` or `conversation_id` changed within the run (refines no
    /// numbered rule; id `X`).
    RunIdentity,
}

impl Rule {
    /// Every rule: the contract's rules in order, then the decisions' checks.
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
        Rule::D5OpenText,
        Rule::D5OpenTool,
        Rule::D5OpenNamespace,
        Rule::D6Arguments,
        Rule::RunIdentity,
    ];

    /// The contract's rule number (1-15), also for a decision's check (the
    /// rule it refines); `None` only for [`Rule::RunIdentity`].
    pub fn number(self) -> Option<u8> {
        Some(match self {
            Rule::Sequence | Rule::D3Contiguous => 1,
            Rule::RunStarted => 2,
            Rule::SingleTerminal => 3,
            Rule::AfterTerminal => 4,
            Rule::TextSpan | Rule::D5OpenText => 5,
            Rule::ToolCall | Rule::D5OpenTool | Rule::D6Arguments => 6,
            Rule::ToolOutcome => 7,
            Rule::Interrupt | Rule::D4CloseEvents => 8,
            Rule::NamespaceBalance | Rule::D5OpenNamespace => 9,
            Rule::NamespaceActive => 10,
            Rule::Limits => 11,
            Rule::MissingTerminal => 12,
            Rule::ThreadDurability => 13,
            Rule::PendingInterrupt => 14,
            Rule::DurabilityUncertain => 15,
            Rule::RunIdentity => return None,
        })
    }

    /// The decision (`"D3"`..`"D6"`) whose check this is, refining the rule
    /// [`number`](Self::number); `None` for the contract's rules themselves
    /// and for the run identity.
    pub fn decision(self) -> Option<&'static str> {
        match self {
            Rule::D3Contiguous => Some("D3"),
            Rule::D4CloseEvents => Some("D4"),
            Rule::D5OpenText | Rule::D5OpenTool | Rule::D5OpenNamespace => Some("D5"),
            Rule::D6Arguments => Some("D6"),
            _ => None,
        }
    }

    /// The stable id: the rule number `"1"`..`"15"` (a decision's check has
    /// the number of the rule it refines: D4's is `"8"`), or `"X"` for the
    /// run identity.
    pub fn id(self) -> &'static str {
        const NUMBERS: [&str; 16] = [
            "X", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15",
        ];
        NUMBERS[usize::from(self.number().unwrap_or(0))]
    }

    /// A snake_case name for messages and reports, distinct for every rule.
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
            Rule::D5OpenText => "text_span_open_at_terminal",
            Rule::D5OpenTool => "tool_call_open_at_terminal",
            Rule::D5OpenNamespace => "namespace_open_at_terminal",
            Rule::D6Arguments => "tool_arguments",
            Rule::RunIdentity => "run_identity",
        }
    }

    /// The contract's own rule with id `id` (`"1"`..`"15"`), or the run
    /// identity for `"X"`: the inverse of [`Rule::id`] for the rules that
    /// are no decision's check. A decision's check shares the id of the rule
    /// it refines; find it with [`Rule::from_id_and_decision`].
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::from_id_and_decision(id, None)
    }

    /// The rule with id `id` and decision `decision` (`None` for the
    /// contract's own rule): the inverse of `(`[`Rule::id`]`, `[`Rule::decision`]`)`.
    /// `("8", Some("D4"))` is [`Rule::D4CloseEvents`]; `("6", Some("D5"))`
    /// is [`Rule::D5OpenTool`].
    pub fn from_id_and_decision(id: &str, decision: Option<&str>) -> Option<Rule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.id() == id && r.decision() == decision)
    }

    /// The rule named `name` (the inverse of [`Rule::name`]).
    pub fn from_name(name: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.name() == name)
    }
}

/// `rule 5 (text_span)`; with the decision as detail for a decision's check:
/// `rule 8 (interrupt_close_events, D4)`; `rule X (run_identity)`.
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.decision() {
            Some(d) => write!(f, "rule {} ({}, {d})", self.id(), self.name()),
            None => write!(f, "rule {} ({})", self.id(), self.name()),
        }
    }
}
