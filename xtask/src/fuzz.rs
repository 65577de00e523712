//! `cargo xtask fuzz`: runs every fuzz target (or one) for a bounded time
//! with `cargo fuzz run -s none` on the stable toolchain, after refreshing
//! the seed corpora from `fixtures/`.
//!
//! Seeds are derived deterministically from `fixtures/` and kept small
//! (files over [`MAX_SEED_BYTES`] are skipped): they are committed, and
//! `crates/lce-stream/tests/fuzz_corpus.rs` replays them (and every crash
//! artifact under `fuzz/artifacts/`) in a normal `cargo test`. What libFuzzer
//! adds to a corpus while it runs is git-ignored. A target that finds a crash
//! fails the task and leaves the reproducer in `fuzz/artifacts/<target>/`.
//! Needs `cargo-fuzz` (`cargo install cargo-fuzz --locked`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::util::{create_dir, files_with, stem, workspace_root, write};

/// Every fuzz target, in the order they run.
pub(crate) const TARGETS: [&str; 7] = [
    "parse_line",
    "validator",
    "sanitizer",
    "encode_custom",
    "encode_agui",
    "coordinator",
    "sse_decoder",
];

/// Seeds larger than this are not used (keeps the committed corpora small).
const MAX_SEED_BYTES: usize = 6 * 1024;

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Each target runs `-max_total_time=N`.
    #[arg(long, value_name = "N", default_value_t = 60)]
    seconds: u64,
    /// Only this target (default: all of them).
    #[arg(long, value_name = "T", value_parser = clap::builder::PossibleValuesParser::new(TARGETS))]
    target: Option<String>,
    /// Rewrite `fuzz/corpus/<target>/seed-*` and stop.
    #[arg(long)]
    seeds_only: bool,
    /// Build the targets without optimisations (CI's smoke: the build
    /// dominates a short run, and a dev build is much quicker).
    #[arg(long)]
    dev: bool,
}

/// Entry point.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let Args {
        seconds,
        target,
        seeds_only,
        dev,
    } = args;
    let targets: Vec<&str> = match &target {
        Some(t) => vec![t.as_str()],
        None => TARGETS.to_vec(),
    };
    let profile = if dev { "--dev" } else { "-O" };
    let root = workspace_root();
    let written = write_seeds(&root)?;
    for (target, (files, bytes)) in &written {
        println!("seeds: {target}: {files} files, {bytes} bytes");
    }
    if seeds_only {
        return Ok(());
    }
    let fuzz = root.join("fuzz");
    let have = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        return Err("cargo-fuzz is missing: cargo install cargo-fuzz --locked".into());
    }
    // One build for every target, then short runs.
    let started = Instant::now();
    crate::util::run(
        Command::new("cargo")
            .current_dir(&fuzz)
            .args(["fuzz", "build", "-s", "none", profile]),
    )?;
    println!("fuzz targets built in {} s", started.elapsed().as_secs());
    let mut failed = Vec::new();
    for target in &targets {
        let started = Instant::now();
        println!("==> fuzz {target} for {seconds} s");
        let status = Command::new("cargo")
            .current_dir(&fuzz)
            .args(["fuzz", "run", "-s", "none", profile, target, "--"])
            .arg(format!("-max_total_time={seconds}"))
            .args(["-rss_limit_mb=2048", "-timeout=10", "-print_final_stats=1"])
            .status()
            .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
        let took = started.elapsed().as_secs();
        if status.success() {
            println!("ok: {target} ran clean for {took} s");
        } else {
            println!("FAILED: {target} ({status}); reproducer in fuzz/artifacts/{target}/");
            failed.push(*target);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz targets failed: {}", failed.join(", ")))
    }
}

/// The `.ext` files of a fixtures folder, sorted, no larger than the cap.
fn fixture_files(root: &Path, dir: &str, ext: &str, max: usize) -> Result<Vec<PathBuf>, String> {
    let mut files = files_with(&root.join("fixtures").join(dir), ext)?;
    files.retain(|p| fs::metadata(p).is_ok_and(|m| m.len() <= max.min(MAX_SEED_BYTES) as u64));
    Ok(files)
}

/// Rewrites every target's `seed-*` files; returns files and bytes per target.
fn write_seeds(root: &Path) -> Result<BTreeMap<String, (usize, usize)>, String> {
    let mut seeds: BTreeMap<&str, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    let read = |p: &Path| fs::read(p).map_err(|e| format!("{}: {e}", p.display()));

    // parse_line: every malformed line, and a few lines of each event type.
    let mut per_type: BTreeMap<String, usize> = BTreeMap::new();
    let mut lines = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for dir in ["malformed", "scenarios", "hostile"] {
        for p in fixture_files(root, dir, "jsonl", MAX_SEED_BYTES)? {
            for (i, line) in read(&p)?.split(|&b| b == b'\n').enumerate() {
                if !seen.insert(line.to_vec()) {
                    continue;
                }
                if dir != "malformed" {
                    let text = String::from_utf8_lossy(line);
                    let ty = text
                        .split("\"type\":\"")
                        .nth(1)
                        .and_then(|r| r.split('"').next())
                        .unwrap_or("")
                        .to_owned();
                    let n = per_type.entry(format!("{dir}/{ty}")).or_default();
                    *n += 1;
                    if *n > 1 {
                        continue;
                    }
                }
                lines.push((format!("{dir}-{}-{}", stem(&p), i + 1), line.to_vec()));
            }
        }
    }
    seeds.insert("parse_line", lines);

    // Whole runs, in the harnesses' JSON Lines mode.
    let runs = |dirs: &[(&str, usize)]| -> Result<Vec<(String, Vec<u8>)>, String> {
        let mut out = Vec::new();
        for (dir, max) in dirs {
            for p in fixture_files(root, dir, "jsonl", *max)? {
                out.push((format!("{dir}-{}", stem(&p)), read(&p)?));
            }
        }
        Ok(out)
    };
    let all = MAX_SEED_BYTES;
    seeds.insert("validator", runs(&[("scenarios", all), ("invalid", 1536)])?);
    seeds.insert("sanitizer", runs(&[("hostile", 2048)])?);
    seeds.insert("encode_custom", runs(&[("scenarios", all)])?);
    seeds.insert("encode_agui", runs(&[("scenarios", all)])?);
    seeds.insert(
        "coordinator",
        runs(&[("scenarios", all), ("invalid", 1536)])?,
    );

    // sse_decoder: golden wires, whole (default bound) and with a small
    // bound and odd chunkings; header: bound byte, four chunk sizes.
    let mut sse = Vec::new();
    for format in ["custom", "agui", "agui-v1"] {
        for (k, p) in fixture_files(root, &format!("golden/{format}"), "sse", 2048)?
            .iter()
            .enumerate()
        {
            let header: &[u8] = if k % 2 == 0 {
                &[255, 0, 1, 7, 64]
            } else {
                &[63, 3, 5, 17, 1]
            };
            let mut bytes = header.to_vec();
            bytes.extend(read(p)?);
            sse.push((format!("{format}-{}", stem(p)), bytes));
        }
    }
    seeds.insert("sse_decoder", sse);

    let mut written = BTreeMap::new();
    for (target, files) in seeds {
        let dir = root.join("fuzz/corpus").join(target);
        create_dir(&dir)?;
        // Drop stale seeds (a fixture renamed or grown past the cap).
        for e in fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))
            {
                fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            }
        }
        let mut bytes = 0;
        for (name, data) in &files {
            bytes += data.len();
            let p = dir.join(format!("seed-{name}"));
            write(&p, data)?;
        }
        written.insert(target.to_owned(), (files.len(), bytes));
    }
    Ok(written)
}
