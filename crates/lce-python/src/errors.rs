//! The exceptions of the module, and the library's errors as them.
//!
//! `lce.LceError` (a `ValueError`) is the base of every error about the
//! input: `lce.Violation` (a broken rule), `lce.Rejected` (the sanitizer),
//! `lce.ParseError` (a line that is not a canonical event) and
//! `lce.LimitsError` (bounds that cannot be loaded). Each carries the
//! library's payload-free message and the fields of the library's error as
//! attributes; none carries the event's text.

use lce::sanitize::Rejection;
use lce::types::{EventType, ParseError as RustParseError};
use lce::validate::{Rule, Violation as RustViolation};
use pyo3::IntoPyObjectExt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyModule;

pyo3::create_exception!(
    lce,
    LceError,
    PyValueError,
    "The base of every lce error about the input (a ValueError)."
);
pyo3::create_exception!(
    lce,
    Violation,
    LceError,
    "A run broke a rule of the contract: .rule, .sequence, .event_type."
);
pyo3::create_exception!(
    lce,
    Rejected,
    LceError,
    "The sanitizer rejected an event: .kind, .field, .index, .size, .limit."
);
pyo3::create_exception!(
    lce,
    ParseError,
    LceError,
    "A line that is not a canonical event: .kind, .line, .path, .offset."
);
pyo3::create_exception!(
    lce,
    LimitsError,
    LceError,
    "Bounds (D19) that could not be loaded: names the keyword argument, file and line, or environment variable, never a value."
);

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("LceError", py.get_type::<LceError>())?;
    m.add("Violation", py.get_type::<Violation>())?;
    m.add("Rejected", py.get_type::<Rejected>())?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add("LimitsError", py.get_type::<LimitsError>())?;
    Ok(())
}

/// A rule as Python sees it: the contract's rule number as an `int`, or the
/// name of a check that refines no numbered rule (`"run_identity"`).
pub(crate) fn rule_object<'py>(py: Python<'py>, rule: Rule) -> PyResult<Bound<'py, PyAny>> {
    Ok(match rule.number() {
        Some(n) => n.into_pyobject(py)?.into_any(),
        None => rule.name().into_pyobject(py)?.into_any(),
    })
}

/// Sets `name` on an exception instance.
fn set<'py>(
    err: &PyErr,
    py: Python<'py>,
    name: &str,
    value: impl IntoPyObject<'py>,
) -> PyResult<()> {
    // Every exception class of this module keeps a `__dict__`.
    let value = value.into_bound_py_any(py)?;
    err.value(py).setattr(name, value)
}

/// `lce.Violation` for `v`; `line` is the 1-based line of the event, when
/// known.
pub(crate) fn violation(py: Python<'_>, v: &RustViolation, line: Option<u64>) -> PyErr {
    let err = Violation::new_err(v.to_string());
    let filled = (|| -> PyResult<()> {
        set(&err, py, "rule", rule_object(py, v.rule)?)?;
        set(&err, py, "rule_id", v.rule.id())?;
        set(&err, py, "rule_name", v.rule.name())?;
        set(&err, py, "decision", v.rule.decision())?;
        set(&err, py, "sequence", v.sequence)?;
        set(&err, py, "event_type", v.event_type.map(EventType::as_str))?;
        set(&err, py, "line", line)?;
        set(&err, py, "detail", v.message.as_str())
    })();
    filled.err().unwrap_or(err)
}

/// `lce.Rejected` for a rejection of the event at `sequence`, of type
/// `event_type`; the message is `lce-stream`'s (`seq S: TYPE rejected: ...`).
pub(crate) fn rejected(
    py: Python<'_>,
    rejection: Rejection,
    sequence: u64,
    event_type: EventType,
) -> PyErr {
    let (kind, field, index, size, limit) = (
        rejection.kind,
        rejection.field,
        rejection.index,
        rejection.size,
        rejection.limit,
    );
    let message = lce::stream::LceError::Rejected {
        sequence,
        event_type,
        rejection,
    }
    .to_string();
    let err = Rejected::new_err(message);
    let filled = (|| -> PyResult<()> {
        set(&err, py, "kind", kind.as_str())?;
        set(&err, py, "decision", kind.rule())?;
        set(&err, py, "field", field)?;
        set(&err, py, "index", index)?;
        set(&err, py, "size", size)?;
        set(&err, py, "limit", limit)?;
        set(&err, py, "sequence", sequence)?;
        set(&err, py, "event_type", event_type.as_str())
    })();
    filled.err().unwrap_or(err)
}

/// The parse error's text without its `line N:` prefix (the line is an
/// attribute), as `lce check --json` writes it.
pub(crate) fn without_line(e: &RustParseError) -> String {
    let mut e = e.clone();
    e.line = None;
    e.to_string()
}

/// `lce.ParseError` for `e`.
pub(crate) fn parse(py: Python<'_>, e: &RustParseError) -> PyErr {
    let err = ParseError::new_err(e.to_string());
    let filled = (|| -> PyResult<()> {
        set(&err, py, "kind", e.kind.as_str())?;
        set(&err, py, "line", e.line)?;
        set(&err, py, "path", e.path.as_str())?;
        set(&err, py, "offset", e.offset)?;
        set(&err, py, "detail", without_line(e))
    })();
    filled.err().unwrap_or(err)
}

/// `lce.LceError` for an error of the library that is none of the above
/// (an encoder that could not write a frame, an internal failure).
pub(crate) fn other(message: impl Into<String>) -> PyErr {
    LceError::new_err(message.into())
}
