//! The error items a lifecycle stream may carry.

use lce_types::{EventType, ParseError};

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
    Encode(String),
    /// An I/O error while reading input.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl LceError {
    /// The rule id the item broke, for audit and logs: the validator's rule
    /// id (`"1"`..`"15"`, a decision's check with the number of the rule it
    /// refines, `"X"` for run identity), `"parse"`, `"sanitize"`, `"encode"`
    /// or `"io"`.
    pub fn rule_id(&self) -> String {
        match self {
            LceError::Parse(_) => "parse".to_owned(),
            LceError::Rejected { .. } => "sanitize".to_owned(),
            LceError::Violation(v) => v.rule.id().to_owned(),
            LceError::Encode(_) => "encode".to_owned(),
            LceError::Io(_) => "io".to_owned(),
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
