//! The errors of this crate: the byte layer's, and the encoders' (one type
//! for every wire encoder, so a stage driving several need not convert).

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

/// Why an event could not be encoded, by any of the wire encoders. Never
/// holds payload text: the event's sequence and the kind of problem.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// A DA tool start had to go out while its arguments were not one
    /// complete JSON object (a D6 violation upstream).
    #[error("tool call arguments are not one complete JSON object (event sequence {sequence})")]
    IncompleteArguments {
        /// The sequence of the event that released the start (0 from a live
        /// release).
        sequence: u64,
    },
    /// An event kind this encoder does not know (a newer `lce-types`).
    #[error("unsupported event kind (event sequence {sequence})")]
    Unsupported {
        /// The sequence of the event.
        sequence: u64,
    },
    /// The byte layer refused a value (invalid opaque JSON, ...).
    #[error("cannot write event sequence {sequence}: {source}")]
    Wire {
        /// The sequence of the event being encoded.
        sequence: u64,
        /// What the byte layer refused.
        source: WireError,
    },
    /// I/O error from a sink (required by `tokio_util::codec::Encoder`).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
