//! The `lce` command-line tool.
//!
//! `lce check [FILE]` reports malformed canonical JSON Lines and runs that
//! break the state-machine rules. Exit status: 0 when the input is accepted,
//! 1 when it is not, 2 for usage or I/O errors. Messages go to stderr as
//! `FILE:LINE: message` (`FILE:LINE: seq S: rule R (name): message` for a
//! broken rule); `--json` writes a machine-readable report to stdout instead.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

mod check;
mod encode;
mod input;
mod invoke;
mod serve;

const USAGE: &str = "\
lce: Canonical Lifecycle Events v1 toolkit

usage:
  lce check [--json] [--all] [--adapter] [--ephemeral] [--schemas DIR] [--window N] [FILE]
                                report malformed lines and broken rules
                                (FILE or - = stdin; --all: every violation)
  lce encode --to FORMAT [--agent-name NAME] [--ephemeral] [--limits FILE] [FILE]
                                canonical events to SSE on stdout, through
                                the coordinator (FORMAT: custom, agui, agui-v1;
                                limits: TOML/JSON file, then LCE_LIMIT_* vars)
  lce invoke [--agent-id ID] [--trace-id ID] [FILE]
                                DA's non-streaming invoke answer for a run:
                                body on stdout, `status N` on stderr
                                (exit 0 for 200, 1 otherwise)
  lce serve [--addr ADDR] [--scenarios DIR] [--speed F] [--keepalive SECS]
            [--agent-name NAME] [--default-scenario NAME] [--audit-log FILE]
                                play scenarios as live runs over HTTP
                                (DA's /api/v1/chat/stream/start and
                                /api/v1/chat/invoke, AG-UI's /api/v1/agui;
                                first stdout line: the address)
  lce help                      this text

exit status: 0 ok, 1 input rejected, 2 usage or I/O error";

/// A failure that is not about the input's content: bad usage or I/O.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl From<lexopt::Error> for UsageError {
    fn from(e: lexopt::Error) -> Self {
        UsageError(e.to_string())
    }
}

/// Logs (payload-free summaries, audit records) go to stderr.
fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .try_init();
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(cmd) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest: Vec<std::ffi::OsString> = args.collect();
    let result = match cmd.to_str() {
        Some("check") => check::run(rest),
        Some("encode") => encode::run(rest),
        Some("invoke") => invoke::run(rest),
        Some("serve") => {
            init_logging();
            serve::run(rest)
        }
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            Ok(true)
        }
        _ => Err(UsageError(format!(
            "unknown command {cmd:?}; try `lce help`"
        ))),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(UsageError(msg)) => {
            eprintln!("lce: {msg}");
            ExitCode::from(2)
        }
    }
}
