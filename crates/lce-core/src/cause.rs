//! What a run or an item broke: a rule, or the step that refused it.

use std::fmt;

use crate::Rule;

/// What a run or an item broke, as `lce_stream::LceError::cause` and
/// [`AuditRecord::rule`](crate::AuditRecord::rule) report it: a rule of the
/// contract, or the step of the pipeline that refused the item.
///
/// Payload-free. Its text ([`as_str`](Self::as_str), also its `Display`) is
/// the stable id that logs, audit records and `lce serve --audit-log` carry:
/// the rule's [`Rule::id`] (`"1"`..`"15"`; a decision's check has the number
/// of the rule it refines, D4's is `"8"`; `"X"` for the run identity), or
/// `"parse"`, `"sanitize"`, `"encode"`, `"io"`, `"log"`. The text of a decision's
/// check does not name the decision; the value does ([`Rule::decision`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// A rule of the contract, or a decision's check of one (the
    /// validator's `Violation::rule`).
    Rule(Rule),
    /// A line or item that is not a canonical event (`LceError::Parse`).
    Parse,
    /// The sanitizer rejected an event (`LceError::Rejected`).
    Sanitize,
    /// An encoder could not write a frame (`LceError::Encode`).
    Encode,
    /// Reading the input failed (`LceError::Io`).
    Io,
    /// The run log refused or failed an operation (the run log's errors, `lce-runlog`).
    Log,
}

impl Cause {
    /// The stable id: [`Rule::id`] for a rule (`"5"`, `"X"`), else
    /// `"parse"`, `"sanitize"`, `"encode"`, `"io"` or `"log"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Rule(rule) => rule.id(),
            Cause::Parse => "parse",
            Cause::Sanitize => "sanitize",
            Cause::Encode => "encode",
            Cause::Io => "io",
            Cause::Log => "log",
        }
    }

    /// The rule, when the cause is one.
    pub fn rule(self) -> Option<Rule> {
        match self {
            Cause::Rule(rule) => Some(rule),
            _ => None,
        }
    }
}

impl From<Rule> for Cause {
    fn from(rule: Rule) -> Self {
        Cause::Rule(rule)
    }
}

/// Writes [`Cause::as_str`].
impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}
