//! `cargo xtask bench-peers`: lce beside other implementations, same corpus,
//! same machine, one run (issue 7).
//!
//! One generated run (default 100000 `mixed` events, seed 1) under
//! `target/peers/`, and its `agui-v1` encoding by lce (the input of the AG-UI
//! 1.0 peers). Each contender loops over the whole run until `S` seconds
//! (default 5) have passed, at least once:
//!
//! - lce: `target/release/lce encode --to F FILE > /dev/null`, wall clock of
//!   the whole process (start-up and reading included; parse, validate,
//!   encode);
//! - Python, DA-style (`xtask/peers/da_encode.py`, `custom` and `agui`):
//!   `json.loads` per line, dicts written with `json.dumps` as DA does; byte
//!   for byte the same output as lce on the corpus;
//! - Python, the official `ag-ui-protocol` 1.0.0 (`agui_v1_official.py`):
//!   pydantic strict validation into its `Event` union, then its
//!   `EventEncoder`;
//! - Node, the official `@ag-ui/client` 1.0.0 `verifyEvents` and
//!   `@ag-ui/encoder` 1.0.0 (`agui_v1_official.mjs`);
//! - Rust, the `ag-ui` crate 0.5.0-alpha.3 (`xtask/peers/rust`): serde into
//!   its `Event`, its client `Verifier`, its `SseFormatter`.
//!
//! The peers time only their loop (interpreter start-up and imports
//! excluded). Installs what it needs: a venv in `target/peers-venv`
//! (`xtask/peers/requirements.txt`), `npm ci` in `target/peers-node` (the
//! committed `package.json` and lock), the Rust peer in `target/peers-rust`;
//! each only when its pinned inputs changed. A contender that cannot run is
//! reported in the table, not fatal.

use std::fmt::Write as _;
use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use lce_testkit::corpus::{self, Options};

use crate::util::{
    cores, cpu_model, create_dir, fnv1a64, lce, read, run as run_command, thousands, workspace_root,
};

/// One line of the table.
struct Row {
    who: String,
    format: &'static str,
    result: Result<f64, String>,
}

/// What the command line asked for.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Events in the generated run (at least 2).
    #[arg(long, value_name = "N", default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(2..))]
    events: u64,
    /// The mix of event kinds: text, tools or mixed.
    #[arg(long, value_name = "M", default_value = "mixed")]
    mix: String,
    /// Each contender loops over the run until this many seconds passed.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    seconds: f64,
}

/// Runs the task with the arguments after `bench-peers`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let Args {
        events,
        mix,
        seconds,
    } = args;
    let root = workspace_root();
    let target = root.join("target");
    let work = target.join("peers");
    create_dir(&work)?;

    println!("bench-peers: {events} {mix} events, about {seconds} s per contender");
    println!("machine: {} cores, {}", cores(), cpu_model());

    let lce = lce(&root, true, true)?;
    let (corpus, v1_sse) = inputs(&lce, &work, events, &mix)?;

    let mut versions = vec![format!("lce {}", env!("CARGO_PKG_VERSION"))];
    let mut rows = Vec::new();
    for format in ["custom", "agui", "agui-v1"] {
        rows.push(Row {
            who: "lce encode (Rust)".to_owned(),
            format,
            result: time_lce(&lce, format, &corpus, events, seconds),
        });
    }
    let peers = Peers {
        root: &root,
        target: &target,
        corpus: &corpus,
        v1_sse: &v1_sse,
        seconds: &seconds.to_string(),
    };
    peers.python(&mut rows, &mut versions);
    peers.node(&mut rows, &mut versions);
    peers.rust(&mut rows, &mut versions);

    println!("versions: {}", versions.join("; "));
    println!();
    print!("{}", table(&rows));
    println!();
    println!(
        "reproduce: cargo xtask bench-peers --events {events} --mix {mix} --seconds {seconds}"
    );
    Ok(())
}

/// The corpus (generated once per mix and size, seed 1) and lce's `agui-v1`
/// encoding of it (the AG-UI 1.0 peers' input), under `work`.
fn inputs(lce: &Path, work: &Path, events: u64, mix: &str) -> Result<(PathBuf, PathBuf), String> {
    let corpus = work.join(format!("corpus-{mix}-{events}.jsonl"));
    if !corpus.is_file() {
        let options = Options {
            events,
            mix: crate::corpus::mix(mix)?,
            seed: 1,
        };
        let file = fs::File::create(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        corpus::write(&options, BufWriter::with_capacity(1 << 16, file))
            .map_err(|e| format!("{}: {e}", corpus.display()))?;
    }
    let v1_sse = work.join(format!("corpus-{mix}-{events}.agui-v1.sse"));
    let out = fs::File::create(&v1_sse).map_err(|e| format!("{}: {e}", v1_sse.display()))?;
    let status = Command::new(lce)
        .args(["encode", "--to", "agui-v1"])
        .arg(&corpus)
        .stdout(out)
        .status()
        .map_err(|e| format!("cannot run lce: {e}"))?;
    if !status.success() {
        return Err(format!(
            "lce encode --to agui-v1 failed ({status}): is the run over the default limits?"
        ));
    }
    Ok((corpus, v1_sse))
}

/// What every peer runs on.
struct Peers<'a> {
    root: &'a Path,
    target: &'a Path,
    corpus: &'a Path,
    v1_sse: &'a Path,
    /// `--seconds`, as the peers take it.
    seconds: &'a str,
}

impl Peers<'_> {
    /// Python: the DA-style encoder and the official SDK, in one venv.
    fn python(&self, rows: &mut Vec<Row>, versions: &mut Vec<String>) {
        let python = ensure_venv(self.root, self.target);
        match &python {
            Ok(py) => {
                versions.push(capture(Command::new(py).arg("--version")).unwrap_or_default());
                if let Ok(freeze) = capture(Command::new(py).args(["-m", "pip", "freeze"])) {
                    let pins: Vec<&str> = freeze
                        .lines()
                        .filter(|l| l.starts_with("ag-ui-protocol") || l.starts_with("pydantic"))
                        .collect();
                    versions.push(pins.join(" "));
                }
            }
            Err(e) => versions.push(format!("python: {e}")),
        }
        let peers = self.root.join("xtask/peers");
        for format in ["custom", "agui"] {
            rows.push(Row {
                who: "Python DA-style (json.loads + json.dumps)".to_owned(),
                format,
                result: python.clone().and_then(|py| {
                    peer(
                        Command::new(py)
                            .arg(peers.join("da_encode.py"))
                            .args(["--format", format, "--seconds", self.seconds])
                            .arg(self.corpus),
                    )
                }),
            });
        }
        rows.push(Row {
            who: "Python ag-ui-protocol 1.0.0 (pydantic strict + EventEncoder)".to_owned(),
            format: "agui-v1",
            result: python.and_then(|py| {
                peer(
                    Command::new(py)
                        .arg(peers.join("agui_v1_official.py"))
                        .args(["--seconds", self.seconds])
                        .arg(self.v1_sse),
                )
            }),
        });
    }

    /// Node: the official client's verifier and the official encoder.
    fn node(&self, rows: &mut Vec<Row>, versions: &mut Vec<String>) {
        let node = ensure_node(self.root, self.target);
        if let Ok(dir) = &node {
            versions.push(format!(
                "node {} @ag-ui/client {} @ag-ui/encoder {}",
                capture(Command::new("node").arg("--version"))
                    .unwrap_or_default()
                    .trim(),
                npm_version(dir, "@ag-ui/client"),
                npm_version(dir, "@ag-ui/encoder")
            ));
        }
        rows.push(Row {
            who: "Node @ag-ui/client verifyEvents + @ag-ui/encoder 1.0.0".to_owned(),
            format: "agui-v1",
            result: node.and_then(|dir| {
                peer(
                    Command::new("node")
                        .current_dir(&dir)
                        .arg(dir.join("agui_v1_official.mjs"))
                        .args(["--seconds", self.seconds])
                        .arg(self.v1_sse),
                )
            }),
        });
    }

    /// Rust: the ag-ui crate, if it builds here.
    fn rust(&self, rows: &mut Vec<Row>, versions: &mut Vec<String>) {
        let rust = build_rust_peer(self.root, self.target);
        versions.push("ag-ui (crates.io) 0.5.0-alpha.3".to_owned());
        rows.push(Row {
            who: "Rust ag-ui 0.5.0-alpha.3 (serde + Verifier + SseFormatter)".to_owned(),
            format: "agui-v1",
            result: rust.and_then(|bin| {
                peer(
                    Command::new(bin)
                        .args(["--seconds", self.seconds])
                        .arg(self.v1_sse),
                )
            }),
        });
    }
}

/// The markdown table: events/s, and how many times faster lce is.
fn table(rows: &[Row]) -> String {
    let lce_rate = |format: &str| {
        rows.iter()
            .find(|r| r.who.starts_with("lce") && r.format == format)
            .and_then(|r| r.result.as_ref().ok().copied())
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| implementation | format | events/s | lce is N x faster |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|");
    for r in rows {
        let (rate, ratio) = match &r.result {
            Ok(rate) => (
                thousands(*rate).to_string(),
                lce_rate(r.format).map_or_else(|| "-".to_owned(), |l| format!("{:.1}", l / rate)),
            ),
            Err(e) => (format!("did not run: {e}"), "-".to_owned()),
        };
        let _ = writeln!(s, "| {} | {} | {rate} | {ratio} |", r.who, r.format);
    }
    s
}

/// Runs `lce encode` over the corpus until `seconds` have passed; events/s.
fn time_lce(
    lce: &Path,
    format: &str,
    corpus: &Path,
    events: u64,
    seconds: f64,
) -> Result<f64, String> {
    let start = Instant::now();
    let mut runs = 0u64;
    loop {
        let status = Command::new(lce)
            .args(["encode", "--to", format])
            .arg(corpus)
            .stdout(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run lce: {e}"))?;
        if !status.success() {
            return Err(format!("lce encode --to {format} failed ({status})"));
        }
        runs += 1;
        if start.elapsed().as_secs_f64() >= seconds {
            break;
        }
    }
    Ok((events * runs) as f64 / start.elapsed().as_secs_f64())
}

/// Runs a peer that prints `{"events": n, "seconds": t}`; events/s.
fn peer(cmd: &mut Command) -> Result<f64, String> {
    let out = cmd
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot start: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("{} ({last})", out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let number = |key: &str| -> Option<f64> {
        let at = text.find(&format!("\"{key}\""))? + key.len() + 2;
        let rest = text[at..].trim_start_matches([' ', ':']);
        let end = rest.find([',', '}']).unwrap_or(rest.len());
        rest[..end].trim().parse().ok()
    };
    match (number("events"), number("seconds")) {
        (Some(n), Some(t)) if t > 0.0 => Ok(n / t),
        _ => Err(format!("unexpected output: {}", text.trim())),
    }
}

fn capture(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(s.trim().to_owned())
}

/// FNV-1a over some files: the stamp that says an install is current.
fn stamp(files: &[PathBuf]) -> String {
    let bytes: Vec<u8> = files
        .iter()
        .flat_map(|f| fs::read(f).unwrap_or_default())
        .collect();
    format!("{:016x}", fnv1a64(&bytes))
}

/// The venv's python, created and filled from requirements.txt when needed.
fn ensure_venv(root: &Path, target: &Path) -> Result<PathBuf, String> {
    let venv = target.join("peers-venv");
    let py = venv.join("bin/python");
    let reqs = root.join("xtask/peers/requirements.txt");
    let want = stamp(std::slice::from_ref(&reqs));
    let stamp_file = venv.join(".lce-stamp");
    if py.is_file() && fs::read_to_string(&stamp_file).is_ok_and(|s| s == want) {
        return Ok(py);
    }
    run_command(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run_command(
        Command::new(&py)
            .args(["-m", "pip", "install", "--quiet", "-r"])
            .arg(&reqs),
    )?;
    fs::write(&stamp_file, want).map_err(|e| e.to_string())?;
    Ok(py)
}

/// `target/peers-node` with the pinned packages and the script.
fn ensure_node(root: &Path, target: &Path) -> Result<PathBuf, String> {
    let dir = target.join("peers-node");
    let src = root.join("xtask/peers");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let inputs = [src.join("package.json"), src.join("package-lock.json")];
    let want = stamp(&inputs);
    let stamp_file = dir.join(".lce-stamp");
    for name in ["package.json", "package-lock.json", "agui_v1_official.mjs"] {
        fs::copy(src.join(name), dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
    }
    if !(dir.join("node_modules").is_dir()
        && fs::read_to_string(&stamp_file).is_ok_and(|s| s == want))
    {
        run_command(Command::new("npm").current_dir(&dir).args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--silent",
        ]))?;
        fs::write(&stamp_file, want).map_err(|e| e.to_string())?;
    }
    Ok(dir)
}

/// The `version` of an installed npm package.
fn npm_version(dir: &Path, package: &str) -> String {
    let manifest = read(&dir.join("node_modules").join(package).join("package.json"));
    let manifest: Option<serde_json::Value> =
        manifest.ok().and_then(|m| serde_json::from_str(&m).ok());
    let version = manifest.as_ref().and_then(|m| m["version"].as_str());
    version.unwrap_or("?").to_owned()
}

/// Builds the `ag-ui` crate peer; its binary.
fn build_rust_peer(root: &Path, target: &Path) -> Result<PathBuf, String> {
    let dir = target.join("peers-rust");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root.join("xtask/peers/rust"))
        .env("CARGO_TARGET_DIR", &dir)
        .args(["build", "--quiet", "--release", "--locked"])
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or("build failed");
        return Err(format!("does not build here: {first}"));
    }
    Ok(dir.join("release/lce-peer-ag-ui-rs"))
}
