//! `cargo xtask conformance`: checks standard AG-UI 1.0 (`agui-v1`) SSE with
//! the official npm packages `@ag-ui/core` and `@ag-ui/client` 1.0.0.
//!
//! The packages are pinned by `xtask/conformance/package.json` and
//! `package-lock.json`, and installed with `npm ci` into
//! `target/conformance-node/` only when the lock (or the manifest) changed: a
//! stamp file there holds an FNV-1a hash of both. The checker,
//! `xtask/conformance/check.mjs`, is copied next to that `node_modules` and run
//! with `node`, so its bare imports resolve to the pinned packages.
//!
//! By default three parts run, and all must pass:
//!
//! 1. **goldens**: every `*.sse` in `fixtures/golden/agui-v1/`.
//! 2. **live**: `target/debug/lce serve --speed 0` over `fixtures/scenarios`
//!    (and the same checks through `lce serve --upstream` in front of the
//!    Python harness of `examples/harness-python/`, agent `demo`)
//!    (built first), and for every scenario the official `HttpAgent` runs it
//!    through `POST /api/v1/agui` (`forwardedProps.agentId` = the scenario)
//!    with the real `fetch`; the run must end cleanly and the bytes received
//!    pass every file check (see `check.mjs`). The server is killed at the
//!    end, also on failure; its stderr goes to `target/conformance-serve.log`.
//! 3. **repaired**: `lce encode --to agui-v1` over every `fixtures/invalid`,
//!    `fixtures/malformed` and `fixtures/hostile` run, and over a fixed-seed
//!    sample of mutated scenarios (one event dropped, one duplicated, two
//!    adjacent swapped, cut after a line, cut mid-line, a `text.delta`
//!    pointed at another message); exit status 0 or 1 (the coordinator
//!    intervened) is expected, and every output must pass the file checks.
//!    Inputs (the mutated ones) and outputs are written under
//!    `target/conformance-repaired/`.
//!
//! `--dir` / `--files` check just those files; `--self-test` checks that the
//! samples behave (good passes, bad fails).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cluster::Replica;
use crate::util::{
    Rng, create_dir, files_with, fnv1a64, lce, read, run as run_command, stem, target_dir,
    workspace_root, write,
};

/// Folder checked when neither `--dir` nor `--files` is given.
const DEFAULT_DIR: &str = "fixtures/golden/agui-v1";
/// Sources of the checker, relative to the workspace root.
const SOURCE_DIR: &str = "xtask/conformance";
/// Name of the stamp file holding the hash of the installed lock.
const STAMP: &str = ".lock-hash";
/// The canonical runs `lce serve` plays and the mutations start from.
const SCENARIOS: &str = "fixtures/scenarios";
/// Folders of broken runs whose repaired `agui-v1` output is checked.
const BROKEN: [&str; 3] = ["fixtures/invalid", "fixtures/malformed", "fixtures/hostile"];
/// The options that pick parts of the default run.
const PARTS: [&str; 4] = ["no_serve", "no_repaired", "serve_only", "repaired_only"];
/// Seed of the mutation sample (fixed: the sample is the same on every run).
const MUTATION_SEED: u64 = 0x6c63_655f_6167_7569;

/// What the command line asked for: the default run (goldens, live runs,
/// repaired streams) or a part of it, or one set of files, or the
/// self-test.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Check every `*.sse` in DIR.
    #[arg(long, value_name = "DIR", conflicts_with = "files", conflicts_with_all = PARTS)]
    dir: Option<PathBuf>,
    /// Check exactly these files (possibly none).
    #[arg(long, value_name = "F.sse", num_args = 0.., conflicts_with_all = PARTS)]
    files: Option<Vec<PathBuf>>,
    /// Finding no file is a success.
    #[arg(long)]
    allow_empty: bool,
    /// The samples must behave (good passes, bad fails).
    #[arg(long, conflicts_with_all = PARTS)]
    self_test: bool,
    /// Skip the live runs against `lce serve`.
    #[arg(long)]
    no_serve: bool,
    /// Skip the repaired streams.
    #[arg(long)]
    no_repaired: bool,
    /// Only the live runs.
    #[arg(long, conflicts_with_all = ["no_serve", "repaired_only"])]
    serve_only: bool,
    /// Only the repaired streams.
    #[arg(long, conflicts_with = "no_repaired")]
    repaired_only: bool,
}

/// Runs the task with the arguments after `conformance`.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let root = workspace_root();

    if args.self_test {
        let files = files_with(&root.join(SOURCE_DIR).join("samples"), "sse")?;
        let cache = ensure_node_env(&root)?;
        return check_files(&root, &cache, &files, &["--self-test"]);
    }
    if args.dir.is_some() || args.files.is_some() {
        // node runs from the workspace root: the paths are made absolute.
        let absolute =
            |p: &PathBuf| std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()));
        let files = match (&args.dir, &args.files) {
            (_, Some(files)) => files.iter().map(absolute).collect::<Result<_, _>>()?,
            (Some(dir), None) => listed_sse(&absolute(dir)?)?,
            (None, None) => Vec::new(),
        };
        if files.is_empty() {
            return no_files(args.allow_empty);
        }
        let cache = ensure_node_env(&root)?;
        return check_files(&root, &cache, &files, &[]);
    }

    // The default: goldens, live runs, repaired streams; every part runs, and
    // the task fails if any did.
    let cache = ensure_node_env(&root)?;
    let no_serve = args.no_serve || args.repaired_only;
    let no_repaired = args.no_repaired || args.serve_only;
    let mut failed = Vec::new();
    if !(args.serve_only || args.repaired_only) {
        println!("conformance: goldens ({DEFAULT_DIR})");
        let files = listed_sse(&root.join(DEFAULT_DIR))?;
        let result = if files.is_empty() {
            no_files(args.allow_empty)
        } else {
            check_files(&root, &cache, &files, &[])
        };
        if let Err(e) = result {
            failed.push(format!("goldens: {e}"));
        }
    }
    if !(no_serve && no_repaired) {
        let lce = lce(&root, false, true)?;
        if !no_serve {
            println!("conformance: live runs of {SCENARIOS} through `lce serve`");
            if let Err(e) = live(&root, &cache, &lce) {
                failed.push(format!("live: {e}"));
            }
        }
        if !no_serve {
            println!(
                "conformance: the official HttpAgent through `lce serve --upstream` (examples/harness-python)"
            );
            if let Err(e) = gateway(&root, &cache, &lce) {
                failed.push(format!("gateway: {e}"));
            }
        }
        if !no_repaired {
            println!("conformance: streams the coordinator repaired");
            if let Err(e) = repaired(&root, &cache, &lce) {
                failed.push(format!("repaired: {e}"));
            }
        }
    }
    if failed.is_empty() {
        println!("conformance: ok");
        Ok(())
    } else {
        Err(format!("conformance failed: {}", failed.join("; ")))
    }
}

/// The outcome when there is no file to check.
fn no_files(allow_empty: bool) -> Result<(), String> {
    println!("conformance: no files");
    if allow_empty {
        Ok(())
    } else {
        Err("no agui-v1 SSE files to check (pass --allow-empty to accept that)".to_owned())
    }
}

/// The `*.sse` files of `dir`, or nothing when `dir` does not exist.
fn listed_sse(dir: &Path) -> Result<Vec<PathBuf>, String> {
    if dir.is_dir() {
        files_with(dir, "sse")
    } else {
        Ok(Vec::new())
    }
}

/// Runs the checker over `files`.
fn check_files(root: &Path, cache: &Path, files: &[PathBuf], flags: &[&str]) -> Result<(), String> {
    let mut node = Command::new("node");
    node.current_dir(root)
        .arg(cache.join("check.mjs"))
        .args(flags)
        .args(files);
    run_command(&mut node).map_err(|e| format!("conformance check failed ({e})"))
}

// ---- live runs ---------------------------------------------------------------

/// `lce serve --addr 127.0.0.1:0 ARGS...` with its stderr in `log`; killed
/// when dropped (also on every error path).
fn serve(lce: &Path, args: &[&str], log: &Path) -> Result<Replica, String> {
    let args: Vec<OsString> = ["serve", "--addr", "127.0.0.1:0"]
        .iter()
        .chain(args)
        .map(OsString::from)
        .collect();
    Replica::start(lce, &args, log)
}

/// Every scenario, run by the official `HttpAgent` against `lce serve`.
fn live(root: &Path, cache: &Path, lce: &Path) -> Result<(), String> {
    let scenarios_dir = root.join(SCENARIOS);
    let names = files_with(&scenarios_dir, "jsonl")?
        .iter()
        .map(|p| stem(p))
        .collect::<Vec<_>>();
    if names.is_empty() {
        return Err(format!("no scenarios in {SCENARIOS}"));
    }
    let log = target_dir(root).join("conformance-serve.log");
    let scenarios = scenarios_dir.to_string_lossy();
    let server = serve(lce, &["--speed", "0", "--scenarios", &scenarios], &log)?;
    let mut node = Command::new("node");
    node.current_dir(root)
        .arg(cache.join("check.mjs"))
        .arg("--serve")
        .arg(format!("http://{}/api/v1/agui", server.addr))
        .args(&names);
    let result = run_command(&mut node);
    drop(server);
    result.map_err(|e| format!("live runs failed ({e}; server log: {})", log.display()))
}

/// The official `HttpAgent` through the gateway: `lce serve --upstream` in
/// front of the Python harness of `examples/harness-python/` (its scripted
/// agent `demo`: text, a streamed tool call, the approval interrupt).
fn gateway(root: &Path, cache: &Path, lce: &Path) -> Result<(), String> {
    let script = root.join("examples/harness-python/harness.py");
    let mut args = vec![OsString::from(script)];
    args.extend(["--port", "0", "--pace", "0", "--quiet", "--agents", "demo"].map(OsString::from));
    let harness_log = target_dir(root).join("conformance-harness.log");
    let harness = Replica::start(Path::new("python3"), &args, &harness_log)?;
    let url = format!("http://{}", harness.addr);
    let log = target_dir(root).join("conformance-gateway.log");
    let result = serve(lce, &["--upstream", &url], &log).and_then(|server| {
        let mut node = Command::new("node");
        node.current_dir(root)
            .arg(cache.join("check.mjs"))
            .arg("--serve")
            .arg(format!("http://{}/api/v1/agui", server.addr))
            .arg("demo");
        let result = run_command(&mut node);
        drop(server);
        result.map_err(|e| format!("{e}; server log: {}", log.display()))
    });
    drop(harness);
    result
}

// ---- repaired streams ----------------------------------------------------------

/// `lce encode --to agui-v1` over broken and mutated runs; every output must
/// pass the file checks.
fn repaired(root: &Path, cache: &Path, lce: &Path) -> Result<(), String> {
    let out = target_dir(root).join("conformance-repaired");
    if out.exists() {
        fs::remove_dir_all(&out).map_err(|e| format!("cannot clear {}: {e}", out.display()))?;
    }

    // (group, input) pairs: the fixtures as they are, then the mutations.
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for dir in BROKEN {
        let group = dir.rsplit('/').next().unwrap_or(dir).to_owned();
        for file in files_with(&root.join(dir), "jsonl")? {
            inputs.push((group.clone(), file));
        }
    }
    let mutated_dir = out.join("mutated");
    create_dir(&mutated_dir)?;
    for scenario in files_with(&root.join(SCENARIOS), "jsonl")? {
        let name = stem(&scenario);
        let text = read(&scenario)?;
        for (kind, bytes) in mutations(&name, &text) {
            let input = mutated_dir.join(format!("{name}.{kind}.jsonl"));
            write(&input, bytes.as_bytes())?;
            inputs.push(("mutated".to_owned(), input));
        }
    }

    let mut outputs = Vec::new();
    let mut clean = 0usize;
    let mut intervened = 0usize;
    let mut errors = Vec::new();
    for (group, input) in &inputs {
        let dir = out.join(group);
        create_dir(&dir)?;
        let output = dir.join(format!("{}.sse", stem(input)));
        let sink = fs::File::create(&output)
            .map_err(|e| format!("cannot create {}: {e}", output.display()))?;
        let status = Command::new(lce)
            .args(["encode", "--to", "agui-v1"])
            .arg(input)
            .stdin(Stdio::null())
            .stdout(Stdio::from(sink))
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run {}: {e}", lce.display()))?;
        match status.code() {
            Some(0) => clean += 1,
            Some(1) => intervened += 1,
            _ => errors.push(format!(
                "lce encode {} ended with {status}",
                input.display()
            )),
        }
        outputs.push(output);
    }
    println!(
        "conformance: encoded {} run(s) ({} mutated; the coordinator intervened in {intervened}, {clean} clean) into {}",
        inputs.len(),
        inputs.iter().filter(|(g, _)| g == "mutated").count(),
        out.display()
    );
    let checked = check_files(root, cache, &outputs, &["--quiet"]);
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    checked
}

/// A fixed-seed sample of mutations of one scenario: `(kind, JSON Lines)`.
/// Every kind appears at most once; a kind that cannot apply is left out.
fn mutations(name: &str, text: &str) -> Vec<(&'static str, String)> {
    let mut rng = Rng::new(MUTATION_SEED ^ fnv1a64(name.as_bytes()));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let n = lines.len();
    let joined = |v: &[&str]| {
        let mut s = v.join("\n");
        s.push('\n');
        s
    };
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let mut v = lines.clone();
    v.remove(rng.below(n));
    out.push(("drop", joined(&v)));

    let mut v = lines.clone();
    let i = rng.below(n);
    v.insert(i + 1, lines[i]);
    out.push(("duplicate", joined(&v)));

    if n >= 2 {
        let mut v = lines.clone();
        let i = rng.below(n - 1);
        v.swap(i, i + 1);
        out.push(("swap", joined(&v)));
        let keep = 1 + rng.below(n - 1);
        out.push(("cut-lines", joined(&lines[..keep])));
    }

    let all = joined(&lines);
    let mut at = 1 + rng.below(all.len().saturating_sub(1).max(1));
    while at < all.len() && !all.is_char_boundary(at) {
        at += 1;
    }
    out.push(("cut-bytes", all[..at].to_owned()));

    let deltas: Vec<usize> = (0..n)
        .filter(|&i| lines[i].contains("\"type\":\"text.delta\""))
        .collect();
    if !deltas.is_empty() {
        let i = deltas[rng.below(deltas.len())];
        if let Some(line) = retarget_message(lines[i], "msg-conformance-mutated") {
            let mut v: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            v[i] = line;
            let mut s = v.join("\n");
            s.push('\n');
            out.push(("retarget-delta", s));
        }
    }
    out
}

/// `line` with the value of its first `"message_id"` replaced by `id`.
fn retarget_message(line: &str, id: &str) -> Option<String> {
    const KEY: &str = "\"message_id\":\"";
    let start = line.find(KEY)? + KEY.len();
    let bytes = line.as_bytes();
    let mut end = start;
    while end < bytes.len() {
        match bytes[end] {
            b'\\' => end += 2,
            b'"' => break,
            _ => end += 1,
        }
    }
    if end >= bytes.len() {
        return None;
    }
    Some(format!("{}{id}{}", &line[..start], &line[end..]))
}

/// Makes `target/conformance-node/` hold the pinned packages and the current
/// checker; runs `npm ci` only when the lock or the manifest changed.
fn ensure_node_env(root: &Path) -> Result<PathBuf, String> {
    let source = root.join(SOURCE_DIR);
    let cache = target_dir(root).join("conformance-node");
    create_dir(&cache)?;

    let manifest = read(&source.join("package.json"))?;
    let lock = read(&source.join("package-lock.json"))?;
    let hash = format!(
        "{:016x}\n",
        fnv1a64(format!("{manifest}\0{lock}").as_bytes())
    );

    let stamp = cache.join(STAMP);
    let installed = fs::read_to_string(&stamp).ok();
    if installed.as_deref() != Some(hash.as_str()) || !cache.join("node_modules").is_dir() {
        // A stale stamp must not survive a failed install.
        let _ = fs::remove_file(&stamp);
        write(&cache.join("package.json"), &manifest)?;
        write(&cache.join("package-lock.json"), &lock)?;
        println!(
            "conformance: installing the pinned AG-UI packages into {}",
            cache.display()
        );
        let mut npm = Command::new(npm_program());
        npm.current_dir(&cache)
            .args(["ci", "--no-audit", "--no-fund"]);
        run_command(&mut npm)?;
        write(&stamp, hash.as_bytes())?;
    }
    write(&cache.join("check.mjs"), read(&source.join("check.mjs"))?)?;
    Ok(cache)
}

/// The npm executable (`npm.cmd` on Windows).
fn npm_program() -> OsString {
    if cfg!(windows) {
        OsString::from("npm.cmd")
    } else {
        OsString::from("npm")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    fn parse(v: &[&str]) -> Result<Args, clap::Error> {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        Cli::try_parse_from(std::iter::once("conformance").chain(v.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn args() {
        let o = parse(&["--files", "a.sse", "b.sse", "--allow-empty"]).unwrap();
        assert_eq!(o.files.map(|f| f.len()), Some(2));
        assert!(o.allow_empty);
        assert_eq!(parse(&["--files"]).unwrap().files, Some(Vec::new()));
        let o = parse(&["--dir", "x"]).unwrap();
        assert_eq!(o.dir, Some(PathBuf::from("x")));
        assert!(o.files.is_none());
        assert!(
            parse(&["--no-serve", "--no-repaired"]).is_ok(),
            "the goldens are left"
        );
        assert!(parse(&["a.sse"]).is_err());
        assert!(parse(&["--dir", "x", "--files", "a.sse"]).is_err());
        // The parts apply to the default run only, and leave something.
        assert!(parse(&["--self-test", "--no-serve"]).is_err());
        assert!(parse(&["--files", "a.sse", "--serve-only"]).is_err());
        assert!(parse(&["--serve-only", "--no-serve"]).is_err());
        assert!(parse(&["--serve-only", "--repaired-only"]).is_err());
        assert!(parse(&["--repaired-only", "--no-repaired"]).is_err());
    }

    const RUN: &str = concat!(
        r#"{"type":"run.started","sequence":0}"#,
        "\n",
        r#"{"type":"text.started","sequence":1,"data":{"message_id":"m1"}}"#,
        "\n",
        r#"{"type":"text.delta","sequence":2,"data":{"message_id":"m1","delta":"h\"é"}}"#,
        "\n",
        r#"{"type":"run.finished","sequence":3}"#,
        "\n",
    );

    #[test]
    fn mutations_are_fixed_and_varied() {
        let a = mutations("s", RUN);
        assert_eq!(a, mutations("s", RUN), "same seed, same sample");
        let kinds: Vec<_> = a.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            [
                "drop",
                "duplicate",
                "swap",
                "cut-lines",
                "cut-bytes",
                "retarget-delta"
            ]
        );
        for (kind, text) in &a {
            assert_ne!(text, RUN, "{kind} changed nothing");
        }
        let lines = |k: &str| a.iter().find(|(x, _)| *x == k).unwrap().1.lines().count();
        assert_eq!(lines("drop"), 3);
        assert_eq!(lines("duplicate"), 5);
        assert_eq!(lines("swap"), 4);
        assert_eq!(lines("cut-lines"), 1);
        let retargeted = &a.iter().find(|(k, _)| *k == "retarget-delta").unwrap().1;
        assert_eq!(
            retargeted,
            &RUN.replace(
                r#""message_id":"m1","delta""#,
                r#""message_id":"msg-conformance-mutated","delta""#
            )
        );
        assert!(mutations("s", "").is_empty());
    }

    #[test]
    fn retarget_skips_escapes() {
        assert_eq!(
            retarget_message(r#"{"message_id":"a\"b","x":1}"#, "z").as_deref(),
            Some(r#"{"message_id":"z","x":1}"#)
        );
        assert_eq!(retarget_message(r#"{"message_id":"open"#, "z"), None);
        assert_eq!(retarget_message(r#"{"id":"a"}"#, "z"), None);
    }
}
