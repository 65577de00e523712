//! Safe logging (target `lce::sanitize`): correlation ids, event type, rule,
//! field and sizes. Never payload text; ids only when they are themselves
//! within bounds and free of control characters.

use lce_types::{Event, Limits};

use crate::sanitize::{CleanReport, Rejection};
use crate::text::contains_forbidden_in_name;

/// The `tracing` target of every record this crate emits.
pub const LOG_TARGET: &str = "lce::sanitize";

/// An id fit for a log line: itself when bounded and plain, else its size.
fn safe_id(s: &str, limits: &Limits) -> String {
    if s.len() <= limits.identifier_bytes && !contains_forbidden_in_name(s) {
        s.to_owned()
    } else {
        format!("<invalid id: {} bytes>", s.len())
    }
}

pub(crate) fn rejected(e: &Event, r: &Rejection, limits: &Limits) {
    tracing::warn!(
        target: LOG_TARGET,
        run_id = ?safe_id(&e.run_id, limits),
        conversation_id = ?safe_id(&e.conversation_id, limits),
        sequence = e.sequence,
        event_type = e.event_type().as_str(),
        rule = r.kind.rule(),
        kind = r.kind.as_str(),
        field = r.field,
        index = r.index.map(crate::sanitize::as_u64),
        size = r.size,
        limit = r.limit,
        "event rejected"
    );
}

pub(crate) fn cleaned(e: &Event, c: &CleanReport, limits: &Limits) {
    tracing::info!(
        target: LOG_TARGET,
        run_id = ?safe_id(&e.run_id, limits),
        conversation_id = ?safe_id(&e.conversation_id, limits),
        sequence = e.sequence,
        event_type = e.event_type().as_str(),
        replaced_chars = c.replaced_chars,
        truncated_fields = c.truncated_fields,
        truncated_bytes = c.truncated_bytes,
        redactions = c.redactions,
        dropped_metadata_keys = c.dropped_metadata_keys,
        dropped_details = c.dropped_details,
        fields = ?c.fields,
        "event cleaned"
    );
}
