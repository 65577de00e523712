//! The error items a lifecycle stream may carry, and what they broke.

use lce_core::Cause;
use lce_types::{EventType, ParseError};
use lce_wire::EncodeError;

/// Why an item of a lifecycle stream is not an event.
///
/// Every variant is payload-free: it names what was wrong and where
/// (line, sequence, rule), never the event's text. Its message already
/// holds the inner error's, so `source()` is `None`: a report that walks
/// the chain prints each message once.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LceError {
    /// A line of canonical JSON could not be parsed.
    #[error("parse error: {0}")]
    Parse(ParseError),
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
    Violation(lce_validate::Violation),
    /// An encoder could not write a frame.
    #[error("encode error: {0}")]
    Encode(EncodeError),
    /// An I/O error while reading input.
    #[error("I/O error: {0}")]
    Io(std::io::Error),
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

impl From<ParseError> for LceError {
    fn from(e: ParseError) -> Self {
        LceError::Parse(e)
    }
}

impl From<lce_validate::Violation> for LceError {
    fn from(e: lce_validate::Violation) -> Self {
        LceError::Violation(e)
    }
}

impl From<EncodeError> for LceError {
    fn from(e: EncodeError) -> Self {
        LceError::Encode(e)
    }
}

impl From<std::io::Error> for LceError {
    fn from(e: std::io::Error) -> Self {
        LceError::Io(e)
    }
}
