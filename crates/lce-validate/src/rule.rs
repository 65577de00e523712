//! The violation report (the rules themselves are `lce_core::Rule`).

use lce_types::EventType;

pub use lce_core::Rule;

/// A broken rule: which rule, at which event, and a short message.
///
/// The message never holds payload text: only event types, identifiers
/// (shortened when long or unusual), member names and sizes.
///
/// Displays as `seq 7: rule 5 (text_span): text.delta for message that was never started`,
/// or, for a decision's check, `seq 5: rule 8 (interrupt_close_events, D4): ...`.
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
    safe_word(id, "id")
}

/// A code (`thread_state.durability`) fit for a message, like [`safe_id`]:
/// `` `pending` ``, or `<N byte code>` when long or unusual.
pub(crate) fn safe_code(code: &str) -> String {
    safe_word(code, "code")
}

fn safe_word(s: &str, what: &str) -> String {
    if !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'/'))
    {
        format!("`{s}`")
    } else {
        format!("<{} byte {what}>", s.len())
    }
}
