//! Events and lines from Python objects.
//!
//! One event is a `str` or `bytes` JSON line (a final newline is allowed),
//! or a `dict`, which is written as `json.dumps` writes it (no spaces,
//! non-ASCII kept: by [`dump`] for the builtin types, by `json.dumps` for
//! anything else) and then parsed like a line: the strict parser (D17) sees
//! the same bytes whatever the form. A `str` that cannot be UTF-8 (lone surrogates)
//! is written with `surrogatepass`, so the parser reports it as invalid
//! UTF-8, as `lce check` does for such a file.
//!
//! Lines are an iterable of such items, or one `str`/`bytes` holding JSON
//! Lines. Each `str`/`bytes` item is one or more complete lines: a final
//! `\n` ends its last line, every other `\n` ends a line (so a file object,
//! a list of lines and the whole text give the same lines). The iterable is
//! read lazily, [`BATCH_ITEMS`] items at a time, with the GIL held only for
//! that, into one buffer per batch; the lines are numbered and parsed by `lce-types`' `LineParser`, the
//! core of `lce check`'s and `lce encode`'s readers.

use bytes::{BufMut, BytesMut};
use lce::types::{DEFAULT_MAX_LINE_BYTES, Event, EventParser, LineParser, ParseError};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyIterator, PyString};

use crate::{dump, errors};

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

/// Appends the bytes of one item (`str`, `bytes`, `bytearray` or `dict`) to
/// `out`; its form.
fn append_item(obj: &Bound<'_, PyAny>, out: &mut BytesMut) -> PyResult<Form> {
    if let Ok(s) = obj.cast::<PyString>() {
        append_str(s, out)?;
        return Ok(Form::Str);
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        out.extend_from_slice(b.as_bytes());
        return Ok(Form::Bytes);
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        out.extend_from_slice(&b.to_vec());
        return Ok(Form::Bytes);
    }
    if obj.is_instance_of::<PyDict>() {
        append_dict(obj, out)?;
        return Ok(Form::Dict);
    }
    Err(not_an_event(obj))
}

/// The `TypeError` for an item that is not an event.
fn not_an_event(obj: &Bound<'_, PyAny>) -> PyErr {
    match obj.get_type().name() {
        Ok(name) => PyTypeError::new_err(format!(
            "an event is a str or bytes JSON line, or a dict, not {name}"
        )),
        Err(e) => e,
    }
}

/// Appends a `dict` as `json.dumps(obj, ensure_ascii=False,
/// separators=(",", ":"))` writes it: written here when it is made of
/// builtin types only ([`dump`]), else by `json.dumps` itself.
fn append_dict(obj: &Bound<'_, PyAny>, out: &mut BytesMut) -> PyResult<()> {
    let start = out.len();
    if dump::write_event(obj, out)? {
        return Ok(());
    }
    out.truncate(start);
    let py = obj.py();
    let json = py.import("json")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("ensure_ascii", false)?;
    kwargs.set_item("separators", (",", ":"))?;
    let text = json.call_method("dumps", (obj,), Some(&kwargs))?;
    append_str(text.cast::<PyString>()?, out)
}

/// Appends a `str` as UTF-8; lone surrogates are written as they are
/// (`surrogatepass`), which the parser rejects as invalid UTF-8.
fn append_str(s: &Bound<'_, PyString>, out: &mut BytesMut) -> PyResult<()> {
    match s.to_str() {
        Ok(s) => out.extend_from_slice(s.as_bytes()),
        Err(_) => {
            let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            out.extend_from_slice(b.cast::<PyBytes>()?.as_bytes());
        }
    }
    Ok(())
}

/// Parses one event from a `str` or `bytes` JSON line or a `dict` with
/// `parser` (which shares the ids of consecutive events), reading a `str`
/// or `bytes` in place and writing a `dict` into `scratch`: the event and
/// the form it came in, or `lce.ParseError`.
pub(crate) fn parse_event(
    obj: &Bound<'_, PyAny>,
    parser: &mut EventParser,
    scratch: &mut BytesMut,
) -> PyResult<(Event, Form)> {
    let parsed = if let Ok(b) = obj.cast::<PyBytes>() {
        (
            parser.parse_slice(strip_line_end(b.as_bytes())),
            Form::Bytes,
        )
    } else if let Some(text) = obj.cast::<PyString>().ok().and_then(|s| s.to_str().ok()) {
        (
            parser.parse_slice(strip_line_end(text.as_bytes())),
            Form::Str,
        )
    } else {
        scratch.clear();
        let form = append_item(obj, scratch)?;
        (parser.parse_slice(strip_line_end(scratch)), form)
    };
    match parsed {
        (Ok(e), form) => Ok((e, form)),
        (Err(e), _) => Err(errors::parse(obj.py(), &e)),
    }
}

/// One event from a `str`/`bytes` line or a `dict`: parsed strictly, or
/// `lce.ParseError`.
pub(crate) fn event(obj: &Bound<'_, PyAny>) -> PyResult<(Event, Form)> {
    parse_event(obj, &mut EventParser::new(), &mut BytesMut::new())
}

/// `bytes` without one final `\n` (or `\r\n`).
pub(crate) fn strip_line_end(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

/// The lines of a Python iterable (or of one `str`/`bytes`), parsed one by
/// one: an `Iterator` of events or parse errors that a Rust loop can drive
/// without the GIL. It takes the GIL only to fetch the next batch of items.
///
/// A batch is one buffer: each item's bytes, followed by a `\n` when they
/// do not end with one (an empty item is one empty line), so the lines of
/// the buffer are the lines of the items.
///
/// An error raised by the iterable (or an item of the wrong type) ends the
/// lines; [`PyLines::take_error`] gives it back, to be raised once the
/// Rust work is done.
pub(crate) struct PyLines {
    /// The iterable's iterator; `None` when exhausted (or never one).
    source: Option<Py<PyIterator>>,
    /// The current batch: complete lines.
    batch: BytesMut,
    /// Where the next line of the batch starts.
    pos: usize,
    parser: LineParser,
    error: Option<PyErr>,
}

impl PyLines {
    /// The lines of `obj`: an iterable of items, or one `str`/`bytes`.
    pub(crate) fn new(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut lines = PyLines {
            source: None,
            batch: BytesMut::new(),
            pos: 0,
            parser: LineParser::new(DEFAULT_MAX_LINE_BYTES),
            error: None,
        };
        if obj.is_instance_of::<PyString>()
            || obj.is_instance_of::<PyBytes>()
            || obj.is_instance_of::<PyByteArray>()
        {
            // The whole text: an empty one has no line (as an empty file).
            append_item(obj, &mut lines.batch)?;
            if !lines.batch.is_empty() {
                end_line(&mut lines.batch, 0);
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

    /// Fetches the next batch of items into the (empty) batch, under the
    /// GIL.
    fn refill(&mut self) {
        let Some(source) = self.source.take() else {
            return;
        };
        let batch = &mut self.batch;
        let (error, exhausted) = Python::attach(|py| {
            let mut iter = source.bind(py).clone();
            let mut items = 0;
            while items < BATCH_ITEMS && batch.len() < BATCH_BYTES {
                match iter.next() {
                    None => return (None, true),
                    Some(Ok(item)) => {
                        let start = batch.len();
                        if let Err(e) = append_item(&item, batch) {
                            batch.truncate(start);
                            return (Some(e), true);
                        }
                        end_line(batch, start);
                        items += 1;
                    }
                    Some(Err(e)) => return (Some(e), true),
                }
            }
            (None, false)
        });
        if let Some(e) = error {
            self.error = Some(e);
        }
        if !exhausted {
            self.source = Some(source);
        }
    }

    /// The range of the next line in the batch, or `None` at the end.
    fn next_line(&mut self) -> Option<std::ops::Range<usize>> {
        if self.pos >= self.batch.len() {
            self.batch.clear();
            self.pos = 0;
            self.refill();
        }
        let rest = self.batch.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let len = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = self.pos..self.pos + len;
        self.pos += len + 1;
        Some(line)
    }
}

/// Ends the item written from `start` on with a `\n`, unless it ends with
/// one already (an empty item becomes one empty line).
fn end_line(batch: &mut BytesMut, start: usize) {
    if batch.len() == start || batch.last() != Some(&b'\n') {
        batch.put_u8(b'\n');
    }
}

impl Iterator for PyLines {
    type Item = Result<Event, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let range = self.next_line()?;
        let line = self.batch.get(range).unwrap_or_default();
        // The bound counts a final `\r`, as `EventLines` does.
        Some(if line.len() > self.parser.max_line_bytes() {
            Err(self.parser.too_long())
        } else {
            self.parser.parse_line(line)
        })
    }
}
