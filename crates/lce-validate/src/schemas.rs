//! The "ToolBroker" schemas (D6): one JSON Schema 2020-12 per tool name.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::rule::safe_id;

/// The suffix of a schema file in a schema directory: `<tool_name>.schema.json`.
pub const SCHEMA_FILE_SUFFIX: &str = ".schema.json";

/// Why a schema could not be registered.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The schema text is not JSON.
    #[error("schema for tool {tool}: not valid JSON: {detail}")]
    Json {
        /// The tool name (shortened when unusual).
        tool: String,
        /// What the JSON parser reported.
        detail: String,
    },
    /// The JSON is not a valid JSON Schema 2020-12 document (or references a
    /// resource that cannot be resolved: remote and file references are not
    /// fetched).
    #[error("schema for tool {tool}: not a usable JSON Schema 2020-12: {detail}")]
    Invalid {
        /// The tool name (shortened when unusual).
        tool: String,
        /// What the schema compiler reported.
        detail: String,
    },
    /// A schema directory or file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path concerned.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Compiled JSON Schemas (2020-12) for tool arguments, by tool name (D6).
///
/// Cloning is cheap (the compiled schemas are shared).
#[derive(Clone, Default)]
pub struct ToolSchemas {
    by_tool: HashMap<String, Arc<jsonschema::Validator>>,
}

impl fmt::Debug for ToolSchemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.by_tool.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("ToolSchemas")
            .field("tools", &names)
            .finish()
    }
}

impl ToolSchemas {
    /// No schemas: arguments are only checked to be one JSON object.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) the schema for `tool_name`, given as JSON text.
    ///
    /// The schema is compiled as JSON Schema 2020-12 whatever its `$schema`
    /// says; `$ref`s to other documents are not fetched (an error here).
    pub fn insert(&mut self, tool_name: &str, schema_json: &str) -> Result<(), SchemaError> {
        let value: serde_json::Value =
            serde_json::from_str(schema_json).map_err(|e| SchemaError::Json {
                tool: safe_id(tool_name),
                detail: e.to_string(),
            })?;
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&value)
            .map_err(|e| SchemaError::Invalid {
                tool: safe_id(tool_name),
                detail: e.to_string(),
            })?;
        self.by_tool
            .insert(tool_name.to_owned(), Arc::new(validator));
        Ok(())
    }

    /// Loads every `<tool_name>.schema.json` file in `dir` (not recursive;
    /// other files are ignored).
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, SchemaError> {
        let dir = dir.as_ref();
        let io = |path: &Path, source| SchemaError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut schemas = ToolSchemas::new();
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let entry = entry.map_err(|e| io(dir, e))?;
            let path = entry.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(tool) = name.strip_suffix(SCHEMA_FILE_SUFFIX) else {
                continue;
            };
            if tool.is_empty() || !path.is_file() {
                continue;
            }
            entries.push((tool.to_owned(), path));
        }
        entries.sort();
        for (tool, path) in entries {
            let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            schemas.insert(&tool, &text)?;
        }
        Ok(schemas)
    }

    /// The number of registered schemas.
    pub fn len(&self) -> usize {
        self.by_tool.len()
    }

    /// `true` when no schema is registered.
    pub fn is_empty(&self) -> bool {
        self.by_tool.is_empty()
    }

    /// `true` when a schema is registered for `tool_name`.
    pub fn contains(&self, tool_name: &str) -> bool {
        self.by_tool.contains_key(tool_name)
    }

    /// Checks complete `arguments` (a JSON object text, already strictly
    /// parsed) of `tool_name`. `Ok` when no schema is registered for it.
    /// The error is payload-free: the failing keyword and where (instance path
    /// with unusual member names elided, and the schema path).
    pub(crate) fn check(&self, tool_name: &str, arguments: &str) -> Result<(), String> {
        let Some(validator) = self.by_tool.get(tool_name) else {
            return Ok(());
        };
        let value: serde_json::Value = match serde_json::from_str(arguments) {
            Ok(v) => v,
            Err(_) => return Err("arguments are not JSON".to_owned()),
        };
        match validator.validate(&value) {
            Ok(()) => Ok(()),
            Err(e) => {
                let mut at = String::new();
                for seg in e.instance_path().iter() {
                    at.push('/');
                    match seg {
                        jsonschema::paths::LocationSegment::Property(p) => {
                            at.push_str(&safe_segment(&p));
                        }
                        jsonschema::paths::LocationSegment::Index(i) => {
                            at.push_str(&i.to_string());
                        }
                    }
                }
                if at.is_empty() {
                    at.push('/');
                }
                Err(format!(
                    "arguments of tool {} fail their schema: keyword `{}` at {} (schema {})",
                    safe_id(tool_name),
                    safe_segment(e.kind().keyword()),
                    at,
                    safe_segment(e.schema_path().as_str()),
                ))
            }
        }
    }
}

/// A path segment or keyword fit for a message.
fn safe_segment(s: &str) -> String {
    if s.len() <= 128
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b'$' | b'~')
        })
    {
        s.to_owned()
    } else {
        format!("<{} byte name>", s.len())
    }
}
