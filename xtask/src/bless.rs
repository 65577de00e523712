//! `cargo xtask bless [--format F]...`: rewrites the golden files
//! `fixtures/golden/<format>/<scenario>.sse` from the current encoders and
//! prints a unified diff of every change.
//!
//! It builds `lce` (`cargo build -p lce-cli`) and runs
//! `lce encode --to <format> fixtures/scenarios/<scenario>.jsonl` for every
//! scenario; a format `lce` does not have yet (`format not available`) is
//! skipped. Golden files without a scenario are removed. Never commit a diff
//! you cannot explain: the goldens are the contract with DA's clients.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{run as run_command, workspace_root};

/// Every format, in the order they are blessed.
const FORMATS: &[&str] = &["custom", "agui", "agui-v1"];
/// Lines of context around each change.
const CONTEXT: usize = 2;

/// Runs the task with the arguments after `bless`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mut formats: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = match arg.as_str() {
            "--format" => it.next().map(String::as_str),
            other => other.strip_prefix("--format="),
        };
        match value {
            Some(f) if FORMATS.contains(&f) => formats.push(f),
            Some(f) => {
                return Err(format!(
                    "unknown format `{f}` (one of {})",
                    FORMATS.join(", ")
                ));
            }
            None => {
                return Err(format!(
                    "unexpected argument `{arg}`; usage: bless [--format F]"
                ));
            }
        }
    }
    if formats.is_empty() {
        formats = FORMATS.to_vec();
    }

    let root = workspace_root();
    run_command(
        Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .current_dir(&root)
            .args(["build", "--quiet", "-p", "lce-cli"]),
    )?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let lce = target
        .join("debug")
        .join(format!("lce{}", std::env::consts::EXE_SUFFIX));

    let scenarios = scenarios(&root.join("fixtures/scenarios"))?;
    let mut changed = 0usize;
    for format in formats {
        let dir = root.join("fixtures/golden").join(format);
        let mut counts = (0usize, 0usize, 0usize); // unchanged, changed, new
        let mut skipped = false;
        for scenario in &scenarios {
            let out = Command::new(&lce)
                .args(["encode", "--to", format])
                .arg(scenario)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", lce.display()))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.code() == Some(2) && stderr.contains("format not available") {
                println!("bless: {format}: not built into lce yet, skipped");
                skipped = true;
                break;
            }
            if !out.status.success() {
                return Err(format!(
                    "lce encode --to {format} {} failed:\n{stderr}",
                    scenario.display()
                ));
            }
            let stem = stem(scenario);
            let golden = dir.join(format!("{stem}.sse"));
            let old = fs::read(&golden).ok();
            if old.as_deref() == Some(&out.stdout[..]) {
                counts.0 += 1;
                continue;
            }
            fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            fs::write(&golden, &out.stdout)
                .map_err(|e| format!("cannot write {}: {e}", golden.display()))?;
            let rel = format!("fixtures/golden/{format}/{stem}.sse");
            match old {
                Some(old) => {
                    counts.1 += 1;
                    print_diff(
                        &rel,
                        &String::from_utf8_lossy(&old),
                        &String::from_utf8_lossy(&out.stdout),
                    );
                }
                None => {
                    counts.2 += 1;
                    println!("new {rel} ({} bytes)", out.stdout.len());
                }
            }
        }
        if skipped {
            continue;
        }
        // Goldens whose scenario is gone.
        let names: BTreeSet<String> = scenarios.iter().map(|s| stem(s)).collect();
        if let Ok(entries) = fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "sse") && !names.contains(&stem(&path)) {
                    fs::remove_file(&path)
                        .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
                    println!("removed {} (no scenario)", path.display());
                    changed += 1;
                }
            }
        }
        changed += counts.1 + counts.2;
        println!(
            "bless: {format}: {} unchanged, {} changed, {} new",
            counts.0, counts.1, counts.2
        );
    }
    if changed > 0 {
        println!("bless: review the diff above and explain every change in the commit message");
    }
    Ok(())
}

fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn scenarios(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
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
    // LCS table; golden files are short (tens of lines).
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
    // Edit script: (op, old index, new index).
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
