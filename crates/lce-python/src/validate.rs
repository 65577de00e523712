//! `lce.RunValidator`, `lce.check` and `lce.Problem`: `lce-validate`'s
//! `RunValidator`, event by event or over a whole run.

use bytes::BytesMut;
use lce::types::{Event, EventParser, EventType, ParseError};
use lce::validate::{Mode, RunValidator, ValidatorOptions, Violation};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::limits::{self, PyLimits};
use crate::{errors, input, shield};

/// The validator's options from the Python arguments.
fn options(
    mode: &str,
    ephemeral: bool,
    window: Option<usize>,
    limits: Option<&PyLimits>,
    exact: bool,
) -> PyResult<ValidatorOptions> {
    let mode = match mode {
        "full" => Mode::Full,
        "adapter" => Mode::Adapter,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown mode `{}` (one of full, adapter)",
                other.escape_debug()
            )));
        }
    };
    let mut options = ValidatorOptions::new()
        .mode(mode)
        .ephemeral(ephemeral)
        .limits(limits::or_default(limits));
    if exact {
        options = options.exact();
    }
    if let Some(n) = window {
        options = options.closed_window(n);
    }
    Ok(options)
}

/// The contract's state machine over one run, fed one event at a time.
///
/// `mode="adapter"` checks what an adapter yields (rule 13 is the
/// coordinator's, D10a); `"full"` checks a finished run. `push` raises
/// `lce.Violation` at the first broken rule (and again on every later
/// call, until `clear_failure`); `finish` raises rule 12 when the run has no
/// terminal. Closed ids are remembered in a window of `window` per kind (256,
/// as the coordinator does).
#[pyclass(name = "RunValidator", module = "lce")]
pub(crate) struct PyRunValidator {
    inner: RunValidator,
    /// Parses the events (consecutive events share their ids).
    parser: EventParser,
    /// Where a `dict` event is written as JSON.
    scratch: BytesMut,
    /// `push_json` calls so far: the position a parse error names.
    pushed_json: u64,
}

impl PyRunValidator {
    /// Checks a parsed event.
    fn check(&mut self, py: Python<'_>, event: &Event) -> PyResult<()> {
        let validator = &mut self.inner;
        let result = shield(|| validator.push(event))?;
        result.map_err(|v| errors::violation(py, &v, None))
    }
}

#[pymethods]
impl PyRunValidator {
    /// A validator for one run.
    #[new]
    #[pyo3(signature = (mode = "adapter", ephemeral = false, *, limits = None, window = None))]
    fn new(
        mode: &str,
        ephemeral: bool,
        limits: Option<PyRef<'_, PyLimits>>,
        window: Option<usize>,
    ) -> PyResult<Self> {
        let options = options(mode, ephemeral, window, limits.as_deref(), false)?;
        Ok(PyRunValidator {
            inner: RunValidator::new(options),
            parser: EventParser::new(),
            scratch: BytesMut::new(),
            pushed_json: 0,
        })
    }

    /// Checks the next event (a `str` or `bytes` JSON line, or a `dict`).
    fn push(&mut self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<()> {
        let (event, _) = input::parse_event(event, &mut self.parser, &mut self.scratch)?;
        self.check(py, &event)
    }

    /// Checks the next event given as the bytes of one JSON line (a final
    /// newline allowed): `push` without the conversion, the fast path for
    /// an adapter that already has its events serialized.
    ///
    /// A line that is not a canonical event raises `lce.ParseError` whose
    /// `line` is the 1-based number of this `push_json` call on the
    /// validator; anything but `bytes` or `bytearray` raises `TypeError`.
    fn push_json(&mut self, py: Python<'_>, line: &Bound<'_, PyAny>) -> PyResult<()> {
        self.pushed_json += 1;
        let parsed = if let Ok(b) = line.cast::<PyBytes>() {
            self.parser.parse_slice(input::strip_line_end(b.as_bytes()))
        } else if let Ok(b) = line.cast::<PyByteArray>() {
            let bytes = b.to_vec();
            self.parser.parse_slice(input::strip_line_end(&bytes))
        } else {
            return Err(PyTypeError::new_err(format!(
                "push_json takes the bytes of one JSON line (bytes or bytearray), not {}",
                line.get_type().name()?
            )));
        };
        let event = parsed.map_err(|e| errors::parse(py, &e.at_line(self.pushed_json)))?;
        self.check(py, &event)
    }

    /// Tells the validator the run ended: rule 12 when it has no terminal.
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        let validator = &mut self.inner;
        let result = shield(|| validator.finish())?;
        result.map_err(|v| errors::violation(py, &v, None))
    }

    /// Forgets the last violation and goes on as if the violating event had
    /// been dropped (D8), as `lce check --all` does.
    fn clear_failure(&mut self) {
        self.inner.clear_failure();
    }

    /// `True` once a run terminal was accepted.
    #[getter]
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// Events accepted so far.
    #[getter]
    fn events(&self) -> u64 {
        self.inner.events()
    }
}

/// What `lce check --all` reports for one problem of a run.
///
/// A broken rule: `rule` is the contract's rule number (`int`), or the name
/// of a check that refines no numbered rule (`"run_identity"`); `kind` is
/// `"violation"`. A line that is not a canonical event: `rule` is
/// `"parse"`, `kind` the parse error's kind (`"syntax"`, ...), `sequence`
/// `None`. `message` is payload-free; `str(problem)` is `lce check`'s line
/// without the file name (`LINE: seq S: rule R (name): message`).
#[pyclass(name = "Problem", module = "lce", frozen)]
#[derive(Clone, Debug)]
pub(crate) struct PyProblem {
    /// The 1-based line of the event.
    #[pyo3(get)]
    line: u64,
    /// The event's `sequence` (`None` for a parse error).
    #[pyo3(get)]
    sequence: Option<u64>,
    /// `"violation"`, or the kind of parse error.
    #[pyo3(get)]
    kind: &'static str,
    /// The rule's snake_case name (`"text_span"`), or `"parse"`.
    #[pyo3(get)]
    rule_name: &'static str,
    /// The decision a check refines its rule with (`"D4"`), if any.
    #[pyo3(get)]
    decision: Option<&'static str>,
    /// The type of the event (`None` for a parse error and an empty run).
    #[pyo3(get)]
    event_type: Option<&'static str>,
    /// The payload-free explanation.
    #[pyo3(get)]
    message: String,
    /// The rule number, when the rule has one.
    number: Option<u8>,
    /// `lce check`'s text for the problem, after `LINE: `.
    text: String,
}

impl PyProblem {
    fn violation(line: u64, v: &Violation) -> Self {
        PyProblem {
            line,
            sequence: Some(v.sequence),
            kind: "violation",
            rule_name: v.rule.name(),
            decision: v.rule.decision(),
            event_type: v.event_type.map(EventType::as_str),
            message: v.message.clone(),
            number: v.rule.number(),
            text: v.to_string(),
        }
    }

    fn parse(e: &ParseError) -> Self {
        let message = errors::without_line(e);
        PyProblem {
            line: e.line.unwrap_or(0),
            sequence: None,
            kind: e.kind.as_str(),
            rule_name: "parse",
            decision: None,
            event_type: None,
            text: message.clone(),
            message,
            number: None,
        }
    }
}

#[pymethods]
impl PyProblem {
    /// The rule number (`int`), the name of an unnumbered check, or
    /// `"parse"`.
    #[getter]
    fn rule<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.number {
            Some(n) => n.into_pyobject(py)?.into_any(),
            None => self.rule_name.into_pyobject(py)?.into_any(),
        })
    }

    fn __str__(&self) -> String {
        format!("{}: {}", self.line, self.text)
    }

    fn __repr__(&self) -> String {
        format!(
            "Problem(line={}, sequence={}, rule={}, kind={:?}, message={:?})",
            self.line,
            self.sequence
                .map_or_else(|| "None".to_owned(), |s| s.to_string()),
            self.number
                .map_or_else(|| format!("{:?}", self.rule_name), |n| n.to_string()),
            self.kind,
            self.message,
        )
    }
}

/// Every problem of one run, as `lce check --all` lists them, in the order
/// of the lines.
///
/// `lines` is an iterable of lines (`str`, `bytes` or `dict` items; a file
/// object works) or one `str`/`bytes` of JSON Lines; it is read lazily and
/// the GIL is released while Rust checks each batch. After a violation the
/// checks go on as if the event had been dropped (D8); after a malformed
/// line only parse errors are reported. Closed ids are remembered exactly
/// unless `window` bounds them (`lce check --window`).
#[pyfunction]
#[pyo3(signature = (lines, *, mode = "full", ephemeral = false, window = None, limits = None))]
pub(crate) fn check(
    py: Python<'_>,
    lines: &Bound<'_, PyAny>,
    mode: &str,
    ephemeral: bool,
    window: Option<usize>,
    limits: Option<PyRef<'_, PyLimits>>,
) -> PyResult<Vec<PyProblem>> {
    let options = options(mode, ephemeral, window, limits.as_deref(), true)?;
    let mut lines = input::PyLines::new(lines)?;
    let problems = py.detach(|| shield(|| check_lines(&mut lines, options)))?;
    if let Some(e) = lines.take_error() {
        return Err(e);
    }
    Ok(problems)
}

/// `lce check --all` over `lines` (crates/lce-cli/src/check.rs).
fn check_lines(lines: &mut input::PyLines, options: ValidatorOptions) -> Vec<PyProblem> {
    let mut validator = RunValidator::new(options);
    let mut problems = Vec::new();
    // The state-machine checks stop at a malformed line.
    let mut validating = true;
    while let Some(item) = lines.next() {
        match item {
            Ok(event) => {
                if validating {
                    if let Err(v) = validator.push(&event) {
                        problems.push(PyProblem::violation(lines.line(), &v));
                        validator.clear_failure();
                    }
                }
            }
            Err(e) => {
                problems.push(PyProblem::parse(&e));
                validating = false;
            }
        }
    }
    if validating {
        if let Err(v) = validator.finish() {
            problems.push(PyProblem::violation(lines.line(), &v));
        }
    }
    problems
}
