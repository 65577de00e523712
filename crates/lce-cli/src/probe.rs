//! `lce probe URL`: drives a harness over the upstream protocol and reports
//! what it got wrong (`lce::probe`; `docs/upstream.md`, "Certify a harness").
use std::time::Duration;

const AFTER_HELP: &str = "One finding a line: CHECK: STEP: run RUN: seq SEQ: MESSAGE.
Exit status: 0 nothing found, 1 findings, 2 the probe could not run.

Example:
  lce probe http://127.0.0.1:9000 --message hi --message 'delete the report'";

/// Certify a harness: start, resume, cancel and drop runs, check every event.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The harness's base URL, http://HOST:PORT[/PATH].
    url: String,
    /// A start's message (repeatable: one start each).
    #[arg(long = "message", value_name = "TEXT", action = clap::ArgAction::Append)]
    messages: Vec<String>,
    /// The message of the cancel and disconnect steps (a long run).
    #[arg(long, value_name = "TEXT", default_value = lce::probe::DEFAULT_CANCEL_MESSAGE)]
    cancel_message: String,
    /// The agent_id of every request.
    #[arg(long, value_name = "ID", default_value = "lce-probe")]
    agent_id: String,
    /// Seconds one request may take, its whole body included.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// Seconds the whole probe may take.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    overall_timeout: f64,
    /// Seconds an accepted cancel may take to end the run with run.cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    cancel_bound: f64,
    /// Send `Authorization: Bearer` this file's token (never printed).
    #[arg(long, value_name = "FILE")]
    bearer_file: Option<std::path::PathBuf>,
    /// Accept gaps in sequence (D3 allows them).
    #[arg(long)]
    allow_gaps: bool,
    /// The report as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: Args) -> Result<bool, crate::UsageError> {
    let secs = |s: f64, name: &str| {
        let d = Duration::try_from_secs_f64(s).ok().filter(|d| !d.is_zero());
        d.ok_or_else(|| {
            crate::UsageError(format!("--{name}: {s} is not a positive number of seconds"))
        })
    };
    let bearer = match &a.bearer_file {
        Some(path) => Some(
            String::from_utf8_lossy(&crate::serve::read_secret(path, "bearer token", 1)?)
                .into_owned(),
        ),
        None => None,
    };
    let options = lce::probe::ProbeOptions::new(a.url)
        .bearer(bearer)
        .messages(a.messages)
        .cancel_message(a.cancel_message)
        .agent_id(a.agent_id)
        .request_timeout(secs(a.timeout, "timeout")?)
        .overall_timeout(secs(a.overall_timeout, "overall-timeout")?)
        .cancel_bound(secs(a.cancel_bound, "cancel-bound")?)
        .allow_gaps(a.allow_gaps);
    let report =
        lce::probe::probe_blocking(&options).map_err(|e| crate::UsageError(e.to_string()))?;
    if a.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    eprintln!("{}", report.summary());
    Ok(report.passed)
}
