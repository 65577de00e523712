//! Parse errors: what was wrong and where, never the payload.

use std::fmt;

/// What kind of defect made an input line unacceptable.
///
/// The snake_case name ([`ParseErrorKind::as_str`]) is stable and is what the
/// `lce check --json` report and the malformed fixtures use.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParseErrorKind {
    /// The bytes are not valid UTF-8.
    InvalidUtf8,
    /// The text is not JSON (truncated, stray characters, bad escapes).
    Syntax,
    /// The line is empty or only whitespace.
    EmptyLine,
    /// The line is valid JSON but not an object.
    NotAnObject,
    /// An object holds the same key twice, at any depth.
    DuplicateKey,
    /// A `\uXXXX` escape is an unpaired UTF-16 surrogate.
    LoneSurrogate,
    /// Nesting is deeper than the bound.
    TooDeep,
    /// `version` is an integer other than `1`.
    UnsupportedVersion,
    /// `type` names no event type of the contract.
    UnknownType,
    /// A member that the contract does not define.
    UnknownField,
    /// A required member is absent.
    MissingField,
    /// A member has the wrong JSON type.
    WrongType,
    /// A member has the right type but a value outside its domain
    /// (an unknown enumeration value, an empty identifier).
    InvalidValue,
    /// A number is out of range: a negative or too large integer, or a
    /// float that is not finite.
    NumberOutOfRange,
    /// `timestamp` is not RFC 3339 with an offset.
    InvalidTimestamp,
    /// The line is longer than the reader's bound.
    LineTooLong,
}

impl ParseErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ParseErrorKind; 16] = [
        ParseErrorKind::InvalidUtf8,
        ParseErrorKind::Syntax,
        ParseErrorKind::EmptyLine,
        ParseErrorKind::NotAnObject,
        ParseErrorKind::DuplicateKey,
        ParseErrorKind::LoneSurrogate,
        ParseErrorKind::TooDeep,
        ParseErrorKind::UnsupportedVersion,
        ParseErrorKind::UnknownType,
        ParseErrorKind::UnknownField,
        ParseErrorKind::MissingField,
        ParseErrorKind::WrongType,
        ParseErrorKind::InvalidValue,
        ParseErrorKind::NumberOutOfRange,
        ParseErrorKind::InvalidTimestamp,
        ParseErrorKind::LineTooLong,
    ];

    /// The stable snake_case name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ParseErrorKind::InvalidUtf8 => "invalid_utf8",
            ParseErrorKind::Syntax => "syntax",
            ParseErrorKind::EmptyLine => "empty_line",
            ParseErrorKind::NotAnObject => "not_an_object",
            ParseErrorKind::DuplicateKey => "duplicate_key",
            ParseErrorKind::LoneSurrogate => "lone_surrogate",
            ParseErrorKind::TooDeep => "too_deep",
            ParseErrorKind::UnsupportedVersion => "unsupported_version",
            ParseErrorKind::UnknownType => "unknown_type",
            ParseErrorKind::UnknownField => "unknown_field",
            ParseErrorKind::MissingField => "missing_field",
            ParseErrorKind::WrongType => "wrong_type",
            ParseErrorKind::InvalidValue => "invalid_value",
            ParseErrorKind::NumberOutOfRange => "number_out_of_range",
            ParseErrorKind::InvalidTimestamp => "invalid_timestamp",
            ParseErrorKind::LineTooLong => "line_too_long",
        }
    }

    /// The kind named `name` (the inverse of [`ParseErrorKind::as_str`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A line that could not be parsed as a canonical event.
///
/// It says what was wrong (`kind`), where (`line` when read from JSON Lines,
/// the JSON `path`, the byte `offset` in the line when known) and, for
/// unknown or missing members, the member's name. It never holds payload text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ParseError {
    /// What was wrong.
    pub kind: ParseErrorKind,
    /// 1-based line number, when the event came from JSON Lines.
    pub line: Option<u64>,
    /// Byte offset within the line (0-based), when known.
    pub offset: Option<usize>,
    /// JSON path of the offending member (`$`, `data.arguments`, `namespace[2]`).
    pub path: String,
    /// A short, payload-free explanation.
    pub detail: String,
}

impl ParseError {
    /// A new error of `kind` at `path`.
    pub fn new(kind: ParseErrorKind, path: impl Into<String>, detail: impl Into<String>) -> Self {
        ParseError {
            kind,
            line: None,
            offset: None,
            path: path.into(),
            detail: detail.into(),
        }
    }

    /// The same error, located at 1-based `line`.
    pub fn at_line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }

    /// The same error, located at byte `offset` in its line.
    pub fn at_offset(mut self, offset: usize) -> Self {
        self.offset = Some(offset);
        self
    }

    fn render(&self) -> String {
        let mut s = String::new();
        if let Some(line) = self.line {
            s.push_str(&format!("line {line}: "));
        }
        s.push_str(self.kind.as_str());
        s.push_str(" at ");
        s.push_str(&self.path);
        if let Some(off) = self.offset {
            s.push_str(&format!(" (byte {off})"));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }

    /// Prefixes the JSON path with `prefix` (used when a payload is parsed on
    /// its own and then placed under `data`).
    pub(crate) fn under(mut self, prefix: &str) -> Self {
        self.path = if self.path == "$" || self.path.is_empty() {
            prefix.to_owned()
        } else if self.path.starts_with('[') {
            format!("{prefix}{}", self.path)
        } else {
            format!("{prefix}.{}", self.path)
        };
        self
    }
}

/// Markers for errors raised inside our own `Deserialize` impls; serde only
/// carries a message, so the kind travels in a fixed prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorMarker {
    Syntax,
    DuplicateKey,
    LoneSurrogate,
    TooDeep,
    WrongType,
    InvalidValue,
    NumberOutOfRange,
    InvalidTimestamp,
    UnsupportedVersion,
}

const MARK: &str = "lce-marker:";

impl ErrorMarker {
    pub(crate) fn kind(self) -> ParseErrorKind {
        match self {
            ErrorMarker::Syntax => ParseErrorKind::Syntax,
            ErrorMarker::DuplicateKey => ParseErrorKind::DuplicateKey,
            ErrorMarker::LoneSurrogate => ParseErrorKind::LoneSurrogate,
            ErrorMarker::TooDeep => ParseErrorKind::TooDeep,
            ErrorMarker::WrongType => ParseErrorKind::WrongType,
            ErrorMarker::InvalidValue => ParseErrorKind::InvalidValue,
            ErrorMarker::NumberOutOfRange => ParseErrorKind::NumberOutOfRange,
            ErrorMarker::InvalidTimestamp => ParseErrorKind::InvalidTimestamp,
            ErrorMarker::UnsupportedVersion => ParseErrorKind::UnsupportedVersion,
        }
    }

    /// The serde error message carrying this marker and a payload-free text.
    pub(crate) fn message(self, what: &str) -> String {
        format!("{MARK}{}:{what}", self.kind().as_str())
    }
}

/// Deserializes `T` from `text`, turning any error into a [`ParseError`].
pub(crate) fn from_serde_str<'a, T: serde::Deserialize<'a>>(
    text: &'a str,
) -> Result<T, ParseError> {
    // Fast path: valid input parses without path tracking, which costs a
    // String per map key and wraps every visitor (about a third of the
    // pipeline's instructions in a callgrind profile of `lce encode`,
    // docs/performance.md). Only a failing input is parsed again, with
    // `serde_path_to_error`, for the located error; parsing is deterministic,
    // so that second pass fails the same way.
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(classify)?;
    de.end().map_err(|e| classify_json(&e, "$".to_owned()))?;
    Ok(value)
}

fn classify(err: serde_path_to_error::Error<serde_json::Error>) -> ParseError {
    let path = render_path(err.path());
    classify_json(err.inner(), path)
}

fn render_path(path: &serde_path_to_error::Path) -> String {
    let mut s = String::new();
    for seg in path.iter() {
        match seg {
            serde_path_to_error::Segment::Seq { index } => s.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key } => push_key(&mut s, key),
            serde_path_to_error::Segment::Enum { variant } => push_key(&mut s, variant),
            serde_path_to_error::Segment::Unknown => push_key(&mut s, "?"),
        }
    }
    if s.is_empty() { "$".to_owned() } else { s }
}

fn push_key(s: &mut String, key: &str) {
    if !s.is_empty() {
        s.push('.');
    }
    s.push_str(&safe_name(key, "name"));
}

/// A name fit for an error message: `name` itself when it is short and plain
/// (1 to 64 bytes of ASCII letters, digits, `_`, `-` and `.`), else elided to
/// its size as `<N byte WHAT>`, where `what` says what the name is (`"name"`
/// for a member name, `"key"` for a configuration key). A name is input, and
/// may be anything: this shows none of it unless it is plainly harmless.
///
/// ```
/// use lce_types::safe_name;
/// assert_eq!(safe_name("tool_call-1.id", "name"), "tool_call-1.id");
/// assert_eq!(safe_name("a b", "name"), "<3 byte name>");
/// assert_eq!(safe_name("", "key"), "<0 byte key>");
/// ```
pub fn safe_name(name: &str, what: &str) -> String {
    if !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    {
        name.to_owned()
    } else {
        format!("<{} byte {what}>", name.len())
    }
}

fn classify_json(err: &serde_json::Error, path: String) -> ParseError {
    let msg = err.to_string();
    // serde_json appends " at line L column C"; strip it from the text we inspect.
    let core = msg
        .rsplit_once(" at line ")
        .map_or(msg.as_str(), |(a, _)| a);
    let (kind, detail) = if let Some(rest) = core.strip_prefix(MARK) {
        let (name, what) = rest.split_once(':').unwrap_or((rest, ""));
        (
            ParseErrorKind::from_name(name).unwrap_or(ParseErrorKind::InvalidValue),
            what.to_owned(),
        )
    } else {
        match err.classify() {
            serde_json::error::Category::Io | serde_json::error::Category::Eof => {
                (ParseErrorKind::Syntax, "unexpected end of input".to_owned())
            }
            serde_json::error::Category::Syntax => {
                if core.contains("surrogate") || core.contains("hex escape") {
                    (
                        ParseErrorKind::LoneSurrogate,
                        "unpaired surrogate escape".to_owned(),
                    )
                } else if core.contains("recursion limit") {
                    (ParseErrorKind::TooDeep, "nested too deep".to_owned())
                } else if core.contains("number out of range") {
                    (
                        ParseErrorKind::NumberOutOfRange,
                        "number out of range".to_owned(),
                    )
                } else {
                    (ParseErrorKind::Syntax, syntax_detail(core))
                }
            }
            serde_json::error::Category::Data => classify_data(core),
        }
    };
    // serde reports a duplicate member at its parent: point at the member.
    let path = match (kind, err.classify(), backticked(core)) {
        (ParseErrorKind::DuplicateKey, serde_json::error::Category::Data, Some(name)) => {
            if path == "$" {
                safe_name(name, "name")
            } else {
                format!("{path}.{}", safe_name(name, "name"))
            }
        }
        _ => path,
    };
    let mut e = ParseError::new(kind, path, detail);
    if err.column() > 0 {
        e.offset = Some(err.column() - 1);
    }
    e
}

fn syntax_detail(core: &str) -> String {
    // serde_json's syntax messages name the defect, never the input text.
    core.to_owned()
}

fn backticked(core: &str) -> Option<&str> {
    let start = core.find('`')? + 1;
    let len = core.get(start..)?.find('`')?;
    core.get(start..start + len)
}

/// The first backticked name in `core`, fit for a message (see
/// [`safe_name`]); empty when there is none.
fn backticked_name(core: &str) -> String {
    backticked(core)
        .map(|n| safe_name(n, "name"))
        .unwrap_or_default()
}

fn classify_data(core: &str) -> (ParseErrorKind, String) {
    if core.starts_with("unknown field") {
        let name = backticked_name(core);
        (
            ParseErrorKind::UnknownField,
            format!("unknown member `{name}`"),
        )
    } else if core.starts_with("missing field") {
        let name = backticked_name(core);
        (
            ParseErrorKind::MissingField,
            format!("missing member `{name}`"),
        )
    } else if core.starts_with("duplicate field") {
        let name = backticked_name(core);
        (
            ParseErrorKind::DuplicateKey,
            format!("member `{name}` appears twice"),
        )
    } else if core.starts_with("unknown variant") {
        (
            ParseErrorKind::InvalidValue,
            "value is not one of the allowed names".to_owned(),
        )
    } else if core.starts_with("invalid value: integer")
        || core.starts_with("invalid type: floating point")
    {
        // An integer where the contract wants a non-negative one, or an
        // integer too large for u64 (serde_json then reads it as a float).
        if core.contains("expected u") || core.contains("expected i") {
            (
                ParseErrorKind::NumberOutOfRange,
                "integer out of range".to_owned(),
            )
        } else {
            (ParseErrorKind::WrongType, type_detail(core))
        }
    } else if core.starts_with("invalid type") {
        (ParseErrorKind::WrongType, type_detail(core))
    } else if core.starts_with("invalid length") {
        (
            ParseErrorKind::InvalidValue,
            "wrong number of elements".to_owned(),
        )
    } else {
        (ParseErrorKind::InvalidValue, "invalid value".to_owned())
    }
}

/// "invalid type: string \"secret\", expected u64" -> "expected u64, found string"
/// (the found value is input, so only its JSON type is kept).
fn type_detail(core: &str) -> String {
    let found = core
        .strip_prefix("invalid type: ")
        .or_else(|| core.strip_prefix("invalid value: "))
        .and_then(|r| r.split([' ', ',']).next())
        .unwrap_or("value");
    let expected = core.rsplit_once("expected ").map_or("", |(_, e)| e);
    let expected: String = expected.chars().take(60).collect();
    format!("expected {expected}, found {found}")
}
