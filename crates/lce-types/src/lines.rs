//! Reading canonical JSON Lines synchronously, one bounded line at a time.
//!
//! The async counterpart (a tokio-util `Decoder`) lives in `lce-stream`.
//! Both find line ends in their own kind of buffer and hand each line to the
//! one [`LineParser`]: numbering, the bound, `\r\n`, and parsing with an
//! [`EventParser`], which shares the ids of consecutive events.

use std::io::{self, BufRead};

use crate::error::{ParseError, ParseErrorKind};
use crate::event::{Event, EventParser};

/// The default bound on one line: room for the largest event the default
/// limits allow (256 KiB of tool arguments, JSON-escaped) with margin.
pub const DEFAULT_MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// What a line of canonical JSON Lines becomes, wherever its bytes were
/// read: the part of reading JSON Lines that [`EventLines`] (sync, over a
/// `BufRead`) and `lce_stream::EventLinesDecoder` (tokio-util, over a
/// `BytesMut`) share. They find the line ends; it numbers the lines from 1,
/// drops a `\r` before the `\n`, parses with one [`EventParser`] (consecutive
/// events share their ids) and says what an over-long line is.
#[derive(Debug)]
pub struct LineParser {
    max_line_bytes: usize,
    line: u64,
    parser: EventParser,
}

impl LineParser {
    /// A parser for lines of at most `max_line_bytes` bytes (the `\n`
    /// excluded).
    pub fn new(max_line_bytes: usize) -> Self {
        LineParser {
            max_line_bytes,
            line: 0,
            parser: EventParser::new(),
        }
    }

    /// The bound on one line.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// The number of the last line handed over (1-based; 0 before the
    /// first).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next line, without its `\n` (a final `\r` is dropped here): the
    /// event, or what is wrong with it, located at its line.
    #[inline]
    pub fn parse_line(&mut self, line: &[u8]) -> Result<Event, ParseError> {
        self.line += 1;
        let line = match line {
            [rest @ .., b'\r'] => rest,
            _ => line,
        };
        self.parser
            .parse_slice(line)
            .map_err(|e| e.at_line(self.line))
    }

    /// The next line is longer than the bound (the reader skips it up to
    /// its `\n`): its error, located at its line.
    pub fn too_long(&mut self) -> ParseError {
        self.line += 1;
        ParseError::new(
            ParseErrorKind::LineTooLong,
            "$",
            format!("line longer than {} bytes", self.max_line_bytes),
        )
        .at_line(self.line)
    }
}

/// Reads events from JSON Lines, numbering lines from 1.
///
/// A line longer than the bound is skipped up to its newline and reported
/// once as [`ParseErrorKind::LineTooLong`]; memory stays bounded by the bound.
/// A final line without a newline is read like any other. `\r\n` endings are
/// accepted.
#[derive(Debug)]
pub struct EventLines<R> {
    reader: R,
    buf: Vec<u8>,
    lines: LineParser,
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
            buf: Vec::new(),
            lines: LineParser::new(max_line_bytes),
        }
    }

    /// The number of the last line read (1-based; 0 before the first).
    pub fn line(&self) -> u64 {
        self.lines.line()
    }

    /// Reads the next line; `None` at end of input. I/O errors end reading.
    pub fn next_line(&mut self) -> io::Result<Option<Result<Event, ParseError>>> {
        self.buf.clear();
        // The usual case: the whole line is already buffered; parse it there,
        // without copying it.
        let available = loop {
            match self.reader.fill_buf() {
                Ok(b) => break b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let max_line_bytes = self.lines.max_line_bytes();
        if let Some(i) = crate::fast::find_byte(available, b'\n') {
            if i <= max_line_bytes {
                let parsed = self.lines.parse_line(&available[..i]);
                self.reader.consume(i + 1);
                return Ok(Some(parsed));
            }
        }
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
            let (chunk, done) = match crate::fast::find_byte(available, b'\n') {
                Some(i) => (&available[..i], Some(i + 1)),
                None => (available, None),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > max_line_bytes {
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
        if too_long {
            return Ok(Some(Err(self.lines.too_long())));
        }
        Ok(Some(self.lines.parse_line(&self.buf)))
    }
}

impl<R: BufRead> Iterator for EventLines<R> {
    type Item = io::Result<Result<Event, ParseError>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().transpose()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use proptest::prelude::*;

    use super::*;

    const GOOD: &str = r#"{"version":1,"type":"text.delta","run_id":"r","conversation_id":"c","sequence":3,"timestamp":"2026-08-17T00:00:00Z","namespace":[],"data":{"message_id":"m","delta":"hi"}}"#;

    /// What `EventLines` must yield, computed on the whole input at once.
    fn reference(input: &[u8], max: usize) -> Vec<Result<Event, ParseError>> {
        let mut out = Vec::new();
        let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        for (i, l) in lines.into_iter().enumerate() {
            let n = i as u64 + 1;
            if l.len() > max {
                out.push(Err(ParseError::new(
                    ParseErrorKind::LineTooLong,
                    "$",
                    format!("line longer than {max} bytes"),
                )
                .at_line(n)));
                continue;
            }
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            out.push(Event::from_slice(l).map_err(|e| e.at_line(n)));
        }
        out
    }

    #[test]
    fn consecutive_events_share_their_ids_until_they_change() {
        let other_run = GOOD.replace(r#""run_id":"r""#, r#""run_id":"r2""#);
        let spaced = GOOD.replace(r#""run_id":"r""#, r#""run_id" : "r""#);
        let escaped = GOOD.replace(r#""conversation_id":"c""#, r#""conversation_id":"\u0063""#);
        let input = [GOOD, &spaced, &escaped, &other_run, GOOD].join("\n");
        let events: Vec<Event> = EventLines::new(input.as_bytes())
            .map(|r| r.unwrap().unwrap())
            .collect();
        assert_eq!(events.len(), 5);
        // Same ids, whichever path parsed them (fast canonical, any order,
        // escaped): one allocation.
        for e in &events[1..3] {
            assert!(std::sync::Arc::ptr_eq(&events[0].run_id, &e.run_id));
            assert!(std::sync::Arc::ptr_eq(
                &events[0].conversation_id,
                &e.conversation_id
            ));
        }
        assert_eq!(&*events[3].run_id, "r2");
        assert!(std::sync::Arc::ptr_eq(
            &events[0].conversation_id,
            &events[3].conversation_id
        ));
        assert_eq!(&*events[4].run_id, "r");
        assert!(!std::sync::Arc::ptr_eq(
            &events[0].run_id,
            &events[4].run_id
        ));
        for (e, line) in events
            .iter()
            .zip([GOOD, &spaced, &escaped, &other_run, GOOD])
        {
            assert_eq!(*e, Event::from_json(line).unwrap());
        }
    }

    /// A line's final `\r` is not part of it: an error in a CRLF line is
    /// located as in the same line without it (kept, the `\r` would be
    /// whitespace and move the error).
    #[test]
    fn a_crlf_line_is_parsed_without_its_cr() {
        let cut = GOOD.strip_suffix('}').unwrap();
        let without = LineParser::new(1000)
            .parse_line(cut.as_bytes())
            .unwrap_err();
        let with_cr = LineParser::new(1000)
            .parse_line(format!("{cut}\r").as_bytes())
            .unwrap_err();
        assert_eq!(with_cr, without);
        let raw = Event::from_slice(format!("{cut}\r").as_bytes()).unwrap_err();
        assert_ne!(raw.at_line(1), without, "the CR would move the error");
    }

    /// A reader that is interrupted before each of its reads, as a read
    /// interrupted by a signal is.
    struct Interrupting<'a> {
        inner: &'a [u8],
        interrupt: bool,
    }

    impl io::Read for Interrupting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.interrupt = !self.interrupt;
            if self.interrupt {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = buf.len().min(self.inner.len()).min(7);
            buf[..n].copy_from_slice(&self.inner[..n]);
            self.inner = &self.inner[n..];
            Ok(n)
        }
    }

    /// An interrupted read is tried again; another error ends reading.
    /// `line` counts the lines read.
    #[test]
    fn interrupted_reads_are_tried_again_and_lines_counted() {
        let input = [GOOD, GOOD, GOOD].join("\n");
        let reader = io::BufReader::with_capacity(
            64,
            Interrupting {
                inner: input.as_bytes(),
                interrupt: false,
            },
        );
        let mut lines = EventLines::new(reader);
        assert_eq!(lines.line(), 0);
        for n in 1..=3 {
            let event = lines.next_line().unwrap().unwrap().unwrap();
            assert_eq!(event, Event::from_json(GOOD).unwrap());
            assert_eq!(lines.line(), n);
        }
        assert!(lines.next_line().unwrap().is_none());

        struct Failing;
        impl io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
        }
        let mut lines = EventLines::new(io::BufReader::new(Failing));
        assert_eq!(
            lines.next_line().map_err(|e| e.kind()).err(),
            Some(io::ErrorKind::BrokenPipe)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn lines_match_a_whole_input_split(
            kinds in proptest::collection::vec(0..5u8, 0..12),
            crlf in any::<bool>(),
            final_newline in any::<bool>(),
            capacity in 1usize..400,
            max in prop::sample::select(vec![10usize, 169, 170, 171, 172, 1000]),
        ) {
            let end = if crlf { "\r\n" } else { "\n" };
            let lines: Vec<String> = kinds
                .iter()
                .map(|k| match k {
                    0 => GOOD.to_owned(),
                    1 => String::new(),
                    2 => "x".repeat(300),
                    3 => format!(" {GOOD} "),
                    _ => GOOD.replace("hi", "h\\u00e9"),
                })
                .collect();
            let mut input = lines.join(end);
            if final_newline && !lines.is_empty() {
                input.push_str(end);
            }
            let reader = std::io::BufReader::with_capacity(capacity, input.as_bytes());
            let got: Vec<_> = EventLines::with_max_line_bytes(reader, max)
                .map(|r| r.unwrap())
                .collect();
            prop_assert_eq!(got, reference(input.as_bytes(), max));
        }
    }
}
