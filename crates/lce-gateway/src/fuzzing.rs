//! Seams for the fuzz harnesses (`lce_testkit::fuzzing`, the `fuzz/`
//! targets, `docs/reliability.md`): private code of this crate reached
//! without a copy. No fuzzing logic lives here (no assertions, no input
//! decoding), and nothing else should call it. Hidden; not a stable API:
//! changed whenever the fuzzing needs it.

use bytes::Bytes;
use futures::Stream;

use crate::upstream::EventStream;

/// How [`HttpUpstream`](crate::HttpUpstream) reads an answer's body of media
/// type `media` (lowercase, without parameters): the events, or `None` for a
/// media type it refuses. `max_line_bytes` bounds each line and SSE frame;
/// an upstream's bound is [`lce_types::DEFAULT_MAX_LINE_BYTES`].
pub fn upstream_body<S, E>(body: S, media: &str, max_line_bytes: usize) -> Option<EventStream>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    crate::upstream::http::read_body(body, media, max_line_bytes)
}

/// The first stage of [`upstream_body`]: the body's bytes as its whole
/// lines are complete (a line over `max_line_bytes` handed on at once, the
/// tail at the body's clean end, nothing after a break).
pub fn upstream_whole_lines<S, E>(
    body: S,
    max_line_bytes: usize,
) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: std::fmt::Display,
{
    crate::upstream::http::whole_lines(body, max_line_bytes)
}
