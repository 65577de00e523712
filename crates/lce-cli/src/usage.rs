//! The one error of the commands that is not about the input's content.

/// A failure that is not about the input's content: bad usage or I/O.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);
