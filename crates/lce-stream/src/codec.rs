//! tokio-util codecs: canonical JSON Lines in, SSE frames back.
//!
//! Both decoders are bounded like `tokio_util::codec::LinesCodec`: a line or
//! frame longer than the bound is reported once as an error, skipped up to its
//! end, and decoding resynchronises on the next one. Memory stays bounded.

use bytes::{Buf, BytesMut};
use lce_types::{Event, LineParser, ParseError};
use tokio_util::codec::Decoder;

/// Decodes canonical JSON Lines into events, one line at a time.
///
/// Every line yields an item: the event, or the [`ParseError`] saying what is
/// wrong with it (with its 1-based line number). Errors are items, not
/// decoder failures, so one bad line never ends the stream; only I/O errors
/// do. It finds the line ends in its buffer; what a line becomes is decided
/// by [`LineParser`], the core it shares with the synchronous
/// [`lce_types::EventLines`], so both readers give the same items for the
/// same bytes.
#[derive(Debug)]
pub struct EventLinesDecoder {
    /// How far the current buffer was already searched for a newline.
    next_index: usize,
    /// Skipping the rest of an over-long line.
    discarding: bool,
    /// Numbering, the bound, `\r\n`, parsing.
    lines: LineParser,
}

impl EventLinesDecoder {
    /// A decoder with [`lce_types::DEFAULT_MAX_LINE_BYTES`].
    pub fn new() -> Self {
        Self::with_max_line_bytes(lce_types::DEFAULT_MAX_LINE_BYTES)
    }

    /// A decoder rejecting lines longer than `max_line_bytes`.
    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        EventLinesDecoder {
            next_index: 0,
            discarding: false,
            lines: LineParser::new(max_line_bytes),
        }
    }
}

impl Default for EventLinesDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for EventLinesDecoder {
    type Item = Result<Event, ParseError>;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        loop {
            let max_line_bytes = self.lines.max_line_bytes();
            let limit = buf.len().min(max_line_bytes.saturating_add(1));
            let found = buf[self.next_index..limit].iter().position(|&b| b == b'\n');
            match (self.discarding, found) {
                (true, Some(i)) => {
                    buf.advance(self.next_index + i + 1);
                    self.next_index = 0;
                    self.discarding = false;
                    // The over-long line was reported when it started.
                }
                (true, None) => {
                    buf.advance(limit);
                    self.next_index = 0;
                    if buf.is_empty() {
                        return Ok(None);
                    }
                }
                (false, Some(i)) => {
                    let end = self.next_index + i;
                    self.next_index = 0;
                    let line = buf.split_to(end + 1);
                    return Ok(Some(self.lines.parse_line(&line[..end])));
                }
                (false, None) if buf.len() > max_line_bytes => {
                    self.discarding = true;
                    self.next_index = 0;
                    return Ok(Some(Err(self.lines.too_long())));
                }
                (false, None) => {
                    self.next_index = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        if self.discarding || buf.is_empty() {
            buf.clear();
            self.discarding = false;
            return Ok(None);
        }
        // A last line without a newline.
        let line = buf.split();
        self.next_index = 0;
        Ok(Some(self.lines.parse_line(&line)))
    }
}

/// Reads canonical JSON Lines from `reader` as a lifecycle stream's items:
/// [`EventLinesDecoder`] driven by tokio-util's `FramedRead`. Every line is
/// one item (an event, or a [`LceError::Parse`](crate::error::LceError::Parse)
/// naming its line); an I/O error is the last item. Start a chain with it
/// through [`source`](crate::source).
pub fn read_event_lines<R>(
    reader: R,
) -> impl futures::Stream<Item = Result<Event, crate::error::LceError>>
where
    R: tokio::io::AsyncRead,
{
    use futures::StreamExt as _;
    tokio_util::codec::FramedRead::new(reader, EventLinesDecoder::new()).map(|item| match item {
        Ok(Ok(event)) => Ok(event),
        Ok(Err(parse)) => Err(crate::error::LceError::Parse(parse)),
        Err(io) => Err(crate::error::LceError::Io(io)),
    })
}

/// One SSE frame as a client sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event:` field, when present.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// `true` when the frame held only comments (a keep-alive).
    pub comment_only: bool,
}

/// Why an SSE frame could not be decoded.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SseDecodeError {
    /// A frame was longer than the bound; it was skipped.
    #[error("SSE frame longer than {max} bytes")]
    FrameTooLong {
        /// The bound.
        max: usize,
    },
    /// A frame was not valid UTF-8.
    #[error("SSE frame is not valid UTF-8")]
    InvalidUtf8,
    /// A line used a CR line ending; our wires use LF only.
    #[error("SSE frame contains a carriage return")]
    CarriageReturn,
    /// An I/O error from the underlying reader.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Decodes `text/event-stream` bytes into frames (LF line endings, as every
/// lce wire writes them), bounded per frame.
///
/// After an error the decoder resynchronises at the next blank line; the
/// error is reported once per bad frame.
#[derive(Debug)]
pub struct SseDecoder {
    max_frame_bytes: usize,
    next_index: usize,
    discarding: bool,
}

/// The default bound on one SSE frame.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;

impl SseDecoder {
    /// A decoder with [`DEFAULT_MAX_FRAME_BYTES`].
    pub fn new() -> Self {
        Self::with_max_frame_bytes(DEFAULT_MAX_FRAME_BYTES)
    }

    /// A decoder rejecting frames longer than `max_frame_bytes`.
    pub fn with_max_frame_bytes(max_frame_bytes: usize) -> Self {
        SseDecoder {
            max_frame_bytes,
            next_index: 0,
            discarding: false,
        }
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

fn find_blank_line(b: &[u8], from: usize) -> Option<usize> {
    // The end of a frame: "\n\n". `from` may point just after a '\n'.
    let start = from.saturating_sub(1);
    b.get(start..)?
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| start + i)
}

fn parse_frame(raw: &[u8]) -> Result<SseFrame, SseDecodeError> {
    if raw.contains(&b'\r') {
        return Err(SseDecodeError::CarriageReturn);
    }
    let text = std::str::from_utf8(raw).map_err(|_| SseDecodeError::InvalidUtf8)?;
    let mut event = None;
    let mut data: Option<String> = None;
    for line in text.split('\n') {
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {} // id, retry and unknown fields carry nothing we use
        }
    }
    let comment_only = event.is_none() && data.is_none();
    Ok(SseFrame {
        event,
        data: data.unwrap_or_default(),
        comment_only,
    })
}

impl Decoder for SseDecoder {
    type Item = SseFrame;
    type Error = SseDecodeError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<SseFrame>, SseDecodeError> {
        loop {
            // Leading newlines between frames carry nothing.
            if !self.discarding {
                let skip = buf.iter().take_while(|&&b| b == b'\n').count();
                if skip > 0 {
                    buf.advance(skip);
                    self.next_index = 0;
                }
            }
            let limit = buf.len().min(self.max_frame_bytes.saturating_add(2));
            let found = find_blank_line(&buf[..limit], self.next_index);
            match (self.discarding, found) {
                (true, Some(i)) => {
                    buf.advance(i + 2);
                    self.next_index = 0;
                    self.discarding = false;
                }
                (true, None) => {
                    // Keep the last byte searched: it may be the first '\n'
                    // of a "\n\n" that straddles the end of the window.
                    let keep = usize::from(limit > 0 && buf[limit - 1] == b'\n');
                    buf.advance(limit.saturating_sub(keep));
                    self.next_index = 0;
                    if buf.len() <= 1 {
                        return Ok(None);
                    }
                }
                (false, Some(i)) => {
                    let frame = buf.split_to(i + 2);
                    self.next_index = 0;
                    return parse_frame(&frame[..i]).map(Some);
                }
                // A frame of `max` bytes is complete at `max + 2` (its
                // "\n\n"): only past `max + 1` bytes without an end is it
                // too long, however the bytes arrived.
                (false, None) if buf.len() > self.max_frame_bytes.saturating_add(1) => {
                    self.discarding = true;
                    self.next_index = 0;
                    return Err(SseDecodeError::FrameTooLong {
                        max: self.max_frame_bytes,
                    });
                }
                (false, None) => {
                    self.next_index = buf.len();
                    return Ok(None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use lce_types::ParseErrorKind;
    use proptest::prelude::*;

    use super::*;

    fn frames(input: &[u8], chunk: usize) -> Vec<Result<SseFrame, String>> {
        let mut d = SseDecoder::with_max_frame_bytes(64);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk.max(1)) {
            buf.extend_from_slice(piece);
            loop {
                match d.decode(&mut buf) {
                    Ok(Some(f)) => out.push(Ok(f)),
                    Ok(None) => break,
                    Err(e) => out.push(Err(e.to_string())),
                }
            }
        }
        out
    }

    #[test]
    fn same_frames_whatever_the_chunking() {
        let input = b"event: content\ndata: {\"text\": \"a\"}\n\n: keep-alive\n\ndata: {}\n\nevent: ping\n\n";
        let whole = frames(input, input.len());
        let frame = |event: Option<&str>, data: &str, comment_only| {
            Ok(SseFrame {
                event: event.map(str::to_owned),
                data: data.to_owned(),
                comment_only,
            })
        };
        // Only a frame with neither `event:` nor `data:` is comment-only.
        assert_eq!(
            whole,
            [
                frame(Some("content"), "{\"text\": \"a\"}", false),
                frame(None, "", true),
                frame(None, "{}", false),
                frame(Some("ping"), "", false),
            ]
        );
        for chunk in 1..input.len() {
            assert_eq!(frames(input, chunk), whole, "chunk {chunk}");
        }
    }

    #[test]
    fn over_long_frames_are_reported_once_and_skipped() {
        let long = format!("data: {}\n\n", "x".repeat(200));
        let input = format!("data: a\n\n{long}data: b\n\n");
        for chunk in [1, 7, 300] {
            let got = frames(input.as_bytes(), chunk);
            assert_eq!(got.len(), 3, "chunk {chunk}: {got:?}");
            assert_eq!(got[0].as_ref().unwrap().data, "a");
            assert!(got[1].is_err());
            assert_eq!(got[2].as_ref().unwrap().data, "b");
        }
    }

    /// The default bound is 4 MiB of frame: a frame of that size is
    /// decoded, one byte more is too long.
    #[test]
    fn the_default_bound_is_four_mebibytes() {
        let mut d = SseDecoder::new();
        let data = "x".repeat(DEFAULT_MAX_FRAME_BYTES - 6);
        let mut buf = BytesMut::from(format!("data: {data}\n\n").as_bytes());
        assert_eq!(
            d.decode(&mut buf).unwrap().map(|f| f.data.len()),
            Some(data.len())
        );
        let mut buf = BytesMut::from(format!("data: {data}x\n\n").as_bytes());
        assert!(matches!(
            d.decode(&mut buf),
            Err(SseDecodeError::FrameTooLong { max: 4_194_304 })
        ));
    }

    /// A frame of exactly the bound, arriving a byte at a time, is
    /// decoded: its first `\n` (one past the bound) is not yet too long.
    #[test]
    fn a_frame_at_the_bound_is_decoded_however_it_arrives() {
        let frame = b"data: ab\n\n";
        let mut d = SseDecoder::with_max_frame_bytes(8);
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for &b in frame {
            buf.extend_from_slice(&[b]);
            if let Some(f) = d.decode(&mut buf).unwrap() {
                got.push(f.data);
            }
        }
        assert_eq!(got, ["ab"]);
    }

    /// While skipping an over-long frame, a call with nothing buffered
    /// (as at the end of input) waits for more.
    #[test]
    fn skipping_with_nothing_buffered_waits() {
        let mut d = SseDecoder::with_max_frame_bytes(8);
        let mut buf = BytesMut::from(&b"data: 0123456789abcdef"[..]);
        assert!(matches!(
            d.decode(&mut buf),
            Err(SseDecodeError::FrameTooLong { max: 8 })
        ));
        assert_eq!(d.decode(&mut buf).unwrap(), None);
        assert!(buf.is_empty(), "{buf:?}");
        assert_eq!(d.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"tail\n\ndata: b\n\n");
        assert_eq!(
            d.decode(&mut buf).unwrap().map(|f| f.data),
            Some("b".to_owned())
        );
    }

    #[test]
    fn lines_decoder_numbers_lines_and_bounds_them() {
        let good = r#"{"version":1,"type":"text.finished","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"message_id":"m"}}"#;
        let input = format!("{good}\n{}\n{good}\r\n{good}", "y".repeat(600));
        let mut d = EventLinesDecoder::with_max_line_bytes(300);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.as_bytes().chunks(13) {
            buf.extend_from_slice(piece);
            while let Some(item) = d.decode(&mut buf).unwrap() {
                out.push(item);
            }
        }
        while let Some(item) = d.decode_eof(&mut buf).unwrap() {
            out.push(item);
        }
        assert_eq!(out.len(), 4, "{out:?}");
        assert!(out[0].is_ok() && out[2].is_ok() && out[3].is_ok());
        let e = out[1].as_ref().unwrap_err();
        assert_eq!((e.kind, e.line), (ParseErrorKind::LineTooLong, Some(2)));
    }

    /// What the async decoder yields for `input` fed in `chunk`-byte pieces.
    fn decoded(input: &[u8], chunk: usize, max: usize) -> Vec<Result<Event, ParseError>> {
        let mut d = EventLinesDecoder::with_max_line_bytes(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(chunk.max(1)) {
            buf.extend_from_slice(piece);
            while let Some(item) = d.decode(&mut buf).unwrap() {
                out.push(item);
            }
        }
        while let Some(item) = d.decode_eof(&mut buf).unwrap() {
            out.push(item);
        }
        out
    }

    /// Lines for the property: valid events, garbage, blank lines, `\r\n`,
    /// lines around the bound.
    fn line() -> impl Strategy<Value = String> {
        let good = r#"{"version":1,"type":"text.finished","run_id":"r","conversation_id":"c","sequence":1,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"message_id":"m"}}"#;
        prop_oneof![
            Just(good.to_owned()),
            Just(format!("{good}\r")),
            Just(String::new()),
            Just("\r".to_owned()),
            "[ -~]{0,40}",
            (150usize..260).prop_map(|n| "z".repeat(n)),
        ]
    }

    proptest! {
        /// One core, two readers: the synchronous `EventLines` and the
        /// tokio-util decoder give the same items for the same bytes,
        /// however the bytes arrive.
        #[test]
        fn both_readers_agree(
            lines in proptest::collection::vec(line(), 0..12),
            final_newline: bool,
            chunk in 1usize..64,
            max in prop_oneof![Just(200usize), Just(4096usize)],
        ) {
            let mut input = lines.join("\n");
            if final_newline && !lines.is_empty() {
                input.push('\n');
            }
            let sync: Vec<Result<Event, ParseError>> =
                lce_types::EventLines::with_max_line_bytes(input.as_bytes(), max)
                    .map(|r| r.unwrap())
                    .collect();
            prop_assert_eq!(decoded(input.as_bytes(), chunk, max), sync);
        }
    }
}
