//! Reading canonical JSON Lines synchronously, one bounded line at a time.
//!
//! The async counterpart (a tokio-util `Decoder`) lives in `lce-stream`;
//! both share [`Event::from_slice`] for the parsing itself.

use std::io::{self, BufRead};

use crate::error::{ParseError, ParseErrorKind};
use crate::event::Event;

/// The default bound on one line: room for the largest event the default
/// limits allow (256 KiB of tool arguments, JSON-escaped) with margin.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Reads events from JSON Lines, numbering lines from 1.
///
/// A line longer than the bound is skipped up to its newline and reported
/// once as [`ParseErrorKind::LineTooLong`]; memory stays bounded by the bound.
/// A final line without a newline is read like any other. `\r\n` endings are
/// accepted.
#[derive(Debug)]
pub struct EventLines<R> {
    reader: R,
    max_line_bytes: usize,
    line: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> EventLines<R> {
    /// Reads from `reader` with the default line bound.
    pub fn new(reader: R) -> Self {
        Self::with_max_line_bytes(reader, DEFAULT_MAX_LINE_BYTES)
    }

    /// Reads from `reader`, rejecting lines longer than `max_line_bytes`.
    pub fn with_max_line_bytes(reader: R, max_line_bytes: usize) -> Self {
        EventLines {
            reader,
            max_line_bytes,
            line: 0,
            buf: Vec::new(),
        }
    }

    /// The number of the last line read (1-based; 0 before the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// Reads the next line; `None` at end of input. I/O errors end reading.
    pub fn next_line(&mut self) -> io::Result<Option<Result<Event, ParseError>>> {
        self.buf.clear();
        let mut too_long = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                if self.buf.is_empty() && !too_long {
                    return Ok(None);
                }
                break;
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > self.max_line_bytes {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            let consumed = done.unwrap_or(available.len());
            self.reader.consume(consumed);
            if done.is_some() {
                break;
            }
        }
        self.line += 1;
        if too_long {
            return Ok(Some(Err(ParseError::new(
                ParseErrorKind::LineTooLong,
                "$",
                format!("line longer than {} bytes", self.max_line_bytes),
            )
            .at_line(self.line))));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(
            Event::from_slice(&self.buf).map_err(|e| e.at_line(self.line)),
        ))
    }
}

impl<R: BufRead> Iterator for EventLines<R> {
    type Item = io::Result<Result<Event, ParseError>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().transpose()
    }
}
