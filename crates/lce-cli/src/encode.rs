//! `lce encode --to custom|agui|agui-v1 [--agent-name NAME] [FILE]`:
//! canonical JSON Lines in (FILE, or stdin), SSE bytes on stdout.
//!
//! Output is buffered and flushed at the end, after each run terminal, and
//! whenever the input has nothing ready (a live pipe).
//!
//! Every event is checked before it is encoded, as `lce check` checks it by
//! default: strict parsing, then the contract's state machine
//! ([`lce_validate::RunValidator`], full mode). Problems are reported on
//! stderr in `lce check`'s words (`NAME:LINE: message`) and the exit status
//! is 1. Encoding stops at the first problem (the frames already written
//! stay written: the output is a stream); the rest of the input is still
//! parsed and its malformed lines reported, as `lce check` does.
//!
//! Live input (D13a): when stdin is not a regular file, a reader thread feeds
//! the encoder; whenever no line is ready the encoder releases the tool
//! starts whose arguments are complete and stdout is flushed. A FILE argument
//! or a redirected regular file is always ready, so its output is
//! deterministic and equals the golden files.

use std::ffi::OsString;
use std::io::{self, BufRead, Write};
use std::sync::mpsc;

use bytes::BytesMut;
use lce_encode_agui::{AguiOptions, AguiSseEncoder, Dialect};
use lce_encode_custom::{CustomOptions, CustomSseEncoder};
use lce_types::{Event, EventLines, ParseError};
use lce_validate::{RunValidator, ValidatorOptions};

use crate::{UsageError, input};

/// The formats `--to` accepts.
const FORMATS: &str = "custom, agui, agui-v1";

/// One of the wire encoders, behind one interface.
enum WireEncoder {
    Custom(CustomSseEncoder),
    Agui(AguiSseEncoder),
}

impl WireEncoder {
    fn new(format: &str, agent_name: Option<String>) -> Result<Self, UsageError> {
        match format {
            "custom" => Ok(WireEncoder::Custom(CustomSseEncoder::new(CustomOptions {
                agent_name,
            }))),
            "agui" | "agui-v1" => {
                let dialect = if format == "agui" {
                    Dialect::Da
                } else {
                    Dialect::V1
                };
                let mut options = AguiOptions::default();
                options.agent_name = agent_name;
                Ok(WireEncoder::Agui(AguiSseEncoder::new(dialect, options)))
            }
            other => Err(UsageError(format!(
                "unknown format `{other}` (one of {FORMATS})"
            ))),
        }
    }

    fn encode(&mut self, event: &Event, dst: &mut BytesMut) -> Result<(), String> {
        match self {
            WireEncoder::Custom(e) => e.encode_event(event, dst).map_err(|e| e.to_string()),
            WireEncoder::Agui(e) => e.encode_event(event, dst).map_err(|e| e.to_string()),
        }
    }

    fn release_ready(&mut self, dst: &mut BytesMut) -> Result<(), String> {
        match self {
            WireEncoder::Custom(e) => e.release_ready(dst).map_err(|e| e.to_string()),
            WireEncoder::Agui(e) => e.release_ready(dst).map_err(|e| e.to_string()),
        }
    }
}

/// One item read from the input: a parsed line or its problem.
type Item = io::Result<Result<Event, ParseError>>;

/// Where lines come from: read in place (always ready) or from a reader
/// thread (a live pipe, D13a).
enum Source {
    Ready(EventLines<Box<dyn BufRead>>),
    Live(mpsc::Receiver<Item>),
}

/// What [`Source::next`] found.
enum Next {
    Item(Item),
    /// Nothing ready yet: the caller may release and flush, then wait.
    Pending,
    End,
}

impl Source {
    fn open(input: input::Input, live: bool) -> Self {
        let lines = EventLines::new(input.reader);
        if !live {
            return Source::Ready(lines);
        }
        let (tx, rx) = mpsc::sync_channel::<Item>(256);
        // `Box<dyn BufRead>` is not `Send`: the thread reads stdin itself.
        drop(lines);
        std::thread::spawn(move || {
            let reader: Box<dyn BufRead> =
                Box::new(io::BufReader::with_capacity(64 * 1024, io::stdin()));
            for item in EventLines::new(reader) {
                let stop = item.is_err();
                if tx.send(item).is_err() || stop {
                    break;
                }
            }
        });
        Source::Live(rx)
    }

    fn try_next(&mut self) -> Next {
        match self {
            Source::Ready(lines) => lines.next().map_or(Next::End, Next::Item),
            Source::Live(rx) => match rx.try_recv() {
                Ok(item) => Next::Item(item),
                Err(mpsc::TryRecvError::Empty) => Next::Pending,
                Err(mpsc::TryRecvError::Disconnected) => Next::End,
            },
        }
    }

    fn wait_next(&mut self) -> Next {
        match self {
            Source::Ready(lines) => lines.next().map_or(Next::End, Next::Item),
            Source::Live(rx) => rx.recv().map_or(Next::End, Next::Item),
        }
    }
}

/// Whether stdin is a live stream (a pipe or terminal) rather than a file.
fn stdin_is_live() -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else {
            return true;
        };
        let file = std::fs::File::from(fd);
        !file.metadata().is_ok_and(|m| m.is_file())
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Runs `lce encode`; `Ok(true)` when the whole input was accepted.
pub(crate) fn run(args: Vec<OsString>) -> Result<bool, UsageError> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(args);
    let mut format: Option<String> = None;
    let mut agent_name: Option<String> = None;
    let mut file: Option<String> = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Long("to") => format = Some(parser.value()?.string()?),
            Long("agent-name") => agent_name = Some(parser.value()?.string()?),
            Value(v) if file.is_none() => file = Some(v.string()?),
            other => return Err(other.unexpected().into()),
        }
    }
    let Some(format) = format else {
        return Err(UsageError(format!("encode needs --to FORMAT ({FORMATS})")));
    };
    let mut encoder = WireEncoder::new(&format, agent_name)?;
    let live = matches!(file.as_deref(), None | Some("-")) && stdin_is_live();
    let input = input::open(file.as_deref())?;
    let name = input.name.clone();
    let mut source = Source::open(input, live);

    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let write_err = |e: io::Error| UsageError(format!("cannot write to stdout: {e}"));
    let mut buf = BytesMut::with_capacity(8 * 1024);
    // Malformed lines, then broken rules, each as `lce check` prints them.
    let mut problems: Vec<String> = Vec::new();
    let mut violations: Vec<String> = Vec::new();
    let mut validator = RunValidator::new(ValidatorOptions::new());
    // As in `lce check`: state-machine checks stop at a malformed line or at
    // the first violation.
    let mut validating = true;
    let mut last_event_line = 0u64;
    // Line number of the item being handled (items come one per line).
    let mut line = 0u64;

    loop {
        let next = match source.try_next() {
            Next::Pending => {
                // Live stream with nothing ready (D13a): show running tools.
                if problems.is_empty() && violations.is_empty() {
                    if let Err(e) = encoder.release_ready(&mut buf) {
                        problems.push(format!("{name}:{line}: cannot encode: {e}"));
                    }
                    out.write_all(&buf).map_err(write_err)?;
                    buf.clear();
                }
                out.flush().map_err(write_err)?;
                source.wait_next()
            }
            other => other,
        };
        let item = match next {
            Next::End => break,
            Next::Pending => continue,
            Next::Item(item) => item,
        };
        line += 1;
        let parsed = item.map_err(|e| UsageError(format!("{name}: read error: {e}")))?;
        match parsed {
            Err(e) => {
                problems.push(check_line(&name, &e));
                validating = false;
            }
            Ok(event) if validating => {
                if let Err(v) = validator.push(&event) {
                    violations.push(format!("{name}:{line}: {v}"));
                    validating = false;
                    continue;
                }
                last_event_line = line;
                if !problems.is_empty() {
                    continue;
                }
                if let Err(e) = encoder.encode(&event, &mut buf) {
                    problems.push(format!("{name}:{line}: cannot encode: {e}"));
                    continue;
                }
                if !buf.is_empty() {
                    out.write_all(&buf).map_err(write_err)?;
                    buf.clear();
                }
                if event.event_type().is_terminal() {
                    out.flush().map_err(write_err)?;
                }
            }
            Ok(_) => {}
        }
    }
    if validating {
        // Rule 12: the input ended without a terminal.
        if let Err(v) = validator.finish() {
            violations.push(format!("{name}:{last_event_line}: {v}"));
        }
    }
    out.flush().map_err(write_err)?;
    drop(out);
    for p in problems.iter().chain(&violations) {
        eprintln!("{p}");
    }
    Ok(problems.is_empty() && violations.is_empty())
}

/// A parse problem as `lce check` prints it: `NAME:LINE: message`.
fn check_line(name: &str, e: &ParseError) -> String {
    let mut bare = e.clone();
    bare.line = None;
    format!("{name}:{}: {bare}", e.line.unwrap_or(0))
}
