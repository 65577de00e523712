//! Events and lines from Python objects.
//!
//! One event is a `str` or `bytes` JSON line (a final newline is allowed),
//! or a `dict`, which is written with `json.dumps` (no spaces, non-ASCII
//! kept) and then parsed like a line: the strict parser (D17) sees the same
//! bytes whatever the form. A `str` that cannot be UTF-8 (lone surrogates)
//! is written with `surrogatepass`, so the parser reports it as invalid
//! UTF-8, as `lce check` does for such a file.
//!
//! Lines are an iterable of such items, or one `str`/`bytes` holding JSON
//! Lines. Each `str`/`bytes` item is one or more complete lines: a final
//! `\n` ends its last line, every other `\n` ends a line (so a file object,
//! a list of lines and the whole text give the same lines). The iterable is
//! read lazily, [`BATCH_ITEMS`] items at a time, with the GIL held only for
//! that; the lines are numbered and parsed by `lce-types`' `LineParser`, the
//! core of `lce check`'s and `lce encode`'s readers.

use std::collections::VecDeque;

use lce::types::{DEFAULT_MAX_LINE_BYTES, Event, LineParser, ParseError};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyIterator, PyString};

use crate::errors;

/// Items taken from a Python iterable per batch (the GIL is taken once per
/// batch).
pub(crate) const BATCH_ITEMS: usize = 1024;

/// Bytes taken from a Python iterable per batch, at most (roughly: a batch
/// ends after the item that reaches it).
const BATCH_BYTES: usize = 4 * 1024 * 1024;

/// The form an event was given in, to give a cleaned event back in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// `str`
    Str,
    /// `bytes` (or `bytearray`)
    Bytes,
    /// `dict`
    Dict,
}

/// The bytes of one item (`str`, `bytes`, `bytearray` or `dict`).
pub(crate) fn item_bytes(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, Form)> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok((str_bytes(s)?, Form::Str));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok((b.as_bytes().to_vec(), Form::Bytes));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok((b.to_vec(), Form::Bytes));
    }
    if obj.is_instance_of::<PyDict>() {
        let json = obj.py().import("json")?;
        let kwargs = PyDict::new(obj.py());
        kwargs.set_item("ensure_ascii", false)?;
        kwargs.set_item("separators", (",", ":"))?;
        let text = json.call_method("dumps", (obj,), Some(&kwargs))?;
        let text = text.cast::<PyString>()?;
        return Ok((str_bytes(text)?, Form::Dict));
    }
    Err(PyTypeError::new_err(format!(
        "an event is a str or bytes JSON line, or a dict, not {}",
        obj.get_type().name()?
    )))
}

/// A `str` as UTF-8; lone surrogates are written as they are
/// (`surrogatepass`), which the parser rejects as invalid UTF-8.
fn str_bytes(s: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    match s.to_str() {
        Ok(s) => Ok(s.as_bytes().to_vec()),
        Err(_) => {
            let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(b.cast::<PyBytes>()?.as_bytes().to_vec())
        }
    }
}

/// One event from a `str`/`bytes` line or a `dict`: parsed strictly, or
/// `lce.ParseError`.
pub(crate) fn event(obj: &Bound<'_, PyAny>) -> PyResult<(Event, Form)> {
    let (bytes, form) = item_bytes(obj)?;
    let line = strip_line_end(&bytes);
    match Event::from_slice(line) {
        Ok(e) => Ok((e, form)),
        Err(e) => Err(errors::parse(obj.py(), &e)),
    }
}

/// `bytes` without one final `\n` (or `\r\n`).
fn strip_line_end(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

/// One item's text, cut into lines as they are asked for.
struct Item {
    bytes: Vec<u8>,
    /// Where the next line starts.
    pos: usize,
    /// Every line of the item was handed out.
    done: bool,
}

impl Item {
    /// The range of the item's next line, `None` when every line was handed
    /// out. A final `\n` ends the last line; an empty item is one empty line.
    fn next_line(&mut self) -> Option<std::ops::Range<usize>> {
        if self.done {
            return None;
        }
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let line = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let line = self.pos..self.pos + i;
                self.pos += i + 1;
                self.done = self.pos >= self.bytes.len();
                line
            }
            None => {
                self.done = true;
                self.pos..self.bytes.len()
            }
        };
        Some(line)
    }
}

/// The lines of a Python iterable (or of one `str`/`bytes`), parsed one by
/// one: an `Iterator` of events or parse errors that a Rust loop can drive
/// without the GIL. It takes the GIL only to fetch the next batch of items.
///
/// An error raised by the iterable (or an item of the wrong type) ends the
/// lines; [`PyLines::take_error`] gives it back, to be raised once the
/// Rust work is done.
pub(crate) struct PyLines {
    /// The iterable's iterator; `None` when exhausted (or never one).
    source: Option<Py<PyIterator>>,
    /// Items fetched and not yet cut into lines.
    items: VecDeque<Vec<u8>>,
    current: Option<Item>,
    parser: LineParser,
    error: Option<PyErr>,
}

impl PyLines {
    /// The lines of `obj`: an iterable of items, or one `str`/`bytes`.
    pub(crate) fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut lines = PyLines {
            source: None,
            items: VecDeque::new(),
            current: None,
            parser: LineParser::new(DEFAULT_MAX_LINE_BYTES),
            error: None,
        };
        if obj.is_instance_of::<PyString>()
            || obj.is_instance_of::<PyBytes>()
            || obj.is_instance_of::<PyByteArray>()
        {
            // The whole text: an empty one has no line (as an empty file).
            let (bytes, _) = item_bytes(obj)?;
            if !bytes.is_empty() {
                lines.items.push_back(bytes);
            }
        } else if obj.is_instance_of::<PyDict>() {
            return Err(PyTypeError::new_err(
                "lines are an iterable of lines (str, bytes or dict), or one str or bytes of JSON Lines, not a dict",
            ));
        } else {
            lines.source = Some(obj.try_iter()?.unbind());
        }
        Ok(lines)
    }

    /// The number of the last line handed out (1-based; 0 before the first).
    pub(crate) fn line(&self) -> u64 {
        self.parser.line()
    }

    /// The error the iterable raised, if it raised one.
    pub(crate) fn take_error(&mut self) -> Option<PyErr> {
        self.error.take()
    }

    /// Fetches the next batch of items, under the GIL.
    fn refill(&mut self) {
        let Some(source) = self.source.take() else {
            return;
        };
        let (items, error, exhausted) = &mut Python::attach(|py| {
            let mut iter = source.bind(py).clone();
            let mut items = VecDeque::new();
            let mut bytes = 0;
            while items.len() < BATCH_ITEMS && bytes < BATCH_BYTES {
                match iter.next() {
                    None => return (items, None, true),
                    Some(Ok(item)) => match item_bytes(&item) {
                        Ok((b, _)) => {
                            bytes += b.len();
                            items.push_back(b);
                        }
                        Err(e) => return (items, Some(e), true),
                    },
                    Some(Err(e)) => return (items, Some(e), true),
                }
            }
            (items, None, false)
        });
        self.items.append(items);
        if let Some(e) = error.take() {
            self.error = Some(e);
        }
        if !*exhausted {
            self.source = Some(source);
        }
    }

    /// The range of the next line in the current item, or `None` at the
    /// end.
    fn next_line(&mut self) -> Option<std::ops::Range<usize>> {
        loop {
            if let Some(line) = self.current.as_mut().and_then(Item::next_line) {
                return Some(line);
            }
            if self.items.is_empty() {
                self.refill();
            }
            let bytes = self.items.pop_front()?;
            self.current = Some(Item {
                bytes,
                pos: 0,
                done: false,
            });
        }
    }
}

impl Iterator for PyLines {
    type Item = Result<Event, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let range = self.next_line()?;
        let item = self.current.as_ref()?;
        let line = item.bytes.get(range).unwrap_or_default();
        // The bound counts a final `\r`, as `EventLines` does.
        Some(if line.len() > self.parser.max_line_bytes() {
            Err(self.parser.too_long())
        } else {
            self.parser.parse_line(line)
        })
    }
}
