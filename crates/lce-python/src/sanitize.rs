//! `lce.sanitize`: `lce-sanitize`'s `Sanitizer` on one event.

use lce::sanitize::Sanitizer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::input::{self, Form};
use crate::limits::{self, PyLimits};
use crate::{errors, shield};

/// Checks and cleans one event (`docs/sanitation.md`): returns the cleaned
/// event in the form it was given (a `str` or `bytes` line as canonical
/// JSON without a newline; a `dict` as the `json.loads` of that line), or
/// raises `lce.Rejected`. `limits=None` is the defaults (D19), not the
/// environment: pass `lce.Limits.load()` for what the CLI would use.
#[pyfunction]
#[pyo3(signature = (event, limits = None))]
pub(crate) fn sanitize<'py>(
    py: Python<'py>,
    event: &Bound<'py, PyAny>,
    limits: Option<PyRef<'_, PyLimits>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (event, form) = input::event(event)?;
    let sanitizer = Sanitizer::try_new(limits::or_default(limits.as_deref()))
        .map_err(|e| limits::value_error(&e))?;
    let (sequence, event_type) = (event.sequence, event.event_type());
    let cleaned = shield(|| sanitizer.sanitize(event))?
        .map_err(|r| errors::rejected(py, r, sequence, event_type))?;
    let line = cleaned.event.to_json();
    Ok(match form {
        Form::Str => PyString::new(py, &line).into_any(),
        Form::Bytes => PyBytes::new(py, line.as_bytes()).into_any(),
        Form::Dict => py.import("json")?.call_method1("loads", (line,))?,
    })
}
