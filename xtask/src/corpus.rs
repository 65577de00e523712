//! `cargo xtask corpus`: the command line of the benchmark corpus generator,
//! [`lce_testkit::corpus`] (what a run guarantees and how it is built are
//! documented there and in `docs/corpus.md`).
//!
//! Writes the run to `--out FILE` or stdout through a 64 KiB `BufWriter`;
//! `--stats` prints the count of each event type to stderr. The defaults are
//! those of [`Options::new`]: mix `mixed`, seed 1.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;

use lce_testkit::corpus::{self, Mix, Options};

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Events in the run (at least 2: run.started and a terminal; `_`
    /// separators allowed).
    #[arg(long, value_name = "N", value_parser = events)]
    events: u64,
    /// The mix of event kinds: text, tools or mixed.
    #[arg(long, default_value = "mixed", value_parser = mix)]
    mix: Mix,
    /// The generator's seed.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// Where to write (stdout when absent).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print the count of each event type to stderr.
    #[arg(long)]
    stats: bool,
}

/// A count with optional `_` separators (`10_000_000`).
pub(crate) fn count(text: &str) -> Result<u64, String> {
    text.replace('_', "")
        .parse()
        .map_err(|_| format!("`{text}` is not a count"))
}

/// `--events`: a count of at least 2.
fn events(text: &str) -> Result<u64, String> {
    match count(text)? {
        n if n < 2 => Err("must be at least 2 (run.started and a terminal)".into()),
        n => Ok(n),
    }
}

/// `--mix`: text, tools or mixed.
pub(crate) fn mix(text: &str) -> Result<Mix, String> {
    Mix::from_name(text).ok_or_else(|| format!("`{text}` is not one of text, tools, mixed"))
}

/// Runs the task with the arguments after `corpus`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let options = Options {
        events: args.events,
        mix: args.mix,
        seed: args.seed,
    };
    let stats = match &args.out {
        Some(path) => {
            let file =
                File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            corpus::write(&options, BufWriter::with_capacity(1 << 16, file))
        }
        None => {
            let stdout = io::stdout();
            corpus::write(&options, BufWriter::with_capacity(1 << 16, stdout.lock()))
        }
    }
    .map_err(|e| format!("corpus: cannot write: {e}"))?;
    if args.stats {
        eprint!("{stats}");
    }
    Ok(())
}
