//! The one error type of this crate.

/// Why a write was refused.
///
/// Messages never include payload text: offsets and kinds only.
#[non_exhaustive]
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum WireError {
    /// A float was NaN or infinite (or a float lexeme overflowed to infinity).
    #[error("non-finite float cannot be written as JSON")]
    NonFinite,
    /// The text given as JSON is not valid JSON.
    #[error("invalid JSON at byte offset {offset}")]
    InvalidJson {
        /// Byte offset into the input where the problem was found.
        offset: usize,
    },
    /// A `\uXXXX` escape named a surrogate that is not part of a valid pair.
    #[error("lone UTF-16 surrogate escape at byte offset {offset}")]
    LoneSurrogate {
        /// Byte offset of the offending `\u` escape in the input.
        offset: usize,
    },
    /// JSON nesting deeper than the bound ([`crate::MAX_OPAQUE_DEPTH`]).
    #[error("JSON nesting too deep")]
    TooDeep,
    /// A hand-placed SSE field (event name, comment) held CR or LF, or the
    /// data part of a frame held a raw CR or LF.
    #[error("CR or LF inside an SSE field")]
    InjectedNewline,
}
