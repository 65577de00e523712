//! `cargo xtask conformance`: checks standard AG-UI 1.0 (`agui-v1`) SSE files
//! with the official npm packages `@ag-ui/core` and `@ag-ui/client` 1.0.0.
//!
//! The packages are pinned by `xtask/conformance/package.json` and
//! `package-lock.json`, and installed with `npm ci` into
//! `target/conformance-node/` only when the lock (or the manifest) changed: a
//! stamp file there holds an FNV-1a hash of both. The checker,
//! `xtask/conformance/check.mjs`, is copied next to that `node_modules` and run
//! with `node`, so its bare imports resolve to the pinned packages.
//!
//! ```text
//! cargo xtask conformance [--dir DIR] [--files F.sse...] [--allow-empty]
//! cargo xtask conformance --self-test
//! ```
//!
//! By default every `*.sse` in `fixtures/golden/agui-v1/` is checked.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{run as run_command, workspace_root};

/// Folder checked when neither `--dir` nor `--files` is given.
const DEFAULT_DIR: &str = "fixtures/golden/agui-v1";
/// Sources of the checker, relative to the workspace root.
const SOURCE_DIR: &str = "xtask/conformance";
/// Name of the stamp file holding the hash of the installed lock.
const STAMP: &str = ".lock-hash";

/// What the command line asked for.
#[derive(Debug, Default)]
struct Options {
    /// `--dir DIR`: check every `*.sse` in DIR.
    dir: Option<PathBuf>,
    /// `--files F...`: check exactly these files.
    files: Vec<PathBuf>,
    /// `--allow-empty`: finding no file is a success.
    allow_empty: bool,
    /// `--self-test`: the samples must behave (good passes, bad fails).
    self_test: bool,
}

/// Runs the task with the arguments after `conformance`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let root = workspace_root();
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;

    let files = if options.self_test {
        sse_files(&root.join(SOURCE_DIR).join("samples"))?
    } else if !options.files.is_empty() {
        options.files.iter().map(|f| absolute(&cwd, f)).collect()
    } else {
        let dir = options
            .dir
            .as_ref()
            .map_or_else(|| root.join(DEFAULT_DIR), |d| absolute(&cwd, d));
        if dir.is_dir() {
            sse_files(&dir)?
        } else {
            Vec::new()
        }
    };
    if files.is_empty() {
        println!("conformance: no files");
        return if options.allow_empty {
            Ok(())
        } else {
            Err("no agui-v1 SSE files to check (pass --allow-empty to accept that)".to_owned())
        };
    }

    let cache = ensure_node_env(&root)?;
    let mut node = Command::new("node");
    node.current_dir(&root).arg(cache.join("check.mjs"));
    if options.self_test {
        node.arg("--self-test");
    }
    node.args(&files);
    run_command(&mut node).map_err(|e| format!("conformance check failed ({e})"))
}

/// Parses `--dir`, `--files`, `--allow-empty` and `--self-test`.
fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut iter = args.iter();
    let mut in_files = false;
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--dir" => {
                in_files = false;
                let dir = iter.next().ok_or("--dir needs a folder")?;
                options.dir = Some(PathBuf::from(dir));
            }
            "--files" => in_files = true,
            "--allow-empty" => {
                in_files = false;
                options.allow_empty = true;
            }
            "--self-test" => {
                in_files = false;
                options.self_test = true;
            }
            "-h" | "--help" => {
                return Err(
                    "usage: cargo xtask conformance [--dir DIR] [--files F.sse...] [--allow-empty] | --self-test"
                        .to_owned(),
                );
            }
            other if in_files && !other.starts_with("--") => {
                options.files.push(PathBuf::from(other))
            }
            other => return Err(format!("conformance: unknown argument `{other}`")),
        }
    }
    if options.dir.is_some() && !options.files.is_empty() {
        return Err("conformance: give --dir or --files, not both".to_owned());
    }
    Ok(options)
}

/// `path` made absolute against `base` (node runs from the workspace root).
fn absolute(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// Every `*.sse` file directly inside `dir`, sorted.
fn sse_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
            .path();
        if path.is_file() && path.extension().is_some_and(|ext| ext == "sse") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The target directory: `CARGO_TARGET_DIR` when set, else `<root>/target`.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => absolute(root, Path::new(&dir)),
        _ => root.join("target"),
    }
}

/// Makes `target/conformance-node/` hold the pinned packages and the current
/// checker; runs `npm ci` only when the lock or the manifest changed.
fn ensure_node_env(root: &Path) -> Result<PathBuf, String> {
    let source = root.join(SOURCE_DIR);
    let cache = target_dir(root).join("conformance-node");
    fs::create_dir_all(&cache).map_err(|e| format!("cannot create {}: {e}", cache.display()))?;

    let manifest = read(&source.join("package.json"))?;
    let lock = read(&source.join("package-lock.json"))?;
    let mut both = manifest.clone();
    both.push(0);
    both.extend_from_slice(&lock);
    let hash = format!("{:016x}\n", fnv1a64(&both));

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
    write(&cache.join("check.mjs"), &read(&source.join("check.mjs"))?)?;
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

/// Reads a whole file, naming it on failure.
fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Writes a whole file, naming it on failure.
fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// 64-bit FNV-1a: enough to notice that the lock changed.
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn args() {
        let to = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let o = parse_args(&to(&["--files", "a.sse", "b.sse", "--allow-empty"])).unwrap();
        assert_eq!(o.files.len(), 2);
        assert!(o.allow_empty);
        let o = parse_args(&to(&["--dir", "x"])).unwrap();
        assert_eq!(o.dir, Some(PathBuf::from("x")));
        assert!(parse_args(&to(&["a.sse"])).is_err());
        assert!(parse_args(&to(&["--dir", "x", "--files", "a.sse"])).is_err());
    }
}
