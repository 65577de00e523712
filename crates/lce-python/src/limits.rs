//! `lce.Limits`: the D19 bounds, loaded as the CLI loads them.

use std::path::{Path, PathBuf};

use lce::sanitize::{LimitSource, LimitsError as RustLimitsError};
use lce::types::{Limits, safe_name};
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

/// Every limit's name, as `Limits.to_dict()` and the files spell it.
const NAMES: [&str; 14] = [
    "identifier_bytes",
    "name_bytes",
    "display_bytes",
    "tool_arguments_bytes",
    "tool_result_bytes",
    "warning_details_bytes",
    "warning_details_depth",
    "warning_details_members",
    "metadata_keys",
    "metadata_value_bytes",
    "metadata_allowlist",
    "namespace_depth",
    "events_per_run",
    "bytes_per_run",
];

/// The environment variable of a limit: `LCE_LIMIT_` and its name in upper
/// case (`lce-sanitize`'s naming).
fn variable(name: &str) -> String {
    format!("LCE_LIMIT_{}", name.to_ascii_uppercase())
}

/// `keyword argument `name``, the source of a keyword's error.
fn keyword(name: &str) -> String {
    format!("keyword argument `{name}`")
}

/// A keyword value as the text of an `LCE_LIMIT_*` variable, or what is
/// wrong with it: its kind (and Python type), never the value itself.
/// `name` is a limit's name.
fn variable_value(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    let type_name = || {
        value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".to_owned())
    };
    if name == "metadata_allowlist" {
        let not_a_list = || {
            PyTypeError::new_err(format!(
                "{}: not a list of str (a {})",
                keyword(name),
                type_name()
            ))
        };
        if !(value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>()) {
            return Err(not_a_list());
        }
        let mut names = Vec::new();
        for item in value.try_iter()? {
            let item = item?;
            let Ok(item) = item.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "{}: not a list of str (an item is a {})",
                    keyword(name),
                    item.get_type().name()?
                )));
            };
            names.push(item.to_str()?.to_owned());
        }
        if names.iter().any(|n| n.contains(',')) {
            return Err(errors::LimitsError::new_err(format!(
                "{}: a name in the list holds a comma",
                keyword(name)
            )));
        }
        if names.iter().any(|n| n.trim().is_empty()) {
            return Err(errors::LimitsError::new_err(format!(
                "{}: a name in the list is empty",
                keyword(name)
            )));
        }
        return Ok(names.join(","));
    }
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{}: not an integer (a {})",
            keyword(name),
            type_name()
        )));
    }
    if value.lt(0)? {
        return Err(errors::LimitsError::new_err(format!(
            "{}: negative (a limit is a non-negative integer)",
            keyword(name)
        )));
    }
    match value.extract::<u64>() {
        Ok(n) if usize::try_from(n).is_ok() => Ok(n.to_string()),
        _ => Err(errors::LimitsError::new_err(format!(
            "{}: too large",
            keyword(name)
        ))),
    }
}

/// Where each limit of a load came from, to name it in an error.
struct Origins<'a> {
    /// The keyword arguments given (`Limits(...)`).
    keywords: Vec<String>,
    /// The file, and its text when it could be read.
    file: Option<(&'a Path, Option<String>)>,
    /// The `LCE_LIMIT_*` variables given.
    variables: Vec<String>,
}

impl Origins<'_> {
    /// Where the value of limit `name` came from: the last of keyword,
    /// environment variable, file (with the line that sets it, when found),
    /// else the default.
    fn of(&self, name: &str) -> String {
        if self.keywords.iter().any(|k| k == name) {
            return keyword(name);
        }
        let var = variable(name);
        if self.variables.contains(&var) {
            return format!("environment variable {var}");
        }
        if let Some((path, Some(text))) = &self.file {
            if let Some(line) = key_line(path, text, name) {
                return format!("file {}, line {line}", path.display());
            }
        }
        "the default".to_owned()
    }

    /// The error's source with the file's line of `key`, when found.
    fn at(&self, source: &LimitSource, key: &str) -> String {
        match (source, &self.file) {
            (LimitSource::File(p), Some((_, Some(text)))) => match key_line(p, text, key) {
                Some(line) => format!("file {}, line {line}", p.display()),
                None => source.to_string(),
            },
            _ => source.to_string(),
        }
    }
}

/// The 1-based line that sets top-level `key` in a limits file: a TOML
/// line `key = ...` (the key bare or quoted) or `[key]`, or a JSON member
/// `"key":`. A lookup for the message only: the library parsed the file.
fn key_line(path: &Path, text: &str, key: &str) -> Option<usize> {
    let json = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    for (i, line) in text.lines().enumerate() {
        let found = if json {
            let quoted = format!("\"{key}\"");
            line.match_indices(&quoted)
                .any(|(at, _)| line[at + quoted.len()..].trim_start().starts_with(':'))
        } else {
            let line = line.trim_start();
            let rest = ["\"", "'", ""].iter().find_map(|q| {
                let rest = line.strip_prefix(q)?.strip_prefix(key)?;
                rest.strip_prefix(q)
            });
            let table = line
                .strip_prefix('[')
                .and_then(|r| r.trim_start().strip_prefix(key))
                .is_some_and(|r| r.trim_start().starts_with(']'));
            table || rest.is_some_and(|r| r.trim_start().starts_with('='))
        };
        if found {
            return Some(i + 1);
        }
    }
    None
}

/// `lce.LimitsError` for `e`: where (keyword argument, file and line,
/// environment variable) and what, never a value.
fn limits_error(e: &RustLimitsError, origins: &Origins<'_>) -> PyErr {
    let message = match e {
        RustLimitsError::Syntax {
            source_,
            line,
            detail,
        } if *line > 0 => format!("{source_}, line {line}: syntax error: {detail}"),
        RustLimitsError::UnknownKey { source_, key } => match source_ {
            LimitSource::Env(var) => match var.strip_prefix("LCE_LIMIT_") {
                Some(rest) => format!(
                    "environment variable {var}: unknown option `{}`",
                    rest.to_ascii_lowercase()
                ),
                None => format!("environment variable {var}: unknown option"),
            },
            _ => format!("{}: unknown option `{key}`", origins.at(source_, key)),
        },
        RustLimitsError::WrongType {
            source_,
            key,
            expected,
            found,
        } => format!(
            "{}: `{key}` must be {expected}, not {found}",
            origins.at(source_, key)
        ),
        RustLimitsError::InvalidValue {
            source_: LimitSource::Value,
            key,
            reason,
        } => format!("{}: `{key}` {reason}", origins.of(key)),
        RustLimitsError::InvalidValue {
            source_,
            key,
            reason,
        } => format!("{}: `{key}` {reason}", origins.at(source_, key)),
        RustLimitsError::Inconsistent {
            smaller, larger, ..
        } => {
            if NAMES.contains(larger) {
                format!(
                    "{}: `{smaller}` must not exceed `{larger}` (from {})",
                    origins.of(smaller),
                    origins.of(larger)
                )
            } else {
                format!(
                    "{}: `{smaller}` must not exceed {larger}",
                    origins.of(smaller)
                )
            }
        }
        // Io, UnknownFormat, a syntax error without a line: the library's
        // words name the file and the kind.
        other => other.to_string(),
    };
    errors::LimitsError::new_err(message)
}

/// `lce.LimitsError` for the limits of an `lce.Limits` value (checked when
/// it was built, so not raised in practice), without their values.
pub(crate) fn value_error(e: &RustLimitsError) -> PyErr {
    match e {
        RustLimitsError::Inconsistent {
            smaller, larger, ..
        } => errors::LimitsError::new_err(format!(
            "lce.Limits value: `{smaller}` must not exceed `{larger}`"
        )),
        other => errors::LimitsError::new_err(other.to_string()),
    }
}

#[pymethods]
impl PyLimits {
    /// The defaults, with the keyword arguments' overrides.
    #[new]
    #[pyo3(signature = (**overrides))]
    fn new(overrides: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut env = Vec::new();
        let mut keywords = Vec::new();
        if let Some(overrides) = overrides {
            for (key, value) in overrides.iter() {
                let key: String = key.extract()?;
                let Some(name) = NAMES.iter().find(|n| **n == key) else {
                    let shown = safe_name(&key, "name");
                    return Err(errors::LimitsError::new_err(format!(
                        "{}: unknown option `{shown}`",
                        keyword(&shown)
                    )));
                };
                env.push((variable(name), variable_value(name, &value)?));
                keywords.push((*name).to_owned());
            }
        }
        let origins = Origins {
            keywords,
            file: None,
            variables: Vec::new(),
        };
        let inner =
            lce::sanitize::load_limits(None, env).map_err(|e| limits_error(&e, &origins))?;
        Ok(PyLimits { inner })
    }

    /// The defaults, then the file at `path` (TOML or JSON, by extension),
    /// then the `LCE_LIMIT_*` variables: of the process when `env` is
    /// `None`, else of the mapping `env`. Raises `lce.LimitsError`, naming
    /// the file (and the line), the variable or the limit at fault, never a
    /// value.
    #[staticmethod]
    #[pyo3(signature = (path=None, *, env=None))]
    fn load(path: Option<PathBuf>, env: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let vars: Vec<(String, String)> = match env {
            None => std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            Some(env) => {
                let mut vars = Vec::new();
                for item in env.call_method0("items")?.try_iter()? {
                    let (k, v): (String, String) = item?.extract()?;
                    vars.push((k, v));
                }
                vars
            }
        };
        let variables = vars
            .iter()
            .filter(|(k, _)| k.starts_with("LCE_LIMIT_"))
            .map(|(k, _)| k.clone())
            .collect();
        let result = lce::sanitize::load_limits(path.as_deref(), vars);
        let inner = result.map_err(|e| {
            let origins = Origins {
                keywords: Vec::new(),
                file: path
                    .as_deref()
                    .map(|p| (p, std::fs::read_to_string(p).ok())),
                variables,
            };
            limits_error(&e, &origins)
        })?;
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
