//! `lce check`: is every line a well-formed canonical event, and does the run
//! keep the contract's state-machine rules?
//!
//! Each FILE (or `-`, stdin; no FILE is stdin) is one run, checked on its
//! own, in the order given (stdin at most once). A file that cannot be read
//! is reported (`lce: cannot open FILE: ...`, `lce: FILE: read error: ...`)
//! and the others are still checked; the exit status is then 2. Otherwise it
//! is 1 when any file has a problem, else 0.
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
//!
//! Messages go to stderr, each file's parse errors then its violations:
//! - a broken rule: `FILE:LINE: seq S: rule R (name): message`;
//! - a line that is not a canonical event, where the parser located it:
//!   `FILE:LINE:COLUMN: message` (the column counts characters from 1),
//!   then the line's excerpt (at most 80 characters around the column,
//!   control characters escaped; see `lce::types::excerpt`) and a caret under the
//!   column, each indented by two spaces. A JSON syntax error reads
//!   `syntax error: DETAIL`; other kinds keep `KIND at PATH: DETAIL`.
//! - any other malformed line: `FILE:LINE: KIND at PATH: DETAIL`.
//!
//! The excerpt is the user's own input shown back to them; the library's
//! errors (and so the server's logs and `lce encode`'s messages) stay
//! payload-free.
//!
//! `--json` writes one report object per FILE to stdout, one per line (JSON
//! Lines), in the order given, instead of the messages: for one FILE the
//! output is exactly one object, as before this took several files:
//! `{"file","lines","events","ok","errors":[{line,kind,path,offset,message}],
//! "violations":[{line,sequence,rule,rule_name,decision,event_type,message}]}`; a FILE
//! that could not be read is `{"file","ok":false,"io_error"}`.
//!
//! `--summary` ends the output with one line on stdout:
//! `summary: F files, R runs, E events, P problems` (singular for 1, and
//! `F files (U unreadable)` when some could not be read). Runs are the inputs
//! read to their end (each FILE is one run: the tool does not split a file
//! by run id); events the lines that parsed; problems the messages above
//! (parse errors and broken rules). With `--json` it is one more object:
//! `{"summary":{"files","unreadable","runs","events","problems","ok"}}`.

use std::path::PathBuf;
use std::process::ExitCode;

use lce::types::{EventLines, LastLine, ParseError, ParseErrorKind};
use lce::validate::{Mode, RunValidator, ToolSchemas, ValidatorOptions, Violation};

use crate::input;
use crate::usage::UsageError;
use lce::types::excerpt::{Excerpt, excerpt};

/// What `lce check --help` shows after the options.
const AFTER_HELP: &str = "\
Each FILE is one run, checked on its own; `-` (or no FILE) is stdin.
Problems go to stderr: `FILE:LINE: seq S: rule R (name): message` for a broken
rule; `FILE:LINE:COLUMN: message`, an excerpt of the line and a caret for a
line that is not a canonical event.
Exit status: 0 all accepted, 1 a problem in any FILE, 2 usage error or a FILE
that could not be read (the other files are still checked).

Examples:
  lce check run.jsonl
  lce check --all --summary runs/*.jsonl
  adapter | lce check --adapter -";

/// Report malformed lines and broken state-machine rules.
///
/// Every line must be a well-formed canonical event, and each run must keep
/// the contract's state-machine rules. Closed ids are remembered exactly
/// unless `--window` bounds them.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Write one JSON report per FILE to stdout instead.
    ///
    /// One object per line (JSON Lines), in the order given; for one FILE,
    /// exactly the single object of earlier versions. An unreadable FILE is
    /// `{"file", "ok": false, "io_error"}`.
    #[arg(long)]
    json: bool,
    /// List every violation, not only the first.
    ///
    /// After a broken rule, go on as if the event had been dropped (D8);
    /// later violations may be consequences of earlier ones.
    #[arg(long)]
    all: bool,
    /// Check an adapter's output (rule 13 is skipped).
    ///
    /// Before the coordinator, `run.finished` need not carry committed
    /// `thread_state`: the coordinator replaces it (D10a).
    #[arg(long)]
    adapter: bool,
    /// The harness is ephemeral: no `thread_state` (rule 13).
    ///
    /// Nothing was committed, so `run.finished` must come without
    /// `thread_state`.
    #[arg(long)]
    ephemeral: bool,
    /// Check tool arguments against DIR/<tool_name>.schema.json.
    #[arg(long, value_name = "DIR")]
    schemas: Option<PathBuf>,
    /// Remember only the last N closed ids of each kind.
    ///
    /// As the coordinator does: memory stays bounded, but a restart of an id
    /// closed more than N ids ago is not caught. Default: every id.
    #[arg(long, value_name = "N")]
    window: Option<usize>,
    /// End with one line: files, runs, events, problems.
    ///
    /// `summary: F files, R runs, E events, P problems` on stdout (each FILE
    /// read to its end is one run); with --json, one more object
    /// `{"summary": {...}}`.
    #[arg(long)]
    summary: bool,
    /// Runs to check, as canonical JSON Lines; `-` is stdin [default: -].
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// What one FILE held.
struct Report {
    name: String,
    lines: u64,
    events: u64,
    /// Parse errors, with their excerpt where located (text output only).
    errors: Vec<(ParseError, Option<Excerpt>)>,
    violations: Vec<(u64, Violation)>,
}

impl Report {
    fn ok(&self) -> bool {
        self.errors.is_empty() && self.violations.is_empty()
    }

    fn problems(&self) -> usize {
        self.errors.len() + self.violations.len()
    }
}

/// Runs `lce check`.
pub(crate) fn run(args: Args) -> Result<ExitCode, UsageError> {
    let mut options = ValidatorOptions::new().exact();
    if args.ephemeral {
        options = options.ephemeral(true);
    }
    if let Some(n) = args.window {
        options = options.closed_window(n);
    }
    if args.adapter {
        options = options.mode(Mode::Adapter);
    }
    if let Some(dir) = &args.schemas {
        let schemas = ToolSchemas::from_dir(dir)
            .map_err(|e| UsageError(format!("--schemas {}: {e}", dir.display())))?;
        options = options.schemas(schemas);
    }
    let files: Vec<Option<PathBuf>> = if args.files.is_empty() {
        vec![None]
    } else {
        args.files.into_iter().map(Some).collect()
    };
    if files
        .iter()
        .filter(|f| input::is_stdin(f.as_deref()))
        .count()
        > 1
    {
        return Err(UsageError("stdin (`-`) can be checked only once".into()));
    }

    let (mut unreadable, mut runs, mut events, mut problems) = (0usize, 0usize, 0u64, 0usize);
    for file in &files {
        match check_file(file.as_deref(), &options, args.all, !args.json) {
            Ok(report) => {
                runs += 1;
                events += report.events;
                problems += report.problems();
                if args.json {
                    println!("{}", json_report(&report));
                } else {
                    print_report(&report);
                }
            }
            Err(UsageError(msg)) => {
                unreadable += 1;
                eprintln!("lce: {msg}");
                if args.json {
                    let name = file.as_deref().filter(|f| !input::is_stdin(Some(f)));
                    let name =
                        name.map_or_else(|| "<stdin>".to_owned(), |f| f.display().to_string());
                    let report = serde_json::json!({
                        "file": name,
                        "ok": false,
                        "io_error": msg,
                    });
                    println!("{report}");
                }
            }
        }
    }
    if args.summary {
        if args.json {
            let summary = serde_json::json!({ "summary": {
                "files": files.len(),
                "unreadable": unreadable,
                "runs": runs,
                "events": events,
                "problems": problems,
                "ok": unreadable == 0 && problems == 0,
            }});
            println!("{summary}");
        } else {
            println!(
                "{}",
                summary_line(files.len(), unreadable, runs, events, problems)
            );
        }
    }
    Ok(if unreadable > 0 {
        ExitCode::from(2)
    } else if problems > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `summary: 2 files, 2 runs, 57 events, 1 problem`.
fn summary_line(
    files: usize,
    unreadable: usize,
    runs: usize,
    events: u64,
    problems: usize,
) -> String {
    let count = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let unreadable = if unreadable > 0 {
        format!(" ({unreadable} unreadable)")
    } else {
        String::new()
    };
    format!(
        "summary: {}{unreadable}, {}, {}, {}",
        count(files as u64, "file"),
        count(runs as u64, "run"),
        count(events, "event"),
        count(problems as u64, "problem")
    )
}

/// Checks one input as one run. `excerpts`: keep what the parse errors'
/// lines hold (for the text messages).
fn check_file(
    path: Option<&std::path::Path>,
    options: &ValidatorOptions,
    all: bool,
    excerpts: bool,
) -> Result<Report, UsageError> {
    let input = input::open(path)?;
    let name = input.name;
    let (reader, kept) = LastLine::new(input.reader);
    let mut lines = EventLines::new(reader);
    let mut report = Report {
        name,
        lines: 0,
        events: 0,
        errors: Vec::new(),
        violations: Vec::new(),
    };
    let mut validator = RunValidator::new(options.clone());
    // State-machine checks run until a malformed line, or the first
    // violation without `--all`.
    let mut validating = true;
    while let Some(item) = lines.next_line().transpose() {
        match item.map_err(|e| UsageError(format!("{}: read error: {e}", report.name)))? {
            Ok(event) => {
                report.events += 1;
                if validating {
                    let line = lines.line();
                    if let Err(v) = validator.push(&event) {
                        report.violations.push((line, v));
                        if all {
                            validator.clear_failure();
                        } else {
                            validating = false;
                        }
                    }
                }
            }
            Err(e) => {
                let excerpt = match (excerpts, e.offset, kept.line()) {
                    (true, Some(offset), Some(text)) => {
                        // serde_json puts the end of input on the last
                        // character it read; the line ended after it.
                        let at_end = e.kind == ParseErrorKind::Syntax
                            && e.detail == "unexpected end of input";
                        Some(excerpt(&text, if at_end { text.len() } else { offset }))
                    }
                    _ => None,
                };
                report.errors.push((e, excerpt));
                validating = false;
            }
        }
    }
    report.lines = lines.line();
    if validating {
        if let Err(v) = validator.finish() {
            report.violations.push((lines.line(), v));
        }
    }
    Ok(report)
}

/// A file's problems on stderr.
fn print_report(report: &Report) {
    let name = &report.name;
    for (e, excerpt) in &report.errors {
        let line = e.line.unwrap_or(0);
        match excerpt {
            Some(x) => {
                let what = if e.kind == ParseErrorKind::Syntax {
                    if e.detail.is_empty() {
                        "syntax error".to_owned()
                    } else {
                        format!("syntax error: {}", e.detail)
                    }
                } else {
                    let mut e = e.clone();
                    e.line = None;
                    e.offset = None;
                    e.to_string()
                };
                eprintln!(
                    "{name}:{line}:{}: {what}\n  {}\n  {}",
                    x.column, x.text, x.caret
                );
            }
            None => eprintln!("{name}:{line}: {}", without_line(e)),
        }
    }
    for (line, v) in &report.violations {
        eprintln!("{name}:{line}: {v}");
    }
}

/// A file's report as one JSON object (the shape `lce check --json` has
/// always had for one file).
fn json_report(report: &Report) -> serde_json::Value {
    let errors: Vec<serde_json::Value> = report
        .errors
        .iter()
        .map(|(e, _)| {
            serde_json::json!({
                "line": e.line,
                "kind": e.kind.as_str(),
                "path": e.path,
                "offset": e.offset,
                "message": without_line(e),
            })
        })
        .collect();
    let violations: Vec<serde_json::Value> = report
        .violations
        .iter()
        .map(|(line, v)| {
            serde_json::json!({
                "line": line,
                "sequence": v.sequence,
                "rule": v.rule.id(),
                "rule_name": v.rule.name(),
                "decision": v.rule.decision(),
                "event_type": v.event_type.map(|t| t.as_str()),
                "message": v.message,
            })
        })
        .collect();
    serde_json::json!({
        "file": report.name,
        "lines": report.lines,
        "events": report.events,
        "ok": report.ok(),
        "errors": errors,
        "violations": violations,
    })
}

/// The error's text without its `line N:` prefix (the line is reported apart).
pub(crate) fn without_line(e: &ParseError) -> String {
    let mut e = e.clone();
    e.line = None;
    e.to_string()
}
