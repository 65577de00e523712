//! `cargo xtask bench-python`: the Python package per event against the
//! CLI and a CPython DA-style encoder, on short realistic runs and a long
//! one, in one process (issue 33).
//!
//! Builds and installs the package as a user does (`pip install
//! crates/lce-python`: maturin, release profile) in a venv under the target
//! folder (`bench-python-venv`), builds the release `lce`, writes the corpus
//! under `bench-python/` and runs `crates/lce-python/bench.py` over it in
//! the venv, which prints the table (its docstring says how each figure is
//! taken). The corpus:
//!
//! - `short/`: `--runs` generated runs (`lce_testkit::corpus`, seeds 1..,
//!   the mixes `text`, `tools` and `mixed` in turn) whose lengths are drawn
//!   uniformly in 3..=200 with a fixed seed;
//! - `scenarios/`: the bundled scenarios (`fixtures/scenarios`);
//! - `long/`: one `mixed` run of `--long` events (seed 1);
//! - `floor.jsonl`: a 2-event run, whose `lce encode` is the process
//!   start-up the CLI rows subtract.
//!
//! `--quick` is a smoke run (a few runs, short timings) that checks the
//! whole path works, not a measure.

use std::fs;
use std::path::Path;
use std::process::Command;

use lce_testkit::corpus::{self, Mix, Options};

use crate::util::{
    Rng, cores, cpu_model, create_dir, lce, run as run_command, target_dir, workspace_root,
};

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Generated short runs (3 to 200 events each).
    #[arg(long, value_name = "N", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Events of the long run.
    #[arg(long, value_name = "N", default_value_t = 20_000,
          value_parser = clap::value_parser!(u64).range(2..))]
    long: u64,
    /// Time per contender and group, in seconds (at least 3 rounds).
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    seconds: f64,
    /// A smoke run: 6 short runs, a 500-event long run, 0.05 s.
    #[arg(long)]
    quick: bool,
    /// Use the package already installed in the venv and the `lce` already
    /// built (no pip install, no cargo build).
    #[arg(long)]
    no_build: bool,
}

/// Runs the task with the arguments after `bench-python`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let (runs, long, seconds) = if args.quick {
        (6, 500, 0.05)
    } else {
        (args.runs, args.long, args.seconds)
    };
    let root = workspace_root();
    let target = target_dir(&root);
    let work = target.join("bench-python");
    println!(
        "bench-python: {runs} short runs, a {long}-event run, about {seconds} s per contender and group"
    );
    println!("machine: {} cores, {}", cores(), cpu_model());

    let python = venv(&root, &target, !args.no_build)?;
    let lce = lce(&root, true, !args.no_build)?;
    write_corpus(&root, &work, runs, long)?;

    run_command(
        Command::new(&python)
            .arg(root.join("crates/lce-python/bench.py"))
            .arg("--corpus")
            .arg(&work)
            .arg("--lce")
            .arg(&lce)
            .args(["--seconds", &seconds.to_string()]),
    )?;
    println!();
    println!("reproduce: cargo xtask bench-python --runs {runs} --long {long} --seconds {seconds}");
    Ok(())
}

/// The venv's python, with the package built from this tree (release)
/// installed when `install`.
fn venv(root: &Path, target: &Path, install: bool) -> Result<std::path::PathBuf, String> {
    let venv = target.join("bench-python-venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        run_command(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    if install {
        run_command(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "maturin>=1.9.4,<2",
        ]))?;
        // The PEP 517 build of maturin is a release build.
        run_command(
            Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--force-reinstall",
                    "--no-deps",
                ])
                .arg(root.join("crates/lce-python")),
        )?;
    }
    Ok(python)
}

/// Writes the corpus under `work` (replacing what a previous run left).
fn write_corpus(root: &Path, work: &Path, runs: u64, long: u64) -> Result<(), String> {
    let (short, scenarios, long_dir) = (
        work.join("short"),
        work.join("scenarios"),
        work.join("long"),
    );
    for dir in [&short, &scenarios, &long_dir] {
        if dir.is_dir() {
            fs::remove_dir_all(dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        create_dir(dir)?;
    }
    let mixes = [Mix::Text, Mix::Tools, Mix::Mixed];
    let mut lengths = Rng::new(33);
    for i in 0..runs {
        let events = 3 + lengths.below(198) as u64;
        let mix = mixes[(i % 3) as usize];
        let options = Options {
            events,
            mix,
            seed: i + 1,
        };
        let path = short.join(format!("run-{i:03}-{}-{events}.jsonl", mix.name()));
        generate(&options, &path)?;
    }
    generate(
        &Options::new(long),
        &long_dir.join(format!("mixed-{long}.jsonl")),
    )?;
    generate(&Options::new(2), &work.join("floor.jsonl"))?;
    let fixtures = root.join("fixtures/scenarios");
    for path in crate::util::files_with(&fixtures, "jsonl")? {
        let name = path.file_name().unwrap_or_default();
        fs::copy(&path, scenarios.join(name))
            .map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
    }
    Ok(())
}

/// One generated run in `path`.
fn generate(options: &Options, path: &Path) -> Result<(), String> {
    let bytes = corpus::to_vec(options).map_err(|e| format!("{}: {e}", path.display()))?;
    fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
