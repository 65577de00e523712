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

use crate::json::write_string;
use crate::util::{run as run_command, workspace_root};

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
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let kinds = parse_args(args)?;
    let root = workspace_root();
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let lce = if kinds.iter().any(|k| *k != "hostile") {
        run_command(
            Command::new(&cargo)
                .current_dir(&root)
                .args(["build", "--quiet", "-p", "lce-cli"]),
        )?;
        target
            .join("debug")
            .join(format!("lce{}", std::env::consts::EXE_SUFFIX))
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

/// The kinds to bless, in [`KINDS`] order: `--only KIND` (repeatable;
/// `--format F` is the same for an SSE format), every kind by default.
fn parse_args(args: &[String]) -> Result<Vec<&'static str>, String> {
    let mut wanted: BTreeSet<&'static str> = BTreeSet::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (value, sse_only) = match arg.as_str() {
            "--only" => (it.next().map(String::as_str), false),
            "--format" => (it.next().map(String::as_str), true),
            other => match (
                other.strip_prefix("--only="),
                other.strip_prefix("--format="),
            ) {
                (Some(v), _) => (Some(v), false),
                (_, Some(v)) => (Some(v), true),
                _ => (None, false),
            },
        };
        let Some(value) = value else {
            return Err(format!(
                "unexpected argument `{arg}`; usage: bless [--only KIND]... (KIND: {}, sse)",
                KINDS.join(", ")
            ));
        };
        let allowed = if sse_only { FORMATS } else { KINDS };
        if value == "sse" {
            wanted.extend(FORMATS);
        } else if let Some(kind) = allowed.iter().find(|k| **k == value) {
            wanted.insert(kind);
        } else {
            return Err(format!(
                "unknown kind `{value}` (one of {}, sse)",
                allowed.join(", ")
            ));
        }
    }
    Ok(KINDS
        .iter()
        .copied()
        .filter(|k| wanted.is_empty() || wanted.contains(k))
        .collect())
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
        write_string(&mut s, secs);
        s.push_str("},\n");
    }
    s.push_str("  \"body\": ");
    write_string(&mut s, body);
    s.push_str("\n}\n");
    s
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
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(&path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
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
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == ext) && !names.contains(&stem(&path)) {
            fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
            println!("removed {} ({why})", path.display());
            tally.removed += 1;
        }
    }
    Ok(())
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn names(files: &[PathBuf]) -> BTreeSet<String> {
    files.iter().map(|f| stem(f)).collect()
}

/// The `*.ext` files of `dir`, sorted.
fn files_with(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    Ok(v)
}

/// One line of an edit script.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep,
    Del,
    Add,
}

/// Prints a unified diff of `old` and `new` (line-based LCS).
fn print_diff(name: &str, old: &str, new: &str) {
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    let ops = edit_script(&a, &b);
    println!("--- a/{name}\n+++ b/{name}");
    let mut k = 0;
    while k < ops.len() {
        if ops[k].0 == Op::Keep {
            k += 1;
            continue;
        }
        // A hunk: from CONTEXT before this change to CONTEXT after the last
        // change closer than 2 * CONTEXT.
        let start = k.saturating_sub(CONTEXT);
        let mut end = k;
        let mut last_change = k;
        while end < ops.len() && end <= last_change + 2 * CONTEXT {
            if ops[end].0 != Op::Keep {
                last_change = end;
            }
            end += 1;
        }
        let end = (last_change + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let old_len = hunk.iter().filter(|o| o.0 != Op::Add).count();
        let new_len = hunk.iter().filter(|o| o.0 != Op::Del).count();
        let (oi, ni) = (hunk[0].1, hunk[0].2);
        println!("@@ -{},{old_len} +{},{new_len} @@", oi + 1, ni + 1);
        for &(op, i, j) in hunk {
            match op {
                Op::Keep => println!(" {}", a[i]),
                Op::Del => println!("-{}", a[i]),
                Op::Add => println!("+{}", b[j]),
            }
        }
        k = end;
    }
}

/// The edit script from `a` to `b` as `(op, index in a, index in b)`, from
/// a longest common subsequence of lines (the files are short: tens of
/// lines).
fn edit_script(a: &[&str], b: &[&str]) -> Vec<(Op, usize, usize)> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(Op, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((Op::Keep, i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push((Op::Del, i, j));
            i += 1;
        } else {
            ops.push((Op::Add, i, j));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn kinds_are_every_kind_by_default_and_in_order() {
        assert_eq!(parse_args(&[]).unwrap(), KINDS);
        assert_eq!(
            parse_args(&args(&["--only", "hostile", "--only=custom"])).unwrap(),
            ["custom", "hostile"]
        );
        assert_eq!(
            parse_args(&args(&["--only", "sse", "--only", "invoke"])).unwrap(),
            ["custom", "agui", "agui-v1", "invoke"]
        );
        assert_eq!(
            parse_args(&args(&["--format", "agui-v1"])).unwrap(),
            ["agui-v1"]
        );
        assert_eq!(
            parse_args(&args(&["--format", "invoke"])).unwrap_err(),
            "unknown kind `invoke` (one of custom, agui, agui-v1, sse)"
        );
        assert_eq!(
            parse_args(&args(&["--only"])).unwrap_err(),
            "unexpected argument `--only`; usage: bless [--only KIND]... (KIND: custom, agui, agui-v1, invoke, hostile, sse)"
        );
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

    #[test]
    fn edit_scripts_keep_common_lines() {
        let ops = edit_script(&["a", "b", "c"], &["a", "x", "c", "d"]);
        let kinds: Vec<Op> = ops.iter().map(|o| o.0).collect();
        assert!(
            kinds == [Op::Keep, Op::Del, Op::Add, Op::Keep, Op::Add],
            "{:?}",
            ops.iter().map(|o| (o.1, o.2)).collect::<Vec<_>>()
        );
    }
}
