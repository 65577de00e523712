//! Loading [`Limits`] from a TOML or JSON file and `LCE_LIMIT_*` environment
//! variables, with validation (D19: "existing service settings").

use std::fmt;
use std::path::{Path, PathBuf};

use lce_types::{Limits, MAX_OPAQUE_DEPTH, safe_name};

/// Prefix of the environment variables that override a limit:
/// `LCE_LIMIT_<FIELD_NAME_UPPERCASE>`, e.g. `LCE_LIMIT_TOOL_RESULT_BYTES`.
pub(crate) const ENV_PREFIX: &str = "LCE_LIMIT_";

/// Where a limit setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitSource {
    /// A configuration file.
    File(PathBuf),
    /// An environment variable (its name).
    Env(String),
    /// A [`Limits`] value built in code (validation only).
    Value,
}

impl fmt::Display for LimitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitSource::File(p) => write!(f, "file {}", p.display()),
            LimitSource::Env(name) => write!(f, "environment variable {name}"),
            LimitSource::Value => f.write_str("limits value"),
        }
    }
}

/// Why limits could not be loaded. Names the key and the source; never
/// echoes a value (only its length or JSON type).
#[non_exhaustive]
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// The file could not be read.
    #[error("{source_}: cannot read ({kind})")]
    Io {
        /// The file.
        source_: LimitSource,
        /// The I/O error kind.
        kind: std::io::ErrorKind,
    },
    /// The file's extension is neither `.toml` nor `.json`.
    #[error("{source_}: unknown format (use a .toml or .json file)")]
    UnknownFormat {
        /// The file.
        source_: LimitSource,
    },
    /// The file is not valid TOML or JSON, or its top level is not a table.
    #[error("{source_}: syntax error at line {line}: {detail}")]
    Syntax {
        /// The file.
        source_: LimitSource,
        /// 1-based line of the error (0 when unknown).
        line: usize,
        /// A short, value-free explanation.
        detail: String,
    },
    /// A key that names no limit.
    #[error("{source_}: unknown key `{key}`")]
    UnknownKey {
        /// Where.
        source_: LimitSource,
        /// The key (elided when long or unusual).
        key: String,
    },
    /// A value of the wrong type.
    #[error("{source_}: `{key}` must be {expected}, found {found}")]
    WrongType {
        /// Where.
        source_: LimitSource,
        /// The limit's name.
        key: &'static str,
        /// What was expected.
        expected: &'static str,
        /// The JSON/TOML type that was found.
        found: &'static str,
    },
    /// A value of the right type outside its domain.
    #[error("{source_}: `{key}` {reason}")]
    InvalidValue {
        /// Where.
        source_: LimitSource,
        /// The limit's name.
        key: &'static str,
        /// What is wrong (value-free).
        reason: &'static str,
    },
    /// Two limits out of order (e.g. `identifier_bytes` above `display_bytes`).
    #[error("`{smaller}` must not exceed `{larger}`")]
    Inconsistent {
        /// The limit that must be the smaller.
        smaller: &'static str,
        /// Its value.
        smaller_value: u64,
        /// The limit that must be the larger.
        larger: &'static str,
        /// Its value.
        larger_value: u64,
    },
}

#[derive(Clone, Copy)]
enum Slot {
    Usize(fn(&mut Limits) -> &mut usize),
    U64(fn(&mut Limits) -> &mut u64),
    List,
}

/// Every key: its name in files (the env name is derived) and its slot.
const KEYS: &[(&str, Slot)] = &[
    ("identifier_bytes", Slot::Usize(|l| &mut l.identifier_bytes)),
    ("name_bytes", Slot::Usize(|l| &mut l.name_bytes)),
    ("display_bytes", Slot::Usize(|l| &mut l.display_bytes)),
    (
        "tool_arguments_bytes",
        Slot::Usize(|l| &mut l.tool_arguments_bytes),
    ),
    (
        "tool_result_bytes",
        Slot::Usize(|l| &mut l.tool_result_bytes),
    ),
    (
        "warning_details_bytes",
        Slot::Usize(|l| &mut l.warning_details_bytes),
    ),
    (
        "warning_details_depth",
        Slot::Usize(|l| &mut l.warning_details_depth),
    ),
    (
        "warning_details_members",
        Slot::Usize(|l| &mut l.warning_details_members),
    ),
    ("metadata_keys", Slot::Usize(|l| &mut l.metadata_keys)),
    (
        "metadata_value_bytes",
        Slot::Usize(|l| &mut l.metadata_value_bytes),
    ),
    ("metadata_allowlist", Slot::List),
    ("namespace_depth", Slot::Usize(|l| &mut l.namespace_depth)),
    ("events_per_run", Slot::U64(|l| &mut l.events_per_run)),
    ("bytes_per_run", Slot::U64(|l| &mut l.bytes_per_run)),
];

/// A generic scalar view of TOML and JSON values.
enum Val<'a> {
    Int(Option<u64>),
    Str(&'a str),
    List(Vec<Val<'a>>),
    Other(&'static str),
}

fn from_json(v: &serde_json::Value) -> Val<'_> {
    match v {
        serde_json::Value::Number(n) => {
            if n.is_u64() || n.is_i64() {
                Val::Int(n.as_u64())
            } else {
                Val::Other("float")
            }
        }
        serde_json::Value::String(s) => Val::Str(s),
        serde_json::Value::Array(a) => Val::List(a.iter().map(from_json).collect()),
        serde_json::Value::Null => Val::Other("null"),
        serde_json::Value::Bool(_) => Val::Other("boolean"),
        serde_json::Value::Object(_) => Val::Other("object"),
    }
}

fn from_toml(v: &toml::Value) -> Val<'_> {
    match v {
        toml::Value::Integer(i) => Val::Int(u64::try_from(*i).ok()),
        toml::Value::String(s) => Val::Str(s),
        toml::Value::Array(a) => Val::List(a.iter().map(from_toml).collect()),
        toml::Value::Float(_) => Val::Other("float"),
        toml::Value::Boolean(_) => Val::Other("boolean"),
        toml::Value::Datetime(_) => Val::Other("datetime"),
        toml::Value::Table(_) => Val::Other("table"),
    }
}

fn type_name(v: &Val<'_>) -> &'static str {
    match v {
        Val::Int(_) => "integer",
        Val::Str(_) => "string",
        Val::List(_) => "array",
        Val::Other(t) => t,
    }
}

fn lookup(key: &str) -> Option<(&'static str, Slot)> {
    KEYS.iter().find(|(k, _)| *k == key).copied()
}

fn set(
    limits: &mut Limits,
    source: &LimitSource,
    key: &str,
    value: Val<'_>,
) -> Result<(), LimitsError> {
    let Some((name, slot)) = lookup(key) else {
        return Err(LimitsError::UnknownKey {
            source_: source.clone(),
            key: safe_name(key, "key"),
        });
    };
    let wrong = |expected, v: &Val<'_>| LimitsError::WrongType {
        source_: source.clone(),
        key: name,
        expected,
        found: type_name(v),
    };
    let invalid = |reason| LimitsError::InvalidValue {
        source_: source.clone(),
        key: name,
        reason,
    };
    match slot {
        Slot::Usize(f) => match value {
            Val::Int(Some(n)) => {
                *f(limits) = usize::try_from(n).map_err(|_| invalid("is too large"))?;
            }
            Val::Int(None) => return Err(invalid("must not be negative")),
            v => return Err(wrong("a non-negative integer", &v)),
        },
        Slot::U64(f) => match value {
            Val::Int(Some(n)) => *f(limits) = n,
            Val::Int(None) => return Err(invalid("must not be negative")),
            v => return Err(wrong("a non-negative integer", &v)),
        },
        Slot::List => match value {
            Val::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Val::Str(s) => out.push(s.to_owned()),
                        v => return Err(wrong("an array of strings", &v)),
                    }
                }
                limits.metadata_allowlist = out;
            }
            v => return Err(wrong("an array of strings", &v)),
        },
    }
    Ok(())
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()
        .get(..end)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count() + 1)
}

/// A parser message, cut short and stripped of anything but plain text.
fn short_detail(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or("");
    let plain: String = first.chars().filter(|c| !c.is_control()).take(80).collect();
    if plain.is_empty() {
        "invalid syntax".to_owned()
    } else {
        plain
    }
}

/// Applies the settings of a configuration text to `limits`. `format` is
/// `"toml"` or `"json"`; unknown keys are rejected.
pub(crate) fn apply_config_str(
    limits: &mut Limits,
    text: &str,
    format: ConfigFormat,
    source: &LimitSource,
) -> Result<(), LimitsError> {
    match format {
        ConfigFormat::Toml => {
            let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
                // toml's messages name the defect, but may quote a key; keep
                // the first line, short.
                LimitsError::Syntax {
                    source_: source.clone(),
                    line: e.span().map_or(0, |s| line_of(text, s.start)),
                    detail: short_detail(e.message()),
                }
            })?;
            for (k, v) in &table {
                set(limits, source, k, from_toml(v))?;
            }
        }
        ConfigFormat::Json => {
            // Strict first (D17: duplicate keys, lone surrogates).
            if let Err(e) = lce_types::JsonObject::from_json(text) {
                let line = e.offset.map_or(0, |o| line_of(text, o));
                return Err(LimitsError::Syntax {
                    source_: source.clone(),
                    line,
                    detail: format!("{} (the top level must be one JSON object)", e.kind),
                });
            }
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| LimitsError::Syntax {
                    source_: source.clone(),
                    line: e.line(),
                    detail: "invalid JSON".to_owned(),
                })?;
            if let serde_json::Value::Object(map) = &value {
                for (k, v) in map {
                    set(limits, source, k, from_json(v))?;
                }
            }
        }
    }
    Ok(())
}

/// The format of a limits file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConfigFormat {
    /// TOML (`.toml`).
    Toml,
    /// JSON (`.json`).
    Json,
}

impl ConfigFormat {
    /// The format named by a file's extension (`toml` or `json`, any case).
    pub(crate) fn from_path(path: &Path) -> Option<ConfigFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "toml" => Some(ConfigFormat::Toml),
            "json" => Some(ConfigFormat::Json),
            _ => None,
        }
    }
}

/// Applies one environment variable, if it is an `LCE_LIMIT_*` one.
/// Integers are plain ASCII digits; the allowlist is comma-separated
/// (blanks around names are trimmed; an empty value means no key at all).
pub(crate) fn apply_env_var(
    limits: &mut Limits,
    name: &str,
    value: &str,
) -> Result<(), LimitsError> {
    let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
        return Ok(());
    };
    let source = LimitSource::Env(safe_name(name, "key"));
    let key = rest.to_ascii_lowercase();
    if !rest
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(LimitsError::UnknownKey {
            source_: source,
            key: safe_name(name, "key"),
        });
    }
    let Some((key_name, slot)) = lookup(&key) else {
        return Err(LimitsError::UnknownKey {
            source_: source,
            key: safe_name(name, "key"),
        });
    };
    match slot {
        Slot::List => {
            let trimmed = value.trim();
            let items: Vec<Val<'_>> = if trimmed.is_empty() {
                Vec::new()
            } else {
                trimmed.split(',').map(|s| Val::Str(s.trim())).collect()
            };
            if items.iter().any(|v| matches!(v, Val::Str(""))) {
                return Err(LimitsError::InvalidValue {
                    source_: source,
                    key: key_name,
                    reason: "has an empty name in its comma-separated list",
                });
            }
            set(limits, &source, key_name, Val::List(items))
        }
        Slot::Usize(_) | Slot::U64(_) => {
            let v = value.trim();
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(LimitsError::InvalidValue {
                    source_: source,
                    key: key_name,
                    reason: "must be a non-negative decimal integer",
                });
            }
            let n: u64 = v.parse().map_err(|_| LimitsError::InvalidValue {
                source_: source.clone(),
                key: key_name,
                reason: "is too large",
            })?;
            set(limits, &source, key_name, Val::Int(Some(n)))
        }
    }
}

/// Checks a [`Limits`] value: every bound non-zero, and sane ordering
/// (`identifier_bytes` and `name_bytes` at most `display_bytes`; every
/// per-event size at most `bytes_per_run`; `warning_details_depth` at most
/// the parser's opaque depth bound; allowlist names non-empty, plain and
/// unique).
pub fn validate_limits(l: &Limits) -> Result<(), LimitsError> {
    check_non_zero(l)?;
    check_ordering(l)?;
    check_allowlist(l)
}

/// Every bound of `l` is at least 1.
fn check_non_zero(l: &Limits) -> Result<(), LimitsError> {
    let usizes: [(&'static str, usize); 10] = [
        ("identifier_bytes", l.identifier_bytes),
        ("name_bytes", l.name_bytes),
        ("display_bytes", l.display_bytes),
        ("tool_arguments_bytes", l.tool_arguments_bytes),
        ("tool_result_bytes", l.tool_result_bytes),
        ("warning_details_bytes", l.warning_details_bytes),
        ("warning_details_depth", l.warning_details_depth),
        ("warning_details_members", l.warning_details_members),
        ("metadata_keys", l.metadata_keys),
        ("metadata_value_bytes", l.metadata_value_bytes),
    ];
    let zero = |key| LimitsError::InvalidValue {
        source_: LimitSource::Value,
        key,
        reason: "must be at least 1",
    };
    for (k, v) in usizes {
        if v == 0 {
            return Err(zero(k));
        }
    }
    if l.namespace_depth == 0 {
        return Err(zero("namespace_depth"));
    }
    if l.events_per_run == 0 {
        return Err(zero("events_per_run"));
    }
    if l.bytes_per_run == 0 {
        return Err(zero("bytes_per_run"));
    }
    Ok(())
}

/// Every bound of `l` is at most the bound that must hold it: `identifier_bytes`
/// and `name_bytes` at most `display_bytes`, every per-event size at most
/// `bytes_per_run`, `warning_details_depth` at most the parser's opaque depth bound.
fn check_ordering(l: &Limits) -> Result<(), LimitsError> {
    let as64 = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
    let order: [(&'static str, usize, &'static str, u64); 8] = [
        (
            "identifier_bytes",
            l.identifier_bytes,
            "display_bytes",
            as64(l.display_bytes),
        ),
        (
            "name_bytes",
            l.name_bytes,
            "display_bytes",
            as64(l.display_bytes),
        ),
        (
            "display_bytes",
            l.display_bytes,
            "bytes_per_run",
            l.bytes_per_run,
        ),
        (
            "tool_arguments_bytes",
            l.tool_arguments_bytes,
            "bytes_per_run",
            l.bytes_per_run,
        ),
        (
            "tool_result_bytes",
            l.tool_result_bytes,
            "bytes_per_run",
            l.bytes_per_run,
        ),
        (
            "warning_details_bytes",
            l.warning_details_bytes,
            "bytes_per_run",
            l.bytes_per_run,
        ),
        (
            "metadata_value_bytes",
            l.metadata_value_bytes,
            "bytes_per_run",
            l.bytes_per_run,
        ),
        (
            "warning_details_depth",
            l.warning_details_depth,
            "the parser's opaque depth bound",
            as64(MAX_OPAQUE_DEPTH),
        ),
    ];
    for (smaller, sv, larger, lv) in order {
        if as64(sv) > lv {
            return Err(LimitsError::Inconsistent {
                smaller,
                smaller_value: as64(sv),
                larger,
                larger_value: lv,
            });
        }
    }
    Ok(())
}

/// The metadata allowlist's names are non-empty, plain and unique.
fn check_allowlist(l: &Limits) -> Result<(), LimitsError> {
    let bad_list = |reason| LimitsError::InvalidValue {
        source_: LimitSource::Value,
        key: "metadata_allowlist",
        reason,
    };
    for (i, name) in l.metadata_allowlist.iter().enumerate() {
        if name.is_empty() {
            return Err(bad_list("holds an empty name"));
        }
        if name.len() > l.name_bytes || crate::text::contains_forbidden_in_name(name) {
            return Err(bad_list(
                "holds a name longer than name_bytes or with a control character",
            ));
        }
        if l.metadata_allowlist.iter().take(i).any(|n| n == name) {
            return Err(bad_list("holds a name twice"));
        }
    }
    Ok(())
}

/// Loads limits: the D19 defaults, then the file at `path` if given (TOML or
/// JSON by extension, unknown keys rejected), then the `LCE_LIMIT_*`
/// variables of `env` (others are ignored), then [`validate_limits`].
///
/// ```
/// let limits = lce_sanitize::load_limits(
///     None,
///     [("LCE_LIMIT_TOOL_RESULT_BYTES".to_owned(), "1000".to_owned())],
/// ).unwrap();
/// assert_eq!(limits.tool_result_bytes, 1000);
/// ```
pub fn load_limits(
    path: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Limits, LimitsError> {
    let mut limits = Limits::default();
    if let Some(path) = path {
        let source = LimitSource::File(path.to_owned());
        let Some(format) = ConfigFormat::from_path(path) else {
            return Err(LimitsError::UnknownFormat { source_: source });
        };
        let text = std::fs::read_to_string(path).map_err(|e| LimitsError::Io {
            source_: source.clone(),
            kind: e.kind(),
        })?;
        apply_config_str(&mut limits, &text, format, &source)?;
    }
    for (name, value) in env {
        apply_env_var(&mut limits, &name, &value)?;
    }
    validate_limits(&limits)?;
    Ok(limits)
}

/// [`load_limits`] with the process environment (variables whose name or
/// value is not UTF-8 are skipped).
pub fn load_limits_from_process_env(path: Option<&Path>) -> Result<Limits, LimitsError> {
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    load_limits(path, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key is shown when short and plain, else elided to its size.
    #[test]
    fn keys_are_shown_only_when_short_and_plain() {
        for (key, shown) in [
            ("a-b_c.9", "a-b_c.9".to_owned()),
            ("a b", "<3 byte key>".to_owned()),
            ("a/b", "<3 byte key>".to_owned()),
            ("", "<0 byte key>".to_owned()),
            (&"k".repeat(65), "<65 byte key>".to_owned()),
        ] {
            assert_eq!(safe_name(key, "key"), shown, "{key}");
        }
    }

    #[test]
    fn every_field_of_limits_has_a_key() {
        // Each key names a distinct field (the environment variable of a key
        // is `ENV_PREFIX` + its name in upper case): 14, as `Limits` has.
        assert_eq!(KEYS.len(), 14);
    }
}
