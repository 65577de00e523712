//! `cargo xtask mutants`: mutation testing with `cargo mutants`, each library
//! crate tested by its own tests only, and the figure the reliability page
//! quotes: caught / viable mutants per crate.
//!
//! The flags are those of [`Args`] (`cargo xtask mutants --help`).
//!
//! Each crate runs as `cargo mutants --package C` (cargo-mutants then runs
//! only that package's tests: unit, integration and doc tests), with its
//! output in `target/mutants/C/mutants.out` (git-ignored). Per crate the task
//! prints caught / viable (viable = caught + missed + timed out: unviable
//! mutants, which do not build, are left out; a time-out counts as caught,
//! the tests noticed), the percentage, and every missed mutant
//! (`file:line:col: replacement`); missed mutants that `docs/reliability.md`
//! lists as unable to matter (an equivalent mutant: the same behaviour) are
//! marked, and the figure without them is given as well. The mutants build
//! with `opt-level = 1` and no debug info (debug assertions and overflow
//! checks stay on), with
//! `--jobs 1` in `target/mutants/build`, kept between runs. Needs
//! `cargo-mutants`
//! (`cargo install cargo-mutants --locked`).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use lce_testkit::rng::SplitMix64;

use crate::util::{create_dir, workspace_root, write};

/// The page whose "Survivors that cannot matter" table lists the mutants
/// no test can catch, each with its reason ([`listed_survivors`]).
const RELIABILITY: &str = "docs/reliability.md";

/// Every library crate, in dependency order (`lce-cli` is the binary,
/// `lce-testkit` the unpublished test kit, and `lce-python`'s tests are
/// Python, which cargo-mutants cannot run: none is measured here).
/// `lce-redis`'s tests start their own Redis (`redis-server` on the `PATH`).
pub(crate) const CRATES: [&str; 12] = [
    "lce-types",
    "lce-wire",
    "lce-core",
    "lce-validate",
    "lce-sanitize",
    "lce-encode-custom",
    "lce-encode-agui",
    "lce-stream",
    "lce-runlog",
    "lce-redis",
    "lce-gateway",
    "lce",
];

const MISSING: &str = "cargo-mutants is missing: cargo install cargo-mutants --locked";

/// What the command line asked for.
#[derive(Debug, PartialEq, Eq, clap::Args)]
pub(crate) struct Args {
    /// Only these crates (repeatable; default: every library crate).
    #[arg(long = "crate", value_name = "C", value_parser = clap::builder::PossibleValuesParser::new(CRATES))]
    crates: Vec<String>,
    /// A deterministic sample of N mutants per crate (all of them when the
    /// crate has N or fewer): the crate's mutants are listed (`cargo mutants
    /// --list`), N are drawn with `SplitMix64` seeded with `--seed`, and only
    /// those run (one anchored `--re` per mutant name). The same tree, N and
    /// seed always pick the same mutants.
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// The sample's seed.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// The per-mutant test timeout (default: cargo-mutants' own, five times
    /// the unmutated tests' time), so the run's time is bounded by the
    /// number of mutants.
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Mutants built and tested at once.
    #[arg(long, value_name = "J", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    jobs: u32,
    /// After new tests, run again only what the crate's last run did not
    /// catch (cargo-mutants' own `--iterate`: the mutants in its
    /// `caught.txt`, `previously_caught.txt` and `unviable.txt` are skipped
    /// and counted as before; the unviable ones, which cargo-mutants lists
    /// with them, are kept apart in `target/mutants/C/unviable-all.txt`).
    /// With the same `--sample` and `--seed`, the figure is then the whole
    /// sample's again. Mutants are matched by file, line, column and text,
    /// so a moved mutant is a new one, and one no longer listed stops
    /// counting.
    #[arg(long)]
    iterate: bool,
}

/// Entry point.
pub(crate) fn run(mut args: Args) -> Result<(), String> {
    if args.crates.is_empty() {
        args.crates = CRATES.iter().map(|c| (*c).to_owned()).collect();
    }
    let have = Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        return Err(MISSING.into());
    }
    let root = workspace_root();
    let listed = listed_survivors(&fs::read_to_string(root.join(RELIABILITY)).unwrap_or_default());
    let mut summaries = Vec::new();
    for krate in &args.crates {
        let started = Instant::now();
        let summary = run_crate(&root, krate, &args)?.with_listed(&listed);
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

/// The crate's mutants as `cargo mutants --list` names them (the names its
/// outcome files use).
fn list(root: &Path, krate: &str) -> Result<Vec<String>, String> {
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
    Ok(lines(&String::from_utf8_lossy(&output.stdout)))
}

/// The non-empty lines of `text`.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// Lists, samples and runs one crate's mutants; reads the outcome files.
fn run_crate(root: &Path, krate: &str, args: &Args) -> Result<Summary, String> {
    // The mutants this run is about: the sample, or all of them.
    let mut names = list(root, krate)?;
    let mut filters = Vec::new();
    if let Some(n) = args.sample {
        let picked = sample(names.len(), n, args.seed);
        println!(
            "==> {krate}: {} of {} mutants (seed {})",
            picked.len(),
            names.len(),
            args.seed
        );
        names = picked
            .iter()
            .filter_map(|&i| names.get(i).cloned())
            .collect();
        filters = names
            .iter()
            .map(|name| format!("^{}$", regex_escape(name)))
            .collect();
        if filters.is_empty() {
            return Ok(Summary::default());
        }
    } else {
        println!("==> {krate}: every mutant");
    }
    let out_dir = root.join("target/mutants").join(krate);
    create_dir(&out_dir)?;
    // cargo-mutants' `--iterate` counts earlier unviable mutants among the
    // `previously_caught`: the task keeps its own list of them.
    let unviable_record = out_dir.join("unviable-all.txt");
    let mut unviable: BTreeSet<String> = if args.iterate {
        lines(&fs::read_to_string(&unviable_record).unwrap_or_default())
            .into_iter()
            .collect()
    } else {
        BTreeSet::new()
    };
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
    let read = |name: &str| lines(&fs::read_to_string(dir.join(name)).unwrap_or_default());
    unviable.extend(read("unviable.txt"));
    write(
        &unviable_record,
        unviable
            .iter()
            .map(|n| format!("{n}\n"))
            .collect::<String>(),
    )?;
    Ok(Summary::of_run(
        &names,
        &read("caught.txt"),
        &read("previously_caught.txt"),
        &read("missed.txt"),
        &read("timeout.txt"),
        &unviable,
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
    /// Those of `missed` that `docs/reliability.md` lists as unable to
    /// matter ([`listed_survivors`]).
    pub(crate) listed: Vec<String>,
}

impl Summary {
    /// The summary of a run over `names` (the mutants it was about) from
    /// its outcome lists: `previously_caught` (`--iterate`: what earlier
    /// runs caught, and, as cargo-mutants lists it, what did not build) and
    /// `unviable` (every mutant known not to build) count only for the
    /// names still listed, so a mutant that moved is not counted twice.
    pub(crate) fn of_run(
        names: &[String],
        caught: &[String],
        previously_caught: &[String],
        missed: &[String],
        timeout: &[String],
        unviable: &BTreeSet<String>,
    ) -> Summary {
        let current: BTreeSet<&String> = names.iter().collect();
        let earlier = previously_caught
            .iter()
            .filter(|n| current.contains(n) && !unviable.contains(*n))
            .count();
        Summary {
            caught: caught.len() + earlier,
            timeouts: timeout.len(),
            unviable: unviable.iter().filter(|n| current.contains(n)).count(),
            missed: missed.to_vec(),
            listed: Vec::new(),
        }
    }

    /// The summary with the missed mutants among `listed` marked as listed.
    pub(crate) fn with_listed(mut self, listed: &BTreeSet<String>) -> Summary {
        self.listed = self
            .missed
            .iter()
            .filter(|m| listed.contains(*m))
            .cloned()
            .collect();
        self
    }

    /// Caught (time-outs included).
    pub(crate) fn killed(&self) -> usize {
        self.caught + self.timeouts
    }

    /// Caught + missed + timed out.
    pub(crate) fn viable(&self) -> usize {
        self.killed() + self.missed.len()
    }

    /// `caught/viable (P.P%)`, the percentage rounded down to a tenth; when
    /// some missed mutants are listed as unable to matter, also the figure
    /// without them.
    pub(crate) fn headline(&self, krate: &str) -> String {
        let mut out = format!(
            "{krate}: {}/{} caught ({}), {} missed, {} timed out, {} unviable",
            self.killed(),
            self.viable(),
            percent(self.killed(), self.viable()),
            self.missed.len(),
            self.timeouts,
            self.unviable
        );
        if !self.listed.is_empty() {
            let rest = self.viable() - self.listed.len();
            out.push_str(&format!(
                "; without the {} listed as unable to matter: {}/{rest} ({})",
                self.listed.len(),
                self.killed(),
                percent(self.killed(), rest)
            ));
        }
        out
    }

    /// The headline and one line per missed mutant (`MISSED (listed)` for
    /// one listed as unable to matter).
    pub(crate) fn render(&self, krate: &str) -> String {
        let mut out = format!("{}\n", self.headline(krate));
        for m in &self.missed {
            out.push_str(if self.listed.contains(m) {
                "  MISSED (listed) "
            } else {
                "  MISSED "
            });
            out.push_str(m);
            out.push('\n');
        }
        out
    }
}

/// `part` of `whole` as `P.P%`, rounded down to a tenth (100.0% of nothing).
fn percent(part: usize, whole: usize) -> String {
    let permille = (part * 1000).checked_div(whole).unwrap_or(1000);
    format!("{}.{}%", permille / 10, permille % 10)
}

/// The mutants `docs/reliability.md` lists as unable to matter: in its
/// "Survivors that cannot matter" section, the first code span of each
/// table row that names a mutant as cargo-mutants does (`crates/...`), a
/// table's `\|` read as `|`.
pub(crate) fn listed_survivors(doc: &str) -> BTreeSet<String> {
    let mut in_section = false;
    let mut out = BTreeSet::new();
    for line in doc.lines() {
        if line.starts_with('#') {
            in_section = line.trim_start_matches('#').trim() == "Survivors that cannot matter";
            continue;
        }
        let Some(rest) = line.strip_prefix("| `crates/").filter(|_| in_section) else {
            continue;
        };
        if let Some(end) = rest.find('`') {
            out.insert(format!("crates/{}", rest[..end].replace("\\|", "|")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

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

    fn names(text: &str) -> Vec<String> {
        lines(text)
    }

    #[test]
    fn outcome_lists_make_the_summary() {
        let all = names(
            "a.rs:1:1: replace f with ()\na.rs:2:1: replace g with ()\na.rs:9:5: replace > with >= in h\na.rs:4:1: replace k with ()\na.rs:5:1: replace m -> X with Default::default()\na.rs:6:1: x\n",
        );
        let unviable: BTreeSet<String> =
            names("a.rs:5:1: replace m -> X with Default::default()\na.rs:6:1: x\n")
                .into_iter()
                .collect();
        let s = Summary::of_run(
            &all,
            &names("a.rs:1:1: replace f with ()\na.rs:2:1: replace g with ()\n"),
            &[],
            &names("a.rs:9:5: replace > with >= in h\n\n"),
            &names("a.rs:4:1: replace k with ()\n"),
            &unviable,
        );
        assert_eq!(
            s,
            Summary {
                caught: 2,
                timeouts: 1,
                unviable: 2,
                missed: vec!["a.rs:9:5: replace > with >= in h".to_owned()],
                listed: vec![],
            }
        );
        assert_eq!(s.viable(), 4);
        assert_eq!(
            s.render("k"),
            "k: 3/4 caught (75.0%), 1 missed, 1 timed out, 2 unviable\n  MISSED a.rs:9:5: replace > with >= in h\n"
        );
    }

    /// With `--iterate`: what was caught before counts once, unviable
    /// mutants cargo-mutants lists among the previously caught do not
    /// count as caught, and names no longer listed (moved) count not at all.
    #[test]
    fn an_iterated_run_counts_earlier_catches_once() {
        let all = names("f:1:1: a\nf:2:1: b\nf:3:1: c\nf:4:1: d\n");
        let unviable: BTreeSet<String> = names("f:4:1: d\n").into_iter().collect();
        let s = Summary::of_run(
            &all,
            &names("f:3:1: c\n"),
            &names("f:1:1: a\nf:4:1: d\nf:7:1: moved\n"),
            &names("f:2:1: b\n"),
            &[],
            &unviable,
        );
        assert_eq!(
            s,
            Summary {
                caught: 2,
                timeouts: 0,
                unviable: 1,
                missed: vec!["f:2:1: b".to_owned()],
                listed: vec![],
            }
        );
    }

    /// Listed survivors are read from the one section, `\|` unescaped;
    /// they are marked, and the figure without them follows the plain one.
    #[test]
    fn listed_survivors_are_marked_and_left_out_of_the_second_figure() {
        let doc = "## Mutation testing\n\
                   | `crates/x/src/a.rs:1:1: replace a with b` | not listed: another section |\n\
                   ### Survivors that cannot matter\n\
                   | mutant | why |\n\
                   |---|---|\n\
                   | `crates/x/src/a.rs:2:3: replace \\| with ^ in f` | disjoint bits |\n\
                   | `crates/x/src/b.rs:4:5: replace < with <= in g` (`g`'s guard) | exact instants |\n\
                   | `lce-x` prose row | not a name |\n\
                   ## Next\n\
                   | `crates/x/src/c.rs:1:1: replace c with d` | not listed |\n";
        let listed = listed_survivors(doc);
        assert_eq!(
            listed.iter().map(String::as_str).collect::<Vec<_>>(),
            [
                "crates/x/src/a.rs:2:3: replace | with ^ in f",
                "crates/x/src/b.rs:4:5: replace < with <= in g",
            ]
        );
        let s = Summary {
            caught: 7,
            timeouts: 1,
            missed: names(
                "crates/x/src/a.rs:2:3: replace | with ^ in f\ncrates/x/src/c.rs:1:1: replace c with d\n",
            ),
            ..Summary::default()
        }
        .with_listed(&listed);
        assert_eq!(s.listed, ["crates/x/src/a.rs:2:3: replace | with ^ in f"]);
        assert_eq!(
            s.render("x"),
            "x: 8/10 caught (80.0%), 2 missed, 1 timed out, 0 unviable; without the 1 listed as unable to matter: 8/9 (88.8%)\n  \
             MISSED (listed) crates/x/src/a.rs:2:3: replace | with ^ in f\n  \
             MISSED crates/x/src/c.rs:1:1: replace c with d\n"
        );
    }

    /// The page the task reads lists only names cargo-mutants could give:
    /// a `crates/<crate>/src/<file>.rs:<line>:<col>: replace ...` of a
    /// measured crate whose file exists.
    #[test]
    fn the_listed_survivors_name_existing_files_of_measured_crates() {
        let root = workspace_root();
        let listed = listed_survivors(&fs::read_to_string(root.join(RELIABILITY)).unwrap());
        assert!(
            !listed.is_empty(),
            "no survivor listed: did the section move?"
        );
        for name in &listed {
            let (file, rest) = name.split_once(':').unwrap();
            let krate = file.split('/').nth(1).unwrap();
            assert!(CRATES.contains(&krate), "{name}");
            assert!(root.join(file).is_file(), "{name}");
            let (line_col, what) = rest.split_once(": ").unwrap();
            assert!(
                line_col.split(':').all(|n| n.parse::<u32>().is_ok()),
                "{name}"
            );
            assert!(
                what.starts_with("replace ") || what.starts_with("delete "),
                "{name}"
            );
        }
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
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let parse = |v: &[&str]| {
            Cli::try_parse_from(std::iter::once("mutants").chain(v.iter().copied())).map(|c| c.args)
        };
        let a = parse(&["--crate", "lce-validate", "--sample", "100", "--seed", "3"]).unwrap();
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
        assert!(parse(&["--iterate"]).unwrap().iterate);
        assert!(
            parse(&[]).unwrap().crates.is_empty(),
            "all, filled in by run"
        );
        assert!(parse(&["--crate", "lce-cli"]).is_err());
        assert!(parse(&["--sample"]).is_err());
        assert!(parse(&["--jobs", "0"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }
}
