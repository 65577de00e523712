//! `cargo xtask bless [--only KIND]...`: the one way to rewrite the recorded
//! outcomes the tests compare against, printing a unified diff of every
//! change. The tests never write them; they only compare.
//!
//! Kinds (all by default, in this order):
//!
//! - `custom`, `agui`, `agui-v1`: `fixtures/golden/<format>/<scenario>.sse`,
//!   the bytes of `lce encode --to <format>` for every
//!   `fixtures/scenarios/<scenario>.jsonl` (checked by
//!   `crates/lce-cli/tests/golden.rs`); `sse` names all three;
//! - `invoke`: `fixtures/golden/invoke/<scenario>.json`, the answer of
//!   `lce invoke` (status, `Retry-After`, body; checked by
//!   `crates/lce-cli/tests/invoke.rs`);
//! - `hostile`: `fixtures/hostile/<name>.expect`, the sanitizer's outcome
//!   for each hostile fixture, as `crates/lce-sanitize/tests/hostile.rs`
//!   records it (its ignored `record_outcomes_for_bless`, which writes under
//!   `target/tmp/bless/hostile/`); each file keeps its reviewed `absent`
//!   list. These files are reviewed by hand: the diff is the review.
//!
//! It builds `lce` (`cargo build -p lce-cli`) for the scenario kinds. A
//! recorded file whose scenario or fixture is gone is removed. Never commit a
//! diff you cannot explain: the goldens are the contract with DA's clients.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{create_dir, files_with, lce, stem, target_dir, workspace_root, write};

/// Every kind, in the order they are blessed.
const KINDS: &[&str] = &["custom", "agui", "agui-v1", "invoke", "hostile"];
/// The SSE formats (`--only sse`).
const FORMATS: &[&str] = &["custom", "agui", "agui-v1"];
/// Lines of context around each change.
const CONTEXT: usize = 2;

/// What one kind's blessing did.
#[derive(Default)]
struct Tally {
    unchanged: usize,
    changed: usize,
    new: usize,
    removed: usize,
}

impl Tally {
    /// Files written or removed.
    fn touched(&self) -> usize {
        self.changed + self.new + self.removed
    }
}

/// Runs the task with the arguments after `bless`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let kinds = kinds(&args);
    let root = workspace_root();
    let target = target_dir(&root);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let lce = if kinds.iter().any(|k| *k != "hostile") {
        lce(&root, false, true)?
    } else {
        PathBuf::new()
    };
    let scenarios = files_with(&root.join("fixtures/scenarios"), "jsonl")?;

    let mut touched = 0;
    for kind in kinds {
        let tally = match kind {
            "invoke" => bless_invoke(&root, &lce, &scenarios)?,
            "hostile" => bless_hostile(&root, &target, &cargo)?,
            format => bless_sse(&root, &lce, format, &scenarios)?,
        };
        let removed = if tally.removed > 0 {
            format!(", {} removed", tally.removed)
        } else {
            String::new()
        };
        println!(
            "bless: {kind}: {} unchanged, {} changed, {} new{removed}",
            tally.unchanged, tally.changed, tally.new
        );
        if kind == "hostile" && tally.touched() > 0 {
            println!(
                "bless: hostile: the .expect files are the specification: review every outcome above by hand"
            );
        }
        touched += tally.touched();
    }
    if touched > 0 {
        println!("bless: review the diff above and explain every change in the commit message");
    }
    Ok(())
}

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only this kind (repeatable): custom, agui, agui-v1, invoke, hostile,
    /// or sse (the three formats); every kind by default.
    #[arg(long, value_name = "KIND", value_parser = clap::builder::PossibleValuesParser::new(["custom", "agui", "agui-v1", "invoke", "hostile", "sse"]))]
    only: Vec<String>,
    /// The same as `--only` for an SSE format (custom, agui, agui-v1, sse).
    #[arg(long, value_name = "F", value_parser = clap::builder::PossibleValuesParser::new(["custom", "agui", "agui-v1", "sse"]))]
    format: Vec<String>,
}

/// The kinds to bless, in [`KINDS`] order: those asked for, every kind by
/// default (`sse` names the three formats).
fn kinds(args: &Args) -> Vec<&'static str> {
    let asked: Vec<&str> = args
        .only
        .iter()
        .chain(&args.format)
        .map(String::as_str)
        .collect();
    KINDS
        .iter()
        .copied()
        .filter(|k| {
            asked.is_empty() || asked.contains(k) || (asked.contains(&"sse") && FORMATS.contains(k))
        })
        .collect()
}

/// `fixtures/golden/<format>/*.sse` from `lce encode --to <format>`.
fn bless_sse(
    root: &Path,
    lce: &Path,
    format: &str,
    scenarios: &[PathBuf],
) -> Result<Tally, String> {
    let dir = root.join("fixtures/golden").join(format);
    let mut tally = Tally::default();
    for scenario in scenarios {
        let out = Command::new(lce)
            .args(["encode", "--to", format])
            .arg(scenario)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", lce.display()))?;
        if !out.status.success() {
            return Err(format!(
                "lce encode --to {format} {} failed:\n{}",
                scenario.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let rel = format!("fixtures/golden/{format}/{}.sse", stem(scenario));
        record(root, &rel, &out.stdout, &mut tally)?;
    }
    remove_stray(&dir, "sse", &names(scenarios), "no scenario", &mut tally)?;
    Ok(tally)
}

/// `fixtures/golden/invoke/*.json` from `lce invoke`.
fn bless_invoke(root: &Path, lce: &Path, scenarios: &[PathBuf]) -> Result<Tally, String> {
    let dir = root.join("fixtures/golden/invoke");
    let mut tally = Tally::default();
    for scenario in scenarios {
        let out = Command::new(lce)
            .arg("invoke")
            .arg(scenario)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", lce.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let field = |prefix: &str| stderr.lines().find_map(|l| l.strip_prefix(prefix));
        let status = field("status ").and_then(|s| s.parse::<u16>().ok());
        let (Some(status), Some(0 | 1)) = (status, out.status.code()) else {
            return Err(format!(
                "lce invoke {} failed ({}):\n{stderr}",
                scenario.display(),
                out.status
            ));
        };
        let body = String::from_utf8(out.stdout)
            .map_err(|_| format!("lce invoke {}: body is not UTF-8", scenario.display()))?;
        let text = invoke_golden(status, field("retry-after "), &body);
        let rel = format!("fixtures/golden/invoke/{}.json", stem(scenario));
        record(root, &rel, text.as_bytes(), &mut tally)?;
    }
    remove_stray(&dir, "json", &names(scenarios), "no scenario", &mut tally)?;
    Ok(tally)
}

/// An invoke golden's text, in its one layout (`crates/lce-cli/tests/invoke.rs`
/// checks it): `{"status": N, "headers": {"retry-after": "S"}, "body": "<body>"}`
/// on four lines, `headers` only with a `Retry-After`.
fn invoke_golden(status: u16, retry_after: Option<&str>, body: &str) -> String {
    let mut s = format!("{{\n  \"status\": {status},\n");
    if let Some(secs) = retry_after {
        s.push_str("  \"headers\": {\"retry-after\": ");
        s.push_str(&json_string(secs));
        s.push_str("},\n");
    }
    s.push_str("  \"body\": ");
    s.push_str(&json_string(body));
    s.push_str("\n}\n");
    s
}

/// `text` as a JSON string, escaped as `serde_json` does.
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// `fixtures/hostile/*.expect` from the outcomes the hostile test records.
fn bless_hostile(root: &Path, target: &Path, cargo: &std::ffi::OsStr) -> Result<Tally, String> {
    let recorded = target.join("tmp/bless/hostile");
    if recorded.exists() {
        fs::remove_dir_all(&recorded)
            .map_err(|e| format!("cannot clear {}: {e}", recorded.display()))?;
    }
    let out = Command::new(cargo)
        .current_dir(root)
        .args([
            "test",
            "--quiet",
            "-p",
            "lce-sanitize",
            "--test",
            "hostile",
            "--",
            "--ignored",
            "--exact",
            "record_outcomes_for_bless",
        ])
        .output()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "recording the hostile outcomes failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let fixtures = files_with(&root.join("fixtures/hostile"), "jsonl")?;
    let mut tally = Tally::default();
    for fixture in &fixtures {
        let name = stem(fixture);
        let path = recorded.join(format!("{name}.expect"));
        let text = fs::read(&path).map_err(|e| {
            format!(
                "{}: {e} (the hostile test did not record `{name}`)",
                path.display()
            )
        })?;
        let rel = format!("fixtures/hostile/{name}.expect");
        record(root, &rel, &text, &mut tally)?;
    }
    let dir = root.join("fixtures/hostile");
    remove_stray(&dir, "expect", &names(&fixtures), "no fixture", &mut tally)?;
    Ok(tally)
}

/// Writes `new` to `root/rel` when it differs, printing a diff (or `new
/// ...` for a file that did not exist), and counts it.
fn record(root: &Path, rel: &str, new: &[u8], tally: &mut Tally) -> Result<(), String> {
    let path = root.join(rel);
    let old = fs::read(&path).ok();
    if old.as_deref() == Some(new) {
        tally.unchanged += 1;
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        create_dir(dir)?;
    }
    write(&path, new)?;
    match old {
        Some(old) => {
            tally.changed += 1;
            print_diff(
                rel,
                &String::from_utf8_lossy(&old),
                &String::from_utf8_lossy(new),
            );
        }
        None => {
            tally.new += 1;
            println!("new {rel} ({} bytes)", new.len());
        }
    }
    Ok(())
}

/// Removes the `*.ext` files of `dir` whose stem is not in `names`.
fn remove_stray(
    dir: &Path,
    ext: &str,
    names: &BTreeSet<String>,
    why: &str,
    tally: &mut Tally,
) -> Result<(), String> {
    for path in files_with(dir, ext).unwrap_or_default() {
        if !names.contains(&stem(&path)) {
            fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
            println!("removed {} ({why})", path.display());
            tally.removed += 1;
        }
    }
    Ok(())
}

fn names(files: &[PathBuf]) -> BTreeSet<String> {
    files.iter().map(|f| stem(f)).collect()
}

/// Prints a unified diff of `old` and `new`.
fn print_diff(name: &str, old: &str, new: &str) {
    let diff = similar::TextDiff::from_lines(old, new);
    let (a, b) = (format!("a/{name}"), format!("b/{name}"));
    print!(
        "{}",
        diff.unified_diff().context_radius(CONTEXT).header(&a, &b)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Vec<&'static str>, clap::Error> {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        Cli::try_parse_from(std::iter::once("bless").chain(v.iter().copied()))
            .map(|c| kinds(&c.args))
    }

    #[test]
    fn kinds_are_every_kind_by_default_and_in_order() {
        assert_eq!(parse(&[]).unwrap(), KINDS);
        assert_eq!(
            parse(&["--only", "hostile", "--only=custom"]).unwrap(),
            ["custom", "hostile"]
        );
        assert_eq!(
            parse(&["--only", "sse", "--only", "invoke"]).unwrap(),
            ["custom", "agui", "agui-v1", "invoke"]
        );
        assert_eq!(parse(&["--format", "agui-v1"]).unwrap(), ["agui-v1"]);
        assert!(parse(&["--format", "invoke"]).is_err(), "not a format");
        assert!(parse(&["--only"]).is_err(), "no kind");
        assert!(parse(&["custom"]).is_err(), "not an option");
    }

    #[test]
    fn invoke_goldens_have_one_layout() {
        assert_eq!(
            invoke_golden(200, None, "{\"a\":\"é\\n\"}"),
            "{\n  \"status\": 200,\n  \"body\": \"{\\\"a\\\":\\\"é\\\\n\\\"}\"\n}\n"
        );
        assert_eq!(
            invoke_golden(503, Some("30"), "{}"),
            "{\n  \"status\": 503,\n  \"headers\": {\"retry-after\": \"30\"},\n  \"body\": \"{}\"\n}\n"
        );
    }
}
