//! `cargo xtask fuzz`: runs every fuzz target (or one) for a bounded time
//! with `cargo fuzz run -s none` on the stable toolchain, after refreshing
//! the seed corpora from `fixtures/`.
//!
//! Seeds are derived deterministically from `fixtures/` and kept small
//! (files over [`MAX_SEED_BYTES`] are skipped; the door's targets' seeds are
//! written out in [`door_seeds`]): they are committed, and
//! `crates/lce-testkit/tests/fuzz_corpus.rs` replays them (and every crash
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
pub(crate) const TARGETS: [&str; 10] = [
    "parse_line",
    "validator",
    "sanitizer",
    "encode_custom",
    "encode_agui",
    "coordinator",
    "sse_decoder",
    "id_check",
    "last_event_id",
    "upstream_reader",
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

/// `upstream_reader`'s escape: `REPEAT b n2 n1 n0` is byte `b` repeated
/// `n` (24 bits, big-endian) times (`lce_testkit::fuzzing`).
const REPEAT: u8 = 0xF5;

/// lce's line bound, `lce_types::DEFAULT_MAX_LINE_BYTES` (xtask's build
/// does not link lce-types; a test checks they agree).
const LINE_BOUND: usize = 4 * 1024 * 1024;

/// `upstream_reader`'s bound byte for the real 4 MiB bound.
const REAL_BOUND: u8 = 255;

/// A run of `n` bytes `b` in `upstream_reader`'s input.
fn repeat(b: u8, n: usize) -> Vec<u8> {
    assert!(n < 1 << 24, "a run's length has 24 bits");
    let [.., n2, n1, n0] = n.to_be_bytes();
    vec![REPEAT, b, n2, n1, n0]
}

/// The seeds of the door's targets (`id_check`, `last_event_id`,
/// `upstream_reader`): written out here, the cases `gateway.md`'s "Limits
/// at the door" names, and real events from `fixtures/scenarios`.
fn door_seeds(
    root: &Path,
    seeds: &mut BTreeMap<&str, Vec<(String, Vec<u8>)>>,
) -> Result<(), String> {
    let named = |cases: &[(&str, &[u8])]| -> Vec<(String, Vec<u8>)> {
        cases
            .iter()
            .map(|(name, data)| ((*name).to_owned(), data.to_vec()))
            .collect()
    };
    let r256 = "r".repeat(256);
    let r257 = "r".repeat(257);
    seeds.insert(
        "id_check",
        named(&[
            ("short", b"c1"),
            ("lce-run-id", b"run-7f3a9c01"),
            ("every-punctuation", b"a.b_c:d@e-f"),
            ("uuid", b"3f2b8c1e-9a4d-4e5f-8b6a-0c1d2e3f4a5b"),
            ("dot-last", b"x."),
            ("empty", b""),
            ("dot", b"."),
            ("dot-dot", b".."),
            ("dot-first", b".hidden"),
            ("log-forgery", b"x\nFORGED level=ERROR"),
            ("hash-tag", b"{tag}"),
            ("path", b"a/b"),
            ("space", b"a b"),
            ("non-ascii", "\u{e9}t\u{e9}".as_bytes()),
            ("percent", b"a%2F"),
            ("nul", b"a\0b"),
            ("invalid-utf8", b"a\xff\xfeb"),
            ("bound", r256.as_bytes()),
            ("over-bound", r257.as_bytes()),
        ]),
    );
    seeds.insert(
        "last_event_id",
        named(&[
            ("first", b"1.0"),
            ("plain", b"42.3"),
            ("largest", b"18446744073709551615.18446744073709551615"),
            ("position-overflow", b"18446744073709551616.0"),
            ("index-overflow", b"1.18446744073709551616"),
            ("position-zero", b"0.0"),
            ("leading-zero", b"01.0"),
            ("index-leading-zero", b"1.00"),
            ("no-index", b"1."),
            ("no-position", b".1"),
            ("no-dot", b"17"),
            ("two-dots", b"1.2.3"),
            ("sign", b"+1.0"),
            ("space", b" 1.0"),
            ("comma", b"1,0"),
            ("arabic-digits", "\u{661}.\u{660}".as_bytes()),
            ("empty", b""),
            ("display-max", &[0xff; 16]),
            (
                "display-position-zero",
                &[0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0],
            ),
        ]),
    );

    // upstream_reader: flags (media: 0 ndjson, 1 SSE; 4 = the body breaks),
    // a bound byte, four chunk-size bytes (0: the rest; 1-127 bytes; 128+:
    // 32 KiB steps), then the body.
    let scenario = crate::util::read(&root.join("fixtures/scenarios/plain-text-answer.jsonl"))?;
    let lines: Vec<&str> = scenario.lines().collect();
    let mut sse = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i == 1 {
            sse.push_str(": keep-alive\n\n");
        }
        if i == 2 {
            sse.push_str("event: ignored\nid: 9\n");
        }
        sse.push_str(&format!("data: {line}\n\n"));
    }
    let bound = LINE_BOUND;
    let with = |head: [u8; 6], parts: &[&[u8]]| -> Vec<u8> {
        let mut out = head.to_vec();
        for p in parts {
            out.extend_from_slice(p);
        }
        out
    };
    let first = format!("{}\n", lines[0]);
    let crlf = format!("{}\r\n{}\r\n", lines[0], lines[1]);
    let blanks = format!("\n{}\n\n", lines[0]);
    let tail = lines[0].to_owned();
    seeds.insert(
        "upstream_reader",
        vec![
            (
                "ndjson-run".into(),
                with([0, REAL_BOUND, 0, 1, 7, 64], &[scenario.as_bytes()]),
            ),
            (
                "ndjson-run-small-bound".into(),
                with([0, 200, 3, 17, 0, 5], &[scenario.as_bytes()]),
            ),
            (
                "ndjson-crlf".into(),
                with([2, REAL_BOUND, 2, 3, 5, 7], &[crlf.as_bytes()]),
            ),
            (
                "ndjson-blank-lines".into(),
                with([3, 64, 1, 0, 1, 0], &[blanks.as_bytes()]),
            ),
            (
                "ndjson-tail-no-newline".into(),
                with([0, REAL_BOUND, 9, 0, 9, 0], &[tail.as_bytes()]),
            ),
            (
                "ndjson-tail-broken".into(),
                with(
                    [4, REAL_BOUND, 9, 0, 9, 0],
                    &[first.as_bytes(), tail.as_bytes()],
                ),
            ),
            (
                "ndjson-line-at-small-bound".into(),
                with([0, 8, 3, 4, 5, 6], &[b"12345678\n123456789\nabc"]),
            ),
            (
                "ndjson-invalid-utf8".into(),
                with([0, 16, 1, 2, 3, 4], &[b"{\"a\xff\":1}\n\xfe\n"]),
            ),
            (
                "sse-run".into(),
                with([1, REAL_BOUND, 0, 1, 13, 64], &[sse.as_bytes()]),
            ),
            (
                "sse-run-small-bound".into(),
                with([1, 100, 5, 0, 1, 9], &[sse.as_bytes()]),
            ),
            (
                "sse-cut-frame-broken".into(),
                with(
                    [5, REAL_BOUND, 3, 3, 3, 3],
                    &[sse.as_bytes(), b"data: {\"cut"],
                ),
            ),
            (
                "sse-carriage-return".into(),
                with([1, 64, 1, 2, 3, 4], &[b"data: {}\r\n\r\ndata: {}\n\n"]),
            ),
            // The real 4 MiB bound: a line of exactly the bound, then one
            // over it (each followed by an event, which must survive), in
            // 32 KiB chunks and in the input's own.
            (
                "ndjson-line-at-bound".into(),
                with(
                    [0, REAL_BOUND, 128, 0, 0, 0],
                    &[&repeat(b'x', bound), b"\n", first.as_bytes()],
                ),
            ),
            (
                "ndjson-line-over-bound".into(),
                with(
                    [0, REAL_BOUND, 129, 1, 255, 3],
                    &[&repeat(b'x', bound + 1), b"\n", first.as_bytes()],
                ),
            ),
            (
                "ndjson-over-bound-no-newline".into(),
                with(
                    [0, REAL_BOUND, 200, 0, 0, 0],
                    &[first.as_bytes(), &repeat(b' ', bound + 7)],
                ),
            ),
            (
                "ndjson-over-bound-broken".into(),
                with(
                    [4, REAL_BOUND, 160, 161, 0, 0],
                    &[
                        first.as_bytes(),
                        &repeat(b'{', bound + 2),
                        b"\n",
                        first.as_bytes(),
                        b"{",
                    ],
                ),
            ),
            (
                "sse-frame-at-bound".into(),
                with(
                    [1, REAL_BOUND, 128, 7, 0, 0],
                    &[b"data: ", &repeat(b'x', bound - 6), b"\n\n", sse.as_bytes()],
                ),
            ),
            (
                "sse-frame-over-bound".into(),
                with(
                    [1, REAL_BOUND, 255, 1, 0, 0],
                    &[b": ", &repeat(b'x', bound), b"\n\n", sse.as_bytes()],
                ),
            ),
        ],
    );
    Ok(())
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
    door_seeds(root, &mut seeds)?;

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

#[cfg(test)]
mod tests {
    #[test]
    fn the_seeds_line_bound_is_lces() {
        assert_eq!(super::LINE_BOUND, lce_types::DEFAULT_MAX_LINE_BYTES);
    }
}
