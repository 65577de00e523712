//! The `lce` command-line tool.
//!
//! ```text
//! lce check [OPTIONS] [FILE]...     report malformed lines and broken rules
//! lce encode --to FORMAT [FILE]     canonical events to SSE on stdout
//! lce invoke [OPTIONS] [FILE]       DA's non-streaming invoke answer
//! lce serve [OPTIONS]               the gateway (lce::gateway) over HTTP
//! lce probe URL [OPTIONS]           certify a harness (lce::probe)
//! lce token RUN_ID --token-secret-file FILE   a run's read token
//! lce help [COMMAND]                help (also `--help` on every command)
//! lce --version
//! ```
//!
//! The command line is parsed by `clap`: every command has `--help` (with
//! its options and an example), misspelt commands and options get a
//! suggestion. FILE is a path, or `-` (or nothing) for stdin.
//!
//! Exit status, for every command: 0 ok, 1 input rejected, 2 usage or I/O
//! error. `--help` and `--version` print to stdout and exit 0; a usage error
//! prints to stderr and exits 2.
//!
//! `lce check` messages go to stderr as `FILE:LINE: message`
//! (`FILE:LINE: seq S: rule R (name): message` for a broken rule, and
//! `FILE:LINE:COLUMN: message` followed by an excerpt of the line and a
//! caret for a line that is not a canonical event, where the parser locates
//! the defect); `--json` writes one machine-readable report per file to
//! stdout instead (see `check`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod encode;
mod input;
mod invoke;
mod probe;
mod serve;
mod signals;
mod usage;

use usage::UsageError;

/// What `lce --help` shows after the list of commands.
const AFTER_HELP: &str = "\
FILE is a path, or `-` (or nothing) for stdin.
Exit status: 0 ok, 1 input rejected, 2 usage or I/O error.
See `lce help <COMMAND>` (or `lce <COMMAND> --help`) for a command's options and an example.";

/// Canonical Lifecycle Events v1 toolkit: check, encode and serve runs of
/// canonical events (JSON Lines).
#[derive(Debug, Parser)]
#[command(
    name = "lce",
    version,
    after_help = AFTER_HELP,
    arg_required_else_help = true,
    // A repeated option keeps its last value (`--to agui --to custom`), as
    // before clap.
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Check(check::Args),
    Encode(encode::Args),
    Invoke(invoke::Args),
    Serve(serve::Args),
    Probe(probe::Args),
    Token(serve::TokenArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and exit 0; usage errors go to
            // stderr and exit 2 (clap's usage code).
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // 0 accepted, 1 rejected.
    let accepted = |ok: bool| {
        if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    };
    let result = match cli.command {
        Command::Check(args) => check::run(args),
        Command::Encode(args) => encode::run(args).map(accepted),
        Command::Invoke(args) => invoke::run(args).map(accepted),
        // Logs (payload-free summaries, audit records) go to stderr, as
        // --log-format says, filtered by RUST_LOG (`lce::telemetry`).
        Command::Serve(args) => {
            lce::telemetry::logs::init(args.log_format, args.otlp_endpoint.as_deref())
                .map_err(|e| UsageError(e.to_string()))
                .and_then(|spans| serve::run(args, spans))
        }
        .map(accepted),
        Command::Probe(args) => probe::run(args).map(accepted),
        Command::Token(args) => serve::print_token(&args).map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(UsageError(msg)) => {
            eprintln!("lce: {msg}");
            ExitCode::from(2)
        }
    }
}
