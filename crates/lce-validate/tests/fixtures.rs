//! The fixtures: every valid scenario passes, every invalid run is rejected
//! with exactly the rule and sequence of its `.expect` sidecar.

// Test helpers may panic: a panic is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lce_types::{Event, EventLines};
use lce_validate::{Mode, Rule, RunValidator, ValidatorOptions, Violation};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

fn events(path: &Path) -> Vec<Event> {
    let f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    EventLines::new(f)
        .map(|r| {
            r.unwrap()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

fn run(evs: &[Event], opts: ValidatorOptions) -> Result<(), Violation> {
    let mut v = RunValidator::new(opts);
    for e in evs {
        v.push(e)?;
    }
    v.finish()
}

/// The rows of the table under `## <section>` in `fixtures/README.md`:
/// (first column, the fixture names in backticks in the second column).
fn readme_table(section: &str) -> Vec<(String, BTreeSet<String>)> {
    let readme = std::fs::read_to_string(fixtures().join("README.md")).unwrap();
    let start = readme
        .find(&format!("\n## `{section}/`"))
        .unwrap_or_else(|| panic!("README.md has no `{section}/` section"));
    let text = &readme[start + 1..];
    let text = &text[..text[3..].find("\n## ").map_or(text.len(), |i| i + 3)];
    text.lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split_once(" | "))
        .filter(|(key, _)| !matches!(*key, "file" | "rule" | "kind" | "---"))
        .map(|(key, rest)| {
            let names = rest
                .split('`')
                .skip(1)
                .step_by(2)
                // Fixture names have a hyphen; other quoted words are notes.
                .filter(|n| n.contains('-') && !n.contains(' ') && !n.starts_with('-'))
                .map(str::to_owned)
                .collect();
            (key.trim_matches('`').to_owned(), names)
        })
        .collect()
}

fn stems(files: &[PathBuf]) -> BTreeSet<String> {
    files
        .iter()
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_scenario_passes_in_full_and_adapter_mode() {
    let files = files("scenarios", "jsonl");
    // Exactly the scenarios `fixtures/README.md` lists.
    let listed: BTreeSet<String> = readme_table("scenarios")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(stems(&files), listed, "scenarios vs fixtures/README.md");
    for f in files {
        let evs = events(&f);
        for opts in [
            ValidatorOptions::new(),
            ValidatorOptions::new().contiguous(true),
            ValidatorOptions::new().mode(Mode::Adapter),
        ] {
            if let Err(v) = run(&evs, opts) {
                panic!("{}: {v}", f.display());
            }
        }
    }
}

/// An `.expect` sidecar: `{"rule": "8", "decision": "D4", "sequence": 5}`.
/// `rule` is the contract's rule number (`"X"` for run identity);
/// `decision`, present for a decision's check, the decision it refines the
/// rule with (absent for the contract's own rule).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    rule: String,
    #[serde(default)]
    decision: Option<String>,
    sequence: u64,
}

impl Expect {
    fn rule(&self) -> Rule {
        Rule::from_id_and_decision(&self.rule, self.decision.as_deref())
            .unwrap_or_else(|| panic!("no rule {} with decision {:?}", self.rule, self.decision))
    }
}

fn expectations() -> Vec<(PathBuf, Expect)> {
    files("invalid", "jsonl")
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(f.with_extension("expect")).unwrap();
            let exp: Expect = serde_json::from_str(&text).unwrap();
            (f, exp)
        })
        .collect()
}

#[test]
fn every_invalid_run_breaks_exactly_its_rule() {
    let mut failures = Vec::new();
    for (f, exp) in expectations() {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let want = exp.rule();
        match run(&events(&f), ValidatorOptions::new()) {
            Ok(()) => failures.push(format!("{name}: accepted, expected {want}")),
            Err(v) => {
                if v.rule != want
                    || v.rule.id() != exp.rule
                    || v.rule.decision() != exp.decision.as_deref()
                    || v.sequence != exp.sequence
                {
                    failures.push(format!(
                        "{name}: got {} at seq {} ({v}), expected {want} at seq {}",
                        v.rule, v.sequence, exp.sequence
                    ));
                }
            }
        }
        // The file's name tells the rule (`rNN-`, `x-`) or the decision
        // (`dN-`, whose rule is the one it refines) too.
        let prefix = name.split('-').next().unwrap_or("");
        match prefix {
            "x" => assert_eq!(
                (exp.rule.as_str(), exp.decision.as_deref()),
                ("X", None),
                "{name}: name and .expect disagree"
            ),
            p if p.starts_with('r') => assert_eq!(
                (exp.rule.as_str(), exp.decision.as_deref()),
                (p[1..].trim_start_matches('0'), None),
                "{name}: name and .expect disagree"
            ),
            p => assert_eq!(
                exp.decision.as_deref(),
                Some(p.to_uppercase().as_str()),
                "{name}: name and .expect disagree"
            ),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_rule_has_at_least_two_invalid_fixtures() {
    let mut count: BTreeMap<Rule, usize> = BTreeMap::new();
    for (_, exp) in expectations() {
        *count.entry(exp.rule()).or_default() += 1;
    }
    // Every rule and every decision's check, but D3's opt-in contiguity
    // (the fixtures are checked with the default options).
    for rule in Rule::ALL.iter().filter(|r| **r != Rule::D3Contiguous) {
        let n = count.get(rule).copied().unwrap_or(0);
        assert!(n >= 2, "{rule} has {n} invalid fixture(s), need 2");
    }
}

/// Each rule's invalid fixtures are exactly those `fixtures/README.md`
/// lists for it (the row `N` of a contract rule, `N / D` of a decision's
/// check).
#[test]
fn invalid_fixtures_are_the_ones_the_readme_lists() {
    let mut by_rule: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (f, exp) in expectations() {
        let key = match &exp.decision {
            Some(d) => format!("{} / {d}", exp.rule),
            None => exp.rule.clone(),
        };
        by_rule
            .entry(key)
            .or_default()
            .extend(stems(std::slice::from_ref(&f)));
    }
    let listed: BTreeMap<String, BTreeSet<String>> = readme_table("invalid").into_iter().collect();
    assert_eq!(by_rule, listed, "invalid fixtures vs fixtures/README.md");
}

#[test]
fn violation_messages_carry_no_payload_text() {
    // Every delta, result, message and argument text in the invalid fixtures
    // is longer than 3 bytes and made of words; none may appear in a message.
    for (f, _) in expectations() {
        let evs = events(&f);
        let Err(v) = run(&evs, ValidatorOptions::new()) else {
            continue;
        };
        for e in &evs {
            let texts: Vec<String> = match &e.payload {
                lce_types::Payload::TextDelta(d) | lce_types::Payload::ReasoningDelta(d) => {
                    vec![d.delta.clone()]
                }
                lce_types::Payload::ToolFinished(t) => vec![t.result.clone()],
                lce_types::Payload::ToolError(t) => vec![t.message.clone()],
                lce_types::Payload::Warning(w) => vec![w.message.clone()],
                lce_types::Payload::RunError(r) => vec![r.message.clone()],
                lce_types::Payload::ToolArgumentsDelta(d) => vec![d.delta.clone()],
                _ => vec![],
            };
            for t in texts.iter().filter(|t| t.len() > 3) {
                assert!(
                    !v.message.contains(t.as_str()),
                    "{}: message {:?} leaks payload",
                    f.display(),
                    v.message
                );
            }
        }
    }
}

#[test]
fn adapter_mode_skips_rule_13_only() {
    for (f, exp) in expectations() {
        let evs = events(&f);
        let got = run(&evs, ValidatorOptions::new().mode(Mode::Adapter));
        if exp.rule == "13" {
            assert_eq!(got, Ok(()), "{}", f.display());
        } else {
            let v = got.expect_err("still invalid in adapter mode");
            assert_eq!(v.rule, exp.rule(), "{}", f.display());
        }
    }
}
