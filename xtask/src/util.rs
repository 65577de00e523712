//! Small helpers shared by the tasks: the workspace root, running commands,
//! building `lce`, what the benchmarks say about the machine, and a seeded
//! random number generator.

use std::path::{Path, PathBuf};
use std::process::Command;

use lce_testkit::rng::SplitMix64;

/// The workspace root (the parent of the `xtask` folder).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// Runs a command to completion, failing with a message naming it.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let line = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{line}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{line}` failed ({status})"))
    }
}

/// Reads a whole file as text, naming it on failure.
pub(crate) fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Writes a whole file, naming it on failure.
pub(crate) fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Creates a folder and its parents, naming it on failure.
pub(crate) fn create_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// 64-bit FNV-1a: enough to notice that an install's inputs changed.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The files of `dir` (not below it) whose extension is `ext`, sorted.
pub(crate) fn files_with(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    Ok(files)
}

/// A file's name without its extension (lossy UTF-8).
pub(crate) fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The build folder: `CARGO_TARGET_DIR` (against `root` when relative),
/// else `root/target`.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// The `lce` binary of `cargo build -p lce-cli` (`--release` or debug),
/// built first (`cargo build --quiet`) when `build`.
pub(crate) fn lce(root: &Path, release: bool, build: bool) -> Result<PathBuf, String> {
    if build {
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cmd.current_dir(root)
            .args(["build", "--quiet", "-p", "lce-cli", "--bin", "lce"]);
        if release {
            cmd.arg("--release");
        }
        run(&mut cmd).map_err(|e| format!("cannot build lce ({e})"))?;
    }
    let profile = if release { "release" } else { "debug" };
    let exe = target_dir(root)
        .join(profile)
        .join(format!("lce{}", std::env::consts::EXE_SUFFIX));
    if exe.is_file() {
        Ok(exe)
    } else {
        Err(format!(
            "{} is missing (build it, or drop --no-build)",
            exe.display()
        ))
    }
}

/// The machine's logical cores.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU's model name, from `/proc/cpuinfo`.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

/// The random choices of `soak` and `conformance`'s mutations: lce-testkit's
/// splitmix64 (the corpus generator's), reduced modulo `n`, the numbers
/// they have always drawn.
pub(crate) struct Rng(SplitMix64);

impl Rng {
    /// A generator seeded with `seed`.
    pub(crate) const fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed))
    }

    /// A number in `0..n` (0 when `n` is 0, after a draw all the same).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        // usize -> u64 never loses bits on the platforms we build for; the
        // remainder is below `n`, so it fits back.
        (self.0.next_u64() % n.max(1) as u64) as usize
    }
}

/// `v` rounded, with thousands separated by commas (`1,234,567`).
pub(crate) fn thousands(v: f64) -> String {
    let digits = format!("{v:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A `KiB` field of `/proc/PID/status` (`VmRSS`, `VmHWM`).
pub(crate) fn proc_status_kib(pid: u32, field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no {field}"))
}
