//! `lce.Limits`: the D19 bounds, loaded as the CLI loads them.

use std::path::PathBuf;

use lce::types::Limits;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PyString, PyTuple};

use crate::errors;

/// The bounds (D19) that the sanitizer and the validator apply.
///
/// `Limits()` is the defaults; `Limits(tool_result_bytes=1000)` overrides
/// some (each keyword is a limit's name, checked as the `LCE_LIMIT_*`
/// variable of that name would be); `Limits.load(path)` reads a TOML or
/// JSON file and then the `LCE_LIMIT_*` environment variables, exactly as
/// `lce encode --limits FILE` does (`lce_sanitize::load_limits`). Immutable.
#[pyclass(name = "Limits", module = "lce", frozen, eq)]
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PyLimits {
    pub(crate) inner: Limits,
}

/// The environment variable of a limit: `LCE_LIMIT_` and its name in upper
/// case (`lce-sanitize`'s naming).
fn variable(name: &str) -> String {
    format!("LCE_LIMIT_{}", name.to_ascii_uppercase())
}

/// A keyword value as the text of an `LCE_LIMIT_*` variable.
fn variable_value(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "limit `{name}` must be an int, not bool"
        )));
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(value.str()?.to_str()?.to_owned());
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut names = Vec::new();
        for item in value.try_iter()? {
            let item = item?;
            let item = item.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!("limit `{name}` must be a list of str"))
            })?;
            names.push(item.to_str()?.to_owned());
        }
        if names.iter().any(|n| n.contains(',')) {
            return Err(errors::LimitsError::new_err(format!(
                "`{name}`: a name in the list holds a comma"
            )));
        }
        return Ok(names.join(","));
    }
    Err(PyTypeError::new_err(format!(
        "limit `{name}` must be an int (or a list of str for metadata_allowlist)"
    )))
}

#[pymethods]
impl PyLimits {
    /// The defaults, with the keyword arguments' overrides.
    #[new]
    #[pyo3(signature = (**overrides))]
    fn new(overrides: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut env = Vec::new();
        if let Some(overrides) = overrides {
            for (key, value) in overrides.iter() {
                let key: String = key.extract()?;
                env.push((variable(&key), variable_value(&key, &value)?));
            }
        }
        let inner = lce::sanitize::load_limits(None, env).map_err(|e| errors::limits(&e))?;
        Ok(PyLimits { inner })
    }

    /// The defaults, then the file at `path` (TOML or JSON, by extension),
    /// then the `LCE_LIMIT_*` variables: of the process when `env` is
    /// `None`, else of the mapping `env`. Raises `lce.LimitsError`.
    #[staticmethod]
    #[pyo3(signature = (path=None, *, env=None))]
    fn load(path: Option<PathBuf>, env: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let inner = match env {
            None => lce::sanitize::load_limits_from_process_env(path.as_deref()),
            Some(env) => {
                let mut vars = Vec::new();
                for item in env.call_method0("items")?.try_iter()? {
                    let (k, v): (String, String) = item?.extract()?;
                    vars.push((k, v));
                }
                lce::sanitize::load_limits(path.as_deref(), vars)
            }
        }
        .map_err(|e| errors::limits(&e))?;
        Ok(PyLimits { inner })
    }

    /// Every limit by name, as a `dict`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = &self.inner;
        let d = PyDict::new(py);
        d.set_item("identifier_bytes", l.identifier_bytes)?;
        d.set_item("name_bytes", l.name_bytes)?;
        d.set_item("display_bytes", l.display_bytes)?;
        d.set_item("tool_arguments_bytes", l.tool_arguments_bytes)?;
        d.set_item("tool_result_bytes", l.tool_result_bytes)?;
        d.set_item("warning_details_bytes", l.warning_details_bytes)?;
        d.set_item("warning_details_depth", l.warning_details_depth)?;
        d.set_item("warning_details_members", l.warning_details_members)?;
        d.set_item("metadata_keys", l.metadata_keys)?;
        d.set_item("metadata_value_bytes", l.metadata_value_bytes)?;
        d.set_item("metadata_allowlist", l.metadata_allowlist.clone())?;
        d.set_item("namespace_depth", l.namespace_depth)?;
        d.set_item("events_per_run", l.events_per_run)?;
        d.set_item("bytes_per_run", l.bytes_per_run)?;
        Ok(d)
    }

    /// `Limits(...)` with every value.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let d = self.to_dict(py)?;
        let mut parts = Vec::new();
        for (k, v) in d.iter() {
            parts.push(format!("{}={}", k.str()?, v.repr()?));
        }
        Ok(format!("Limits({})", parts.join(", ")))
    }

    /// Identifiers (`run_id`, `message_id`, ...), bytes.
    #[getter]
    fn identifier_bytes(&self) -> usize {
        self.inner.identifier_bytes
    }
    /// Codes, tool names, agent names, bytes.
    #[getter]
    fn name_bytes(&self) -> usize {
        self.inner.name_bytes
    }
    /// Display text per event, bytes.
    #[getter]
    fn display_bytes(&self) -> usize {
        self.inner.display_bytes
    }
    /// Tool arguments per call, bytes.
    #[getter]
    fn tool_arguments_bytes(&self) -> usize {
        self.inner.tool_arguments_bytes
    }
    /// A tool result, bytes.
    #[getter]
    fn tool_result_bytes(&self) -> usize {
        self.inner.tool_result_bytes
    }
    /// Warning `details`, serialized bytes.
    #[getter]
    fn warning_details_bytes(&self) -> usize {
        self.inner.warning_details_bytes
    }
    /// Nesting depth of warning `details`.
    #[getter]
    fn warning_details_depth(&self) -> usize {
        self.inner.warning_details_depth
    }
    /// Members per object in warning `details`.
    #[getter]
    fn warning_details_members(&self) -> usize {
        self.inner.warning_details_members
    }
    /// Keys in `provider.metadata`.
    #[getter]
    fn metadata_keys(&self) -> usize {
        self.inner.metadata_keys
    }
    /// Serialized bytes of one metadata value.
    #[getter]
    fn metadata_value_bytes(&self) -> usize {
        self.inner.metadata_value_bytes
    }
    /// Provider metadata keys that are kept.
    #[getter]
    fn metadata_allowlist(&self) -> Vec<String> {
        self.inner.metadata_allowlist.clone()
    }
    /// Namespace depth.
    #[getter]
    fn namespace_depth(&self) -> usize {
        self.inner.namespace_depth
    }
    /// Events per run.
    #[getter]
    fn events_per_run(&self) -> u64 {
        self.inner.events_per_run
    }
    /// Bytes of canonical JSON per run.
    #[getter]
    fn bytes_per_run(&self) -> u64 {
        self.inner.bytes_per_run
    }
}

/// The limits of an optional `lce.Limits` argument: the defaults for `None`.
pub(crate) fn or_default(limits: Option<&PyLimits>) -> Limits {
    limits.map(|l| l.inner.clone()).unwrap_or_default()
}
