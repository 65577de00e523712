//! `cargo xtask mutants`: mutation testing with `cargo mutants`, each library
//! crate tested by its own tests only, and the figure the reliability page
//! quotes: caught / viable mutants per crate.
//!
//! ```text
//! cargo xtask mutants [--crate C]... [--sample N] [--seed S] [--timeout SECS] [--jobs J] [--iterate]
//! ```
//!
//! - `--crate C` (repeatable): only these crates (default: every library
//!   crate of [`CRATES`]).
//! - `--sample N`: a deterministic sample of N mutants per crate (all of them
//!   when the crate has N or fewer): the crate's mutants are listed
//!   (`cargo mutants --list`), N are drawn with
//!   [`SplitMix64`](lce_testkit::rng::SplitMix64) seeded with `--seed S`
//!   (default 0), and only those run (one anchored `--re` per mutant name).
//!   The same tree, N and S always pick the same mutants.
//! - `--timeout SECS`: the per-mutant test timeout (default: cargo-mutants'
//!   own, five times the unmutated tests' time), so the run's time is
//!   bounded by the number of mutants.
//! - `--jobs J` (default 1): mutants built and tested at once.
//! - `--iterate`: after new tests, run again only what the crate's last run
//!   did not catch (cargo-mutants' own `--iterate`: the mutants in its
//!   `caught.txt`, `previously_caught.txt` and `unviable.txt` are skipped
//!   and counted as before). With the same `--sample` and `--seed` on an
//!   unchanged source tree, the figure is then the whole sample's again.
//!   Mutants are matched by file, line, column and text, so a changed
//!   source file makes its mutants new ones.
//!
//! Each crate runs as `cargo mutants --package C` (cargo-mutants then runs
//! only that package's tests: unit, integration and doc tests), with its
//! output in `target/mutants/C/mutants.out` (git-ignored). Per crate the task
//! prints caught / viable (viable = caught + missed + timed out: unviable
//! mutants, which do not build, are left out; a time-out counts as caught,
//! the tests noticed), the percentage, and every missed mutant
//! (`file:line:col: replacement`). The mutants build with `opt-level = 1`
//! and no debug info (debug assertions and overflow checks stay on), with
//! `--jobs 1` in `target/mutants/build`, kept between runs. Needs
//! `cargo-mutants`
//! (`cargo install cargo-mutants --locked`).

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use lce_testkit::rng::SplitMix64;

use crate::util::workspace_root;

/// Every library crate, in dependency order (`lce-cli` is the binary,
/// `lce-testkit` the unpublished test kit, and `lce-python`'s tests are
/// Python, which cargo-mutants cannot run: none is measured here).
/// `lce-redis`'s tests start their own Redis (`redis-server` on the `PATH`).
pub(crate) const CRATES: [&str; 10] = [
    "lce-types",
    "lce-wire",
    "lce-core",
    "lce-validate",
    "lce-sanitize",
    "lce-encode-custom",
    "lce-encode-agui",
    "lce-stream",
    "lce-redis",
    "lce",
];

const USAGE: &str =
    "usage: cargo xtask mutants [--crate C]... [--sample N] [--seed S] [--timeout SECS] [--jobs J] [--iterate]";

const MISSING: &str = "cargo-mutants is missing: cargo install cargo-mutants --locked";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    crates: Vec<String>,
    sample: Option<usize>,
    seed: u64,
    timeout: Option<u64>,
    jobs: u32,
    iterate: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        crates: Vec::new(),
        sample: None,
        seed: 0,
        timeout: None,
        jobs: 1,
        iterate: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or(format!("{a} needs {what}\n{USAGE}"))
        };
        let number = |v: String| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{a}: `{v}` is not a number\n{USAGE}"))
        };
        match a.as_str() {
            "--crate" => {
                let c = value("a crate name")?;
                if !CRATES.contains(&c.as_str()) {
                    return Err(format!(
                        "unknown crate `{c}`; crates: {}",
                        CRATES.join(", ")
                    ));
                }
                out.crates.push(c);
            }
            "--sample" => {
                let n = number(value("a number")?)?;
                out.sample = Some(usize::try_from(n).map_err(|e| e.to_string())?);
            }
            "--seed" => out.seed = number(value("a number")?)?,
            "--timeout" => out.timeout = Some(number(value("seconds")?)?),
            "--jobs" => {
                out.jobs = u32::try_from(number(value("a number")?)?)
                    .ok()
                    .filter(|j| *j > 0)
                    .ok_or(format!("--jobs needs a number from 1\n{USAGE}"))?;
            }
            "--iterate" => out.iterate = true,
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if out.crates.is_empty() {
        out.crates = CRATES.iter().map(|c| (*c).to_owned()).collect();
    }
    Ok(out)
}

/// Entry point.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let args = parse_args(args)?;
    let have = Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        return Err(MISSING.into());
    }
    let root = workspace_root();
    let mut summaries = Vec::new();
    for krate in &args.crates {
        let started = Instant::now();
        let summary = run_crate(&root, krate, &args)?;
        println!("{krate}: done in {} s", started.elapsed().as_secs());
        print!("{}", summary.render(krate));
        summaries.push((krate.clone(), summary));
    }
    println!("\nsummary:");
    for (krate, s) in &summaries {
        println!("  {}", s.headline(krate));
    }
    Ok(())
}

/// Lists, samples and runs one crate's mutants; reads the outcome files.
fn run_crate(root: &Path, krate: &str, args: &Args) -> Result<Summary, String> {
    let mut filters = Vec::new();
    if let Some(n) = args.sample {
        let output = Command::new("cargo")
            .current_dir(root)
            .args(["mutants", "--list", "--package", krate])
            .output()
            .map_err(|e| format!("cannot run cargo mutants --list: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "cargo mutants --list --package {krate} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let listed = String::from_utf8_lossy(&output.stdout);
        let names: Vec<&str> = listed.lines().filter(|l| !l.trim().is_empty()).collect();
        let picked = sample(names.len(), n, args.seed);
        println!(
            "==> {krate}: {} of {} mutants (seed {})",
            picked.len(),
            names.len(),
            args.seed
        );
        filters = picked
            .iter()
            .filter_map(|&i| names.get(i))
            .map(|name| format!("^{}$", regex_escape(name)))
            .collect();
        if filters.is_empty() {
            return Ok(Summary::default());
        }
    } else {
        println!("==> {krate}: every mutant");
    }
    let out_dir = root.join("target/mutants").join(krate);
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root)
        // cargo-mutants builds in a target folder of its own (in its copy
        // of the tree, or `target/mutants/build` below), so its profile is
        // free: no debug info (it only slows the many
        // rebuilds and links) and `opt-level = 1` (the property and
        // constant-state tests then run several times faster, which each of
        // hundreds of mutants pays). Debug assertions and overflow checks
        // stay on: the tests see what `cargo test` sees.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_DEV_OPT_LEVEL", "1")
        .args(["mutants", "--package", krate, "--test-workspace=false"])
        .args(["--no-shuffle", "--jobs"])
        .arg(args.jobs.to_string())
        .arg("--output")
        .arg(&out_dir);
    if args.jobs == 1 {
        // One build folder for every run: each run copies the tree to a new
        // temporary folder, and without this rebuilt every dependency there
        // (minutes); with it only the workspace's own crates are rebuilt.
        // Not with parallel jobs: their copies would take turns overwriting
        // each other's builds.
        cmd.env("CARGO_TARGET_DIR", root.join("target/mutants/build"));
    }
    if let Some(t) = args.timeout {
        cmd.arg("--timeout").arg(t.to_string());
    }
    if args.iterate {
        cmd.arg("--iterate");
    }
    for f in &filters {
        cmd.arg("--re").arg(f);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run cargo mutants: {e}"))?;
    // 0: all caught, 2: some missed, 3: some timed out; anything else is a
    // failure of the run itself (the unmutated tests fail, a usage error).
    if !matches!(status.code(), Some(0 | 2 | 3)) {
        return Err(format!(
            "cargo mutants --package {krate} failed with {status}"
        ));
    }
    let dir = out_dir.join("mutants.out");
    let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap_or_default();
    // With `--iterate`, what earlier runs caught is in
    // `previously_caught.txt` (empty otherwise).
    let caught = read("caught.txt") + "\n" + &read("previously_caught.txt");
    Ok(Summary::from_outcome_files(
        &caught,
        &read("missed.txt"),
        &read("timeout.txt"),
        &read("unviable.txt"),
    ))
}

/// `n` distinct indices out of `0..len`, sorted, drawn by a partial
/// Fisher-Yates shuffle from `seed`: every index when `n >= len`.
pub(crate) fn sample(len: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut all: Vec<usize> = (0..len).collect();
    if n >= len {
        return all;
    }
    let mut rng = SplitMix64::new(seed);
    for i in 0..n {
        let left = (len - i) as u64;
        let j = i + (rng.next_u64() % left) as usize;
        all.swap(i, j);
    }
    all.truncate(n);
    all.sort_unstable();
    all
}

/// `text` as a regex (the `regex` crate's syntax) matching it literally.
pub(crate) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The outcome of one crate's run, from cargo-mutants' outcome files.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Mutants the tests failed on.
    pub(crate) caught: usize,
    /// Mutants whose tests timed out (counted as caught).
    pub(crate) timeouts: usize,
    /// Mutants that did not build (not viable, not counted).
    pub(crate) unviable: usize,
    /// The names of the mutants the tests passed on.
    pub(crate) missed: Vec<String>,
}

impl Summary {
    /// Counts the non-empty lines of `caught.txt`, `timeout.txt` and
    /// `unviable.txt`, and keeps those of `missed.txt`.
    pub(crate) fn from_outcome_files(
        caught: &str,
        missed: &str,
        timeout: &str,
        unviable: &str,
    ) -> Summary {
        let lines = |s: &str| s.lines().filter(|l| !l.trim().is_empty()).count();
        Summary {
            caught: lines(caught),
            timeouts: lines(timeout),
            unviable: lines(unviable),
            missed: missed
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Caught (time-outs included).
    pub(crate) fn killed(&self) -> usize {
        self.caught + self.timeouts
    }

    /// Caught + missed + timed out.
    pub(crate) fn viable(&self) -> usize {
        self.killed() + self.missed.len()
    }

    /// `caught/viable (P.P%)`, the percentage rounded down to a tenth.
    pub(crate) fn headline(&self, krate: &str) -> String {
        let viable = self.viable();
        let permille = (self.killed() * 1000).checked_div(viable).unwrap_or(1000);
        format!(
            "{krate}: {}/{} caught ({}.{}%), {} missed, {} timed out, {} unviable",
            self.killed(),
            viable,
            permille / 10,
            permille % 10,
            self.missed.len(),
            self.timeouts,
            self.unviable
        )
    }

    /// The headline and one line per missed mutant.
    pub(crate) fn render(&self, krate: &str) -> String {
        let mut out = format!("{}\n", self.headline(krate));
        for m in &self.missed {
            out.push_str("  MISSED ");
            out.push_str(m);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn a_sample_is_deterministic_distinct_and_sorted() {
        let a = sample(96, 10, 7);
        assert_eq!(a, sample(96, 10, 7));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        assert!(a.iter().all(|&i| i < 96));
        assert_ne!(a, sample(96, 10, 8), "another seed, another sample");
    }

    #[test]
    fn a_sample_draws_by_partial_fisher_yates() {
        // Seed 1: the first three SplitMix64 outputs are 0x910A2DEC89025CC1,
        // 0xBEEB8DA1658EEC67 and 0xF893A2EEFB32555E; modulo 10, 9 and 8
        // they are 5, 7 and 6, so the swaps are (0, 5), (1, 8) and (2, 8):
        // the first three are then 5, 8 and 1 (the last one moved by the
        // second swap).
        assert_eq!(0x910A_2DEC_8902_5CC1_u64 % 10, 5);
        assert_eq!(0xBEEB_8DA1_658E_EC67_u64 % 9, 7);
        assert_eq!(0xF893_A2EE_FB32_555E_u64 % 8, 6);
        assert_eq!(sample(10, 3, 1), vec![1, 5, 8]);
    }

    #[test]
    fn a_sample_as_large_as_the_list_is_the_list() {
        assert_eq!(sample(4, 4, 1), vec![0, 1, 2, 3]);
        assert_eq!(sample(4, 100, 1), vec![0, 1, 2, 3]);
        assert_eq!(sample(0, 3, 1), Vec::<usize>::new());
        assert_eq!(sample(4, 0, 1), Vec::<usize>::new());
    }

    #[test]
    fn names_become_literal_regexes() {
        assert_eq!(
            regex_escape("src/a.rs:3:5: replace <impl Foo for Bar>::f -> Option<&str> with None"),
            r"src/a\.rs:3:5: replace <impl Foo for Bar>::f \-> Option<\&str> with None"
        );
        assert_eq!(
            regex_escape("replace * with + in f(x) [a|b] {c} ^$ #~ \\"),
            r"replace \* with \+ in f\(x\) \[a\|b\] \{c\} \^\$ \#\~ \\"
        );
    }

    #[test]
    fn outcome_files_make_the_summary() {
        let s = Summary::from_outcome_files(
            "a.rs:1:1: replace f with ()\na.rs:2:1: replace g with ()\n",
            "a.rs:9:5: replace > with >= in h\n\n",
            "a.rs:4:1: replace k with ()\n",
            "a.rs:5:1: replace m -> X with Default::default()\na.rs:6:1: x\n",
        );
        assert_eq!(
            s,
            Summary {
                caught: 2,
                timeouts: 1,
                unviable: 2,
                missed: vec!["a.rs:9:5: replace > with >= in h".to_owned()],
            }
        );
        assert_eq!(s.viable(), 4);
        assert_eq!(
            s.render("k"),
            "k: 3/4 caught (75.0%), 1 missed, 1 timed out, 2 unviable\n  MISSED a.rs:9:5: replace > with >= in h\n"
        );
    }

    #[test]
    fn the_percentage_rounds_down_and_an_empty_run_is_complete() {
        let s = Summary {
            caught: 70,
            missed: vec![String::new(); 26],
            ..Summary::default()
        };
        assert!(s.headline("v").starts_with("v: 70/96 caught (72.9%)"));
        assert!(
            Summary::default()
                .headline("e")
                .starts_with("e: 0/0 caught (100.0%)")
        );
    }

    #[test]
    fn arguments() {
        let a = parse_args(&strings(&[
            "--crate",
            "lce-validate",
            "--sample",
            "100",
            "--seed",
            "3",
        ]))
        .unwrap();
        assert_eq!(
            a,
            Args {
                crates: vec!["lce-validate".to_owned()],
                sample: Some(100),
                seed: 3,
                timeout: None,
                jobs: 1,
                iterate: false,
            }
        );
        assert!(parse_args(&strings(&["--iterate"])).unwrap().iterate);
        let all = parse_args(&[]).unwrap();
        assert_eq!(all.crates.len(), CRATES.len());
        assert!(parse_args(&strings(&["--crate", "lce-cli"])).is_err());
        assert!(parse_args(&strings(&["--sample"])).is_err());
        assert!(parse_args(&strings(&["--jobs", "0"])).is_err());
        assert!(parse_args(&strings(&["--bogus"])).is_err());
    }
}
