//! [`LastLine`]: a reader that keeps the last line it gave out, so a parse
//! error can be shown in its line (`lce check`'s excerpts).

use std::cell::RefCell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

use crate::DEFAULT_MAX_LINE_BYTES;

/// A reader that keeps a copy of the last line it gave out, so a parse
/// error can be shown in its line. [`EventLines`] reads through
/// `fill_buf`/`consume` and consumes a line to its end before it returns
/// it, so after each `next_line` the [`KeptLine`] holds that line.
#[derive(Debug)]
pub struct LastLine<R> {
    inner: R,
    kept: Rc<RefCell<Kept>>,
}

impl<R: BufRead> LastLine<R> {
    /// Wraps `inner`; the [`KeptLine`] reads what it keeps.
    pub fn new(inner: R) -> (LastLine<R>, KeptLine) {
        let kept = Rc::new(RefCell::new(Kept::default()));
        let handle = KeptLine(kept.clone());
        (LastLine { inner, kept }, handle)
    }
}

/// What a [`LastLine`] kept, read from outside the reader.
#[derive(Debug, Clone)]
pub struct KeptLine(Rc<RefCell<Kept>>);

impl KeptLine {
    /// A copy of the last line given out (a last line without a newline
    /// included), without its line ending; `None` when it was longer than
    /// [`DEFAULT_MAX_LINE_BYTES`] (and a line ending) and not kept.
    pub fn line(&self) -> Option<Vec<u8>> {
        self.0.borrow().line().map(<[u8]>::to_vec)
    }
}

/// The lines a [`LastLine`] keeps.
///
/// Memory is bounded: a line longer than [`EventLines`]' own bound (which
/// it reports as `line_too_long`, unlocated) is not kept.
#[derive(Debug, Default)]
struct Kept {
    /// The line being consumed (no newline seen yet).
    current: Vec<u8>,
    /// `current` outgrew the bound and was dropped.
    overflow: bool,
    /// The last line consumed with its newline.
    last: Vec<u8>,
    last_overflow: bool,
}

/// Bytes of one line kept at most: `EventLines`' bound and a `\r\n`.
const KEEP_MAX: usize = DEFAULT_MAX_LINE_BYTES + 2;

impl Kept {
    /// The last line given out (a last line without a newline included),
    /// without its line ending; `None` when it was too long to keep.
    fn line(&self) -> Option<&[u8]> {
        let (line, overflow) = if self.current.is_empty() && !self.overflow {
            (&self.last, self.last_overflow)
        } else {
            (&self.current, self.overflow)
        };
        if overflow {
            return None;
        }
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }

    /// The line being consumed cannot be kept.
    fn lose(&mut self) {
        self.overflow = true;
        self.current = Vec::new();
    }

    fn keep(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, done) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..=i], true),
                None => (bytes, false),
            };
            if !self.overflow {
                if self.current.len() + part.len() > KEEP_MAX {
                    self.lose();
                } else {
                    self.current.extend_from_slice(part);
                }
            }
            if done {
                // Swap, not take: both buffers keep their capacity.
                std::mem::swap(&mut self.last, &mut self.current);
                self.current.clear();
                self.last_overflow = std::mem::take(&mut self.overflow);
            }
            bytes = &bytes[part.len()..];
        }
    }
}

impl<R: BufRead> Read for LastLine<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LastLine<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // What is consumed was handed out by `fill_buf`, so the inner buffer
        // holds it and this `fill_buf` does no I/O (`BufRead::fill_buf` reads
        // only when the buffer is empty).
        if amt > 0 {
            let mut kept = self.kept.borrow_mut();
            match self.inner.fill_buf() {
                Ok(buf) if buf.len() >= amt => kept.keep(&buf[..amt]),
                // Never with a `BufRead` that keeps its contract; should it
                // happen, the line is not shown rather than shown wrong.
                _ => kept.lose(),
            }
        }
        self.inner.consume(amt);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::EventLines;

    /// Every line `EventLines` reads, as the `LastLine` under it kept it.
    fn kept_lines(input: &[u8], capacity: usize) -> Vec<Option<Vec<u8>>> {
        let (reader, kept) = LastLine::new(io::BufReader::with_capacity(capacity, input));
        let mut lines = EventLines::new(reader);
        let mut out = Vec::new();
        while lines.next_line().unwrap().is_some() {
            out.push(kept.line());
        }
        out
    }

    #[test]
    fn the_last_line_is_kept_whatever_the_buffer() {
        let input = b"{\"a\":1}\nx\r\n\n\xff\xfe two\r\nlast line without newline";
        let want: Vec<Option<Vec<u8>>> = [
            &b"{\"a\":1}"[..],
            b"x",
            b"",
            b"\xff\xfe two",
            b"last line without newline",
        ]
        .iter()
        .map(|l| Some(l.to_vec()))
        .collect();
        for capacity in 1..=input.len() + 1 {
            assert_eq!(kept_lines(input, capacity), want, "capacity {capacity}");
        }
        let mut ended = input.to_vec();
        ended.push(b'\n');
        assert_eq!(kept_lines(&ended, 3), want);
    }

    #[test]
    fn a_line_over_the_bound_is_not_kept() {
        let mut input = vec![b'x'; KEEP_MAX + 1];
        input.extend_from_slice(b"\nnext\n");
        assert_eq!(
            kept_lines(&input, 64 * 1024),
            vec![None, Some(b"next".to_vec())]
        );
    }
}
