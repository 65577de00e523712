//! The docs' shell snippets that run `lce` run as written: every fenced
//! `sh`/`bash`/`shell`/`console` block (and every unlabeled block with a
//! `$ ` prompt) in README.md, docs/*.md and crates/*/README.md that invokes
//! `lce` or `cargo run` is run here, from the workspace root, each command
//! with `sh -c` and the `lce` this test built first on `PATH` (`cargo run
//! -- ARGS` is `lce ARGS`: a nested cargo would build the binary again),
//! and must exit 0. A block that cannot run here (it serves until stopped,
//! needs a harness or Redis, takes minutes) says why right before its
//! fence: `<!-- not run: REASON -->`; the Python blocks are run by
//! crates/lce-python/tests/test_docs.py under the same marker.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md, docs/*.md and crates/*/README.md.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    for dir in ["docs", "crates"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if dir == "docs" && path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            } else if path.join("README.md").is_file() {
                files.push(path.join("README.md"));
            }
        }
    }
    files.sort();
    files
}

/// A fenced block: its file's 1-based line of the fence, language, lines,
/// and the reason of its `<!-- not run: REASON -->` marker, if any.
struct Block {
    line: usize,
    lang: String,
    body: Vec<String>,
    not_run: Option<String>,
}

/// The reason of a marker line, `<!-- not run: REASON -->`.
fn marker(line: &str) -> Option<String> {
    let reason = line
        .trim()
        .strip_prefix("<!-- not run:")?
        .strip_suffix("-->")?
        .trim();
    Some(reason.to_owned())
}

/// The fenced blocks of a Markdown text; also checks that each marker
/// stands right before a fence.
fn blocks(text: &str, file: &str, wrong: &mut Vec<String>) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(reason) = marker(lines[i]) {
            let next = lines.get(i + 1).map_or("", |l| l.trim_start());
            if !next.starts_with("```") || reason.is_empty() {
                wrong.push(format!(
                    "{file}:{}: a `<!-- not run: REASON -->` marker must give a reason and \
                     stand on the line right before a fence",
                    i + 1
                ));
            }
        }
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        i += 1;
        let mut body = Vec::new();
        while i < lines.len() && lines[i].trim() != "```" {
            body.push(lines[i].trim_start().to_owned());
            i += 1;
        }
        i += 1;
        out.push(Block {
            line: start + 1,
            lang: lang.trim().to_owned(),
            body,
            not_run: start.checked_sub(1).and_then(|p| marker(lines[p])),
        });
    }
    out
}

/// The commands of a shell block: `$ ` lines of a console transcript, else
/// every line that is not blank or a comment, continuation lines joined.
fn commands(block: &Block) -> Vec<String> {
    let transcript = block.lang == "console"
        || block.lang.is_empty()
        || block.body.iter().any(|l| l.starts_with("$ "));
    let mut out: Vec<String> = Vec::new();
    let mut continued = false;
    for line in &block.body {
        let line = if transcript {
            match line.strip_prefix("$ ") {
                Some(command) => command,
                None if continued => line.as_str(),
                None => continue,
            }
        } else if line.is_empty() || line.starts_with('#') {
            if !continued {
                continue;
            }
            line.as_str()
        } else {
            line.as_str()
        };
        let (text, more) = match line.strip_suffix('\\') {
            Some(text) => (text, true),
            None => (line, false),
        };
        match out.last_mut() {
            Some(last) if continued => last.push_str(text),
            _ => out.push(text.to_owned()),
        }
        continued = more;
    }
    out
}

/// Whether a command runs lce: `lce ...`, `.../lce ...` or `cargo run ...`.
fn runs_lce(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    first == "lce" || first.ends_with("/lce") || command.starts_with("cargo run")
}

/// `cargo run [--quiet] [--locked] -- ARGS` (the default member, lce-cli)
/// as `lce ARGS`; any other command as written.
fn as_lce(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    if words.next()? != "cargo" || words.next()? != "run" {
        return Some(command.to_owned());
    }
    let at = command.find(" -- ")?;
    let options = &command["cargo run".len()..at];
    if !options
        .split_whitespace()
        .all(|o| ["--quiet", "-q", "--locked"].contains(&o))
    {
        return None;
    }
    Some(format!("lce{}", &command[at + 3..]))
}

/// How long one command may take: a server that does not stop fails the
/// block (mark it) rather than hanging the suite.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `command` with `sh -c` from the workspace root: `Ok` when it exits 0
/// within [`TIMEOUT`], else why not.
fn run(command: &str, path: &std::ffi::OsStr) -> Result<(), String> {
    let mut child = Command::new("sh")
        .args(["-c", &format!("exec {command}")])
        .current_dir(root())
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            if status.success() {
                return Ok(());
            }
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            return Err(format!("failed ({status}): {stderr}"));
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "did not end within {} s: mark the block `<!-- not run: REASON -->`",
                TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_shell_snippet_that_runs_lce_runs_or_says_why_not() {
    let lce = PathBuf::from(env!("CARGO_BIN_EXE_lce"));
    let path = std::env::join_paths(std::iter::once(lce.parent().unwrap().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let (mut wrong, mut ran, mut skipped) = (Vec::new(), 0, 0);
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file
            .strip_prefix(root())
            .unwrap_or(&file)
            .display()
            .to_string();
        for block in blocks(&text, &name, &mut wrong) {
            if !["sh", "bash", "shell", "console", ""].contains(&block.lang.as_str()) {
                continue;
            }
            let commands = commands(&block);
            if !commands.iter().any(|c| runs_lce(c)) {
                continue;
            }
            let place = format!("{name}:{}", block.line);
            if block.not_run.is_some() {
                skipped += 1;
                continue;
            }
            for command in &commands {
                let Some(command) = as_lce(command) else {
                    wrong.push(format!(
                        "{place}: `{command}` cannot run here: mark the block \
                         `<!-- not run: REASON -->`"
                    ));
                    continue;
                };
                if !runs_lce(&command) {
                    wrong.push(format!(
                        "{place}: `{command}` is no lce command: give it its own block, or mark \
                         the block `<!-- not run: REASON -->`"
                    ));
                    continue;
                }
                match run(&command, &path) {
                    Ok(()) => {}
                    Err(why) => wrong.push(format!("{place}: `{command}` {why}")),
                }
                ran += 1;
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // README's encode command at least; the servers and benchmarks are marked.
    assert!(ran >= 1 && skipped >= 1, "ran {ran}, skipped {skipped}");
}

#[test]
fn the_checker_reads_blocks_markers_and_commands() {
    let text = "x\n<!-- not run: a server -->\n```sh\nlce serve \\\n  --speed 0\n```\n\
                ```console\n$ lce check a.jsonl\nout\n```\n<!-- not run: -->\n\ntext\n";
    let mut wrong = Vec::new();
    let found = blocks(text, "t.md", &mut wrong);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].not_run.as_deref(), Some("a server"));
    assert_eq!(commands(&found[0]), ["lce serve --speed 0"]);
    assert_eq!(found[1].not_run, None);
    assert_eq!(commands(&found[1]), ["lce check a.jsonl"]);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert_eq!(
        as_lce("cargo run --quiet -- encode x").as_deref(),
        Some("lce encode x")
    );
    assert_eq!(as_lce("cargo run -p lce --example compose"), None);
    assert!(!runs_lce("cargo test --workspace"));
    assert!(runs_lce("target/release/lce encode x"));
}
