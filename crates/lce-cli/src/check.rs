//! `lce check`: is every line a well-formed canonical event?

use std::ffi::OsString;

use lce_types::EventLines;

use crate::{UsageError, input};

/// Runs `lce check`; `Ok(true)` when the input was accepted.
pub(crate) fn run(args: Vec<OsString>) -> Result<bool, UsageError> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let mut json = false;
    let mut file: Option<String> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => json = true,
            Value(v) if file.is_none() => file = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let input = input::open(file.as_deref())?;
    let mut lines = EventLines::new(input.reader);
    let mut problems = Vec::new();
    let mut events = 0u64;
    for item in &mut lines {
        match item.map_err(|e| UsageError(format!("{}: read error: {e}", input.name)))? {
            Ok(_) => events += 1,
            Err(e) => problems.push(e),
        }
    }
    if json {
        let errors: Vec<serde_json::Value> = problems
            .iter()
            .map(|e| {
                serde_json::json!({
                    "line": e.line,
                    "kind": e.kind.as_str(),
                    "path": e.path,
                    "offset": e.offset,
                    "message": without_line(e),
                })
            })
            .collect();
        let report = serde_json::json!({
            "file": input.name,
            "lines": lines.line(),
            "events": events,
            "ok": problems.is_empty(),
            "errors": errors,
        });
        println!("{report}");
    } else {
        for e in &problems {
            eprintln!(
                "{}:{}: {}",
                input.name,
                e.line.unwrap_or(0),
                without_line(e)
            );
        }
    }
    Ok(problems.is_empty())
}

/// The error's text without its `line N:` prefix (the line is reported apart).
fn without_line(e: &lce_types::ParseError) -> String {
    let mut e = e.clone();
    e.line = None;
    e.to_string()
}
