//! The error items a lifecycle stream may carry, and what they broke.

use std::fmt;

use lce_types::{EventType, ParseError};
use lce_validate::Rule;
use lce_wire::EncodeError;

/// Why an item of a lifecycle stream is not an event.
///
/// Every variant is payload-free: it names what was wrong and where
/// (line, sequence, rule), never the event's text.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LceError {
    /// A line of canonical JSON could not be parsed.
    #[error("parse error: {0}")]
    Parse(#[from] ParseError),
    /// The sanitizer rejected an event.
    #[error("seq {sequence}: {event_type} rejected: {rejection}")]
    Rejected {
        /// The rejected event's sequence.
        sequence: u64,
        /// The rejected event's type.
        event_type: EventType,
        /// What the sanitizer found.
        rejection: lce_sanitize::Rejection,
    },
    /// The event broke a rule of the contract.
    #[error("{0}")]
    Violation(#[from] lce_validate::Violation),
    /// An encoder could not write a frame.
    #[error("encode error: {0}")]
    Encode(#[from] EncodeError),
    /// An I/O error while reading input.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl LceError {
    /// What the item broke, for audit and logs: the rule of the contract for
    /// a violation, else the step that failed. See [`Cause`].
    pub fn cause(&self) -> Cause {
        match self {
            LceError::Parse(_) => Cause::Parse,
            LceError::Rejected { .. } => Cause::Sanitize,
            LceError::Violation(v) => Cause::Rule(v.rule),
            LceError::Encode(_) => Cause::Encode,
            LceError::Io(_) => Cause::Io,
        }
    }

    /// The sequence of the offending event, when known.
    pub fn sequence(&self) -> Option<u64> {
        match self {
            LceError::Violation(v) => Some(v.sequence),
            LceError::Rejected { sequence, .. } => Some(*sequence),
            _ => None,
        }
    }

    /// The type of the offending event, when known.
    pub fn event_type(&self) -> Option<EventType> {
        match self {
            LceError::Violation(v) => v.event_type,
            LceError::Rejected { event_type, .. } => Some(*event_type),
            _ => None,
        }
    }
}

/// What a run or an item broke, as [`LceError::cause`] and
/// [`AuditRecord::rule`](crate::AuditRecord::rule) report it: a rule of the
/// contract, or the step of the pipeline that refused the item.
///
/// Payload-free. Its text ([`as_str`](Self::as_str), also its `Display`) is
/// the stable id that logs, audit records and `lce serve --audit-log` carry:
/// the rule's [`Rule::id`] (`"1"`..`"15"`; a decision's check has the number
/// of the rule it refines, D4's is `"8"`; `"X"` for the run identity), or
/// `"parse"`, `"sanitize"`, `"encode"`, `"io"`. The text of a decision's
/// check does not name the decision; the value does ([`Rule::decision`]).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cause {
    /// A rule of the contract, or a decision's check of one (the
    /// validator's [`Violation::rule`](lce_validate::Violation::rule)).
    Rule(Rule),
    /// A line or item that is not a canonical event ([`LceError::Parse`]).
    Parse,
    /// The sanitizer rejected an event ([`LceError::Rejected`]).
    Sanitize,
    /// An encoder could not write a frame ([`LceError::Encode`]).
    Encode,
    /// Reading the input failed ([`LceError::Io`]).
    Io,
}

impl Cause {
    /// The stable id: [`Rule::id`] for a rule (`"5"`, `"X"`), else
    /// `"parse"`, `"sanitize"`, `"encode"` or `"io"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Rule(rule) => rule.id(),
            Cause::Parse => "parse",
            Cause::Sanitize => "sanitize",
            Cause::Encode => "encode",
            Cause::Io => "io",
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
