//! `lce encode --to custom|agui|agui-v1 [--agent-name NAME] [--ephemeral]
//! [--limits FILE] [FILE]`:
//! canonical JSON Lines in (FILE, or stdin), SSE bytes on stdout.
//!
//! The input runs through the whole pipeline of a live service: strict
//! parsing, the coordinator (sanitize, validate, commit to an in-memory
//! store, guarantee the contract: D8-D11) and the chosen encoder. So the
//! output is always a well-formed stream in the chosen format, ending with
//! the terminal the coordinator decided.
//!
//! The bounds (D19) are the defaults, or `--limits FILE` (TOML or JSON),
//! then `LCE_LIMIT_*` environment variables (`docs/sanitation.md`).
//!
//! Exit status: 0 when the input was a valid run, 1 when the coordinator had
//! to intervene (a malformed line, a broken rule, a rejected event, a missing
//! terminal); the reason goes to stderr as `lce check` prints it
//! (`NAME:LINE: message`), except that a malformed line keeps the library's
//! payload-free words (`lce check --json`'s message) where `lce check` shows
//! its column and an excerpt. 2 for usage or I/O errors.
//!
//! Output is buffered and flushed whenever the pipeline would wait and at the
//! end. Live input (D13a): when stdin is not a regular file, tokio's
//! `FramedRead` reads it; whenever no line is ready the encoder releases the
//! tool starts whose arguments are complete. A FILE argument or a redirected
//! regular file is always ready, so its output is deterministic and equals
//! the golden files.

use std::io::{self, Write};

use futures::{FutureExt, Stream, StreamExt};
use lce::prelude::*;
use lce::stream::{Cause, EncodeOptions, WireFormat};

use crate::input;
use crate::usage::UsageError;

/// What `lce encode --help` shows after the options.
const AFTER_HELP: &str = "\
Exit status: 0 the input was a valid run, 1 the coordinator had to intervene
(the reason on stderr as `FILE:LINE: message`), 2 usage or I/O error.

Examples:
  lce encode --to agui-v1 run.jsonl > run.sse
  adapter | lce encode --to custom --agent-name my-agent";

/// Encode canonical events as SSE on stdout, through the coordinator.
///
/// The input runs through the whole pipeline of a live service: strict
/// parsing, the coordinator (sanitize, validate, guarantee the contract) and
/// the chosen encoder, so the output is always a well-formed stream ending
/// with the terminal the coordinator decided. From a pipe, frames go out as
/// lines arrive.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// Wire format of the output.
    #[arg(
        long = "to",
        value_name = "FORMAT",
        value_parser = clap::builder::PossibleValuesParser::new(WireFormat::ALL.map(WireFormat::name))
    )]
    format: String,
    /// Agent name in the stream, where the format has one.
    #[arg(long, value_name = "NAME")]
    agent_name: Option<String>,
    /// The harness is ephemeral: nothing is committed.
    ///
    /// The run finishes without `thread_state` (rule 13).
    #[arg(long)]
    ephemeral: bool,
    /// Bounds (D19) from a TOML or JSON file.
    ///
    /// `LCE_LIMIT_*` environment variables override it; see
    /// docs/sanitation.md.
    #[arg(long = "limits", value_name = "FILE")]
    limits_file: Option<std::path::PathBuf>,
    /// Canonical JSON Lines of one run; `-` is stdin [default: -].
    #[arg(value_name = "FILE")]
    file: Option<std::path::PathBuf>,
}

/// Runs `lce encode`; `Ok(true)` when the input was a valid run.
pub(crate) fn run(args: Args) -> Result<bool, UsageError> {
    let Args {
        format,
        agent_name,
        ephemeral,
        limits_file,
        file,
    } = args;
    let formats = WireFormat::ALL.map(WireFormat::name).join(", ");
    let format = WireFormat::from_name(&format)
        .ok_or_else(|| UsageError(format!("unknown format `{format}` (one of {formats})")))?;
    let limits = lce::sanitize::load_limits_from_process_env(limits_file.as_deref())
        .map_err(|e| UsageError(format!("limits: {e}")))?;
    let live = input::is_stdin(file.as_deref()) && stdin_is_live();
    let input = input::open(file.as_deref())?;
    let name = input.name.clone();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    let mut options = EncodeOptions::new(format);
    (options.agent_name, options.ephemeral, options.limits) = (agent_name, ephemeral, limits);
    runtime.block_on(encode(input, live, options, &name))
}

/// The input's lines, one item each, whichever way they are read.
type Lines = std::pin::Pin<Box<dyn Stream<Item = Result<Event, LceError>>>>;

/// The input's lines, the start of the chain: read in place (a file,
/// always ready: the output is deterministic), or, for a live pipe, by
/// tokio's `FramedRead` over stdin (the stream is pending while no line is
/// ready, and the encoder may release held tool starts, D13a). One item per
/// line either way.
fn lines(input: input::Input, live: bool) -> Lines {
    if live {
        drop(input);
        return Box::pin(lce::stream::codec::read_event_lines(tokio::io::stdin()));
    }
    let lines = EventLines::new(input.reader).map(|item| match item {
        Ok(Ok(event)) => Ok(event),
        Ok(Err(parse)) => Err(LceError::Parse(parse)),
        Err(io) => Err(LceError::Io(io)),
    });
    Box::pin(futures::stream::iter(lines))
}

async fn encode(
    input: input::Input,
    live: bool,
    options: EncodeOptions,
    name: &str,
) -> Result<bool, UsageError> {
    let mut frames = lce::stream::encode_chain(lines(input, live), options).await;

    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    let write_err = |e: io::Error| UsageError(format!("cannot write to stdout: {e}"));
    loop {
        let next = match frames.next().now_or_never() {
            Some(next) => next,
            None => {
                // The pipeline would wait: show what we have.
                out.flush().map_err(write_err)?;
                frames.next().await
            }
        };
        match next {
            None => break,
            Some(Ok(frame)) => out.write_all(&frame).map_err(write_err)?,
            Some(Err(e)) => {
                // The coordinator's output always encodes; say so if not.
                out.flush().map_err(write_err)?;
                return Err(UsageError(format!("{name}: cannot encode: {e}")));
            }
        }
    }
    out.flush().map_err(write_err)?;
    drop(out);

    // Where the coordinator stepped in comes with the run it coordinated.
    let coordinated = frames.get_mut();
    let error = coordinated.take_error();
    if let Some(LceError::Io(e)) = &error {
        return Err(UsageError(format!("{name}: read error: {e}")));
    }
    let Some(intervention) = coordinated.intervention() else {
        return Ok(true);
    };
    // One item per line: the item's position is its line.
    let line = intervention.position;
    match (intervention.cause, &error) {
        (Some(Cause::Parse), Some(LceError::Parse(e))) => {
            eprintln!(
                "{name}:{}: {}",
                e.line.unwrap_or(line),
                crate::check::without_line(e)
            );
        }
        _ => {
            let reason = intervention.reason.unwrap_or_else(|| {
                format!(
                    "the coordinator ended the run with {}",
                    intervention.code.unwrap_or_default()
                )
            });
            eprintln!("{name}:{line}: {reason}");
        }
    }
    Ok(false)
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
