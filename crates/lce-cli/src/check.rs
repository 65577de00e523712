//! `lce check`: is every line a well-formed canonical event, and does the run
//! keep the contract's state-machine rules?
//!
//! Lines are parsed first (parse errors are reported per line, as before);
//! each event that parses is then fed to [`lce_validate::RunValidator`].
//! By default the first violation ends the state-machine checks (later events
//! would mostly report its consequences); `--all` reports it and goes on as if
//! the violating event had been dropped (D8), so every independent violation
//! is listed, with possible cascades (see `RunValidator::clear_failure` for
//! the two recoveries that avoid the worst ones). After a malformed line the state-machine
//! checks stop in both modes: a missing event would only produce cascades.
//! Rule 12 (no terminal) is checked at the end of an input whose lines all
//! parsed, when no earlier violation stopped the checks.
//!
//! A stored run is checked exactly: every closed span, call and namespace id
//! is remembered (`ValidatorOptions::exact`), so a restart of any id is
//! caught however long ago it closed. `--window N` remembers only the last
//! `N` closed ids of each kind, as the coordinator does (bounded memory for
//! very long inputs; docs/validation.md, "Closed ids").

use std::ffi::OsString;

use lce_types::EventLines;
use lce_validate::{Mode, RunValidator, ToolSchemas, ValidatorOptions, Violation};

use crate::{UsageError, input};

/// Runs `lce check`; `Ok(true)` when the input was accepted.
pub(crate) fn run(args: Vec<OsString>) -> Result<bool, UsageError> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let mut json = false;
    let mut all = false;
    let mut options = ValidatorOptions::new().exact();
    let mut file: Option<String> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("json") => json = true,
            Long("all") => all = true,
            Long("ephemeral") => options = options.ephemeral(true),
            Long("window") => {
                let n = parser.value()?.string()?;
                let n = n
                    .parse::<usize>()
                    .map_err(|_| UsageError(format!("--window: not a count: {n}")))?;
                options = options.closed_window(n);
            }
            Long("adapter") => options = options.mode(Mode::Adapter),
            Long("schemas") => {
                let dir = parser.value()?.string()?;
                let schemas = ToolSchemas::from_dir(&dir)
                    .map_err(|e| UsageError(format!("--schemas {dir}: {e}")))?;
                options = options.schemas(schemas);
            }
            Value(v) if file.is_none() => file = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let input = input::open(file.as_deref())?;
    let mut lines = EventLines::new(input.reader);
    let mut problems = Vec::new();
    let mut violations: Vec<(u64, Violation)> = Vec::new();
    let mut validator = RunValidator::new(options);
    // State-machine checks run until a malformed line, or the first
    // violation without `--all`.
    let mut validating = true;
    let mut events = 0u64;
    while let Some(item) = lines.next_line().transpose() {
        match item.map_err(|e| UsageError(format!("{}: read error: {e}", input.name)))? {
            Ok(event) => {
                events += 1;
                if validating {
                    let line = lines.line();
                    if let Err(v) = validator.push(&event) {
                        violations.push((line, v));
                        if all {
                            validator.clear_failure();
                        } else {
                            validating = false;
                        }
                    }
                }
            }
            Err(e) => {
                problems.push(e);
                validating = false;
            }
        }
    }
    if validating {
        if let Err(v) = validator.finish() {
            violations.push((lines.line(), v));
        }
    }
    let ok = problems.is_empty() && violations.is_empty();
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
        let violations: Vec<serde_json::Value> = violations
            .iter()
            .map(|(line, v)| {
                serde_json::json!({
                    "line": line,
                    "sequence": v.sequence,
                    "rule": v.rule.id(),
                    "rule_name": v.rule.name(),
                    "event_type": v.event_type.map(|t| t.as_str()),
                    "message": v.message,
                })
            })
            .collect();
        let report = serde_json::json!({
            "file": input.name,
            "lines": lines.line(),
            "events": events,
            "ok": ok,
            "errors": errors,
            "violations": violations,
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
        for (line, v) in &violations {
            eprintln!("{}:{}: {}", input.name, line, v);
        }
    }
    Ok(ok)
}

/// The error's text without its `line N:` prefix (the line is reported apart).
pub(crate) fn without_line(e: &lce_types::ParseError) -> String {
    let mut e = e.clone();
    e.line = None;
    e.to_string()
}
