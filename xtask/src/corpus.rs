//! `cargo xtask corpus`: the command line of the benchmark corpus generator,
//! [`lce_testkit::corpus`] (what a run guarantees and how it is built are
//! documented there and in `docs/corpus.md`).
//!
//! ```text
//! cargo xtask corpus --events N [--mix text|tools|mixed] [--seed S] [--out FILE] [--stats]
//! ```
//!
//! Writes the run to `--out FILE` or stdout through a 64 KiB `BufWriter`;
//! `--stats` prints the count of each event type to stderr. The defaults are
//! those of [`Options::new`]: mix `mixed`, seed 1.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;

use lce_testkit::corpus::{self, Mix, Options};

/// The civil date of a day number, for `release` (it lived here with the
/// generator's clock, and moved with it to `lce-testkit`).
pub(crate) use lce_testkit::time::civil_from_days;

/// Usage line of the task.
const USAGE: &str = "usage: cargo xtask corpus --events N [--mix text|tools|mixed] [--seed S] [--out FILE] [--stats]";

/// What the command line asked for.
#[derive(Debug)]
struct Args {
    /// `--events N`, `--mix`, `--seed S`.
    options: Options,
    /// `--out FILE`: where to write (stdout when absent).
    out: Option<PathBuf>,
    /// `--stats`: print the count of each event type to stderr.
    stats: bool,
}

/// Runs the task with the arguments after `corpus`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let stats = match &args.out {
        Some(path) => {
            let file =
                File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            corpus::write(&args.options, BufWriter::with_capacity(1 << 16, file))
        }
        None => {
            let stdout = io::stdout();
            corpus::write(
                &args.options,
                BufWriter::with_capacity(1 << 16, stdout.lock()),
            )
        }
    }
    .map_err(|e| format!("corpus: cannot write: {e}"))?;
    if args.stats {
        eprint!("{stats}");
    }
    Ok(())
}

/// Parses the arguments after `corpus`.
fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut events = None;
    let mut mix = Mix::Mixed;
    let mut seed = 1;
    let mut out = None;
    let mut stats = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| {
            iter.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--events" => {
                let text = value("--events")?;
                let n: u64 = text
                    .replace('_', "")
                    .parse()
                    .map_err(|_| format!("--events: `{text}` is not a count"))?;
                if n < 2 {
                    return Err("--events must be at least 2 (run.started and a terminal)".into());
                }
                events = Some(n);
            }
            "--mix" => {
                let text = value("--mix")?;
                mix = Mix::from_name(&text)
                    .ok_or_else(|| format!("--mix: `{text}` is not one of text, tools, mixed"))?;
            }
            "--seed" => {
                let text = value("--seed")?;
                seed = text
                    .parse()
                    .map_err(|_| format!("--seed: `{text}` is not an unsigned integer"))?;
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--stats" => stats = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("corpus: unknown argument `{other}`\n{USAGE}")),
        }
    }
    let events = events.ok_or_else(|| format!("--events is required\n{USAGE}"))?;
    Ok(Args {
        options: Options { events, mix, seed },
        out,
        stats,
    })
}
