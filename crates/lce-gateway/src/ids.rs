//! The ids a client or a harness names, checked at the door (`gateway.md`,
//! "Limits at the door"): before the upstream is called and before anything
//! is written, so that no id reaches a Redis key, a `PUBLISH` payload, an
//! upstream URL or a log line unless it is plain.

use crate::error::ApiError;

/// The longest id taken, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Whether `id` is 1 to [`MAX_ID_BYTES`] bytes of `A-Z a-z 0-9 . _ : @ -`,
/// not starting with `.` (so never `.` or `..`, never a path step, never a
/// `{` or `}` that would break a Redis Cluster hash tag, never a control
/// character that would forge a log line).
pub fn is_valid_id(id: &str) -> bool {
    (1..=MAX_ID_BYTES).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".:_@-".contains(&b))
}

/// `Ok` when `id` is valid, else [`ApiError::InvalidId`] naming `field`.
pub(crate) fn check_id(field: &'static str, id: &str) -> Result<(), ApiError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::InvalidId { field })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_pass_and_everything_else_is_named() {
        for ok in ["c1", "run-7f3a9c01", "a.b_c:d@e-f", "x.", &"r".repeat(256)] {
            assert!(is_valid_id(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "x\nFORGED level=ERROR",
            "}",
            "{tag}",
            "a/b",
            "a b",
            "é",
            "a%2F",
            &"r".repeat(257),
        ] {
            assert!(!is_valid_id(bad), "{bad:?}");
        }
        assert_eq!(
            check_id("conversation_id", ".."),
            Err(ApiError::InvalidId {
                field: "conversation_id"
            })
        );
        assert_eq!(check_id("agent_id", "a"), Ok(()));
    }
}
