//! Golden files: `fixtures/golden/<format>/<scenario>.sse` must equal, byte
//! for byte, what `lce encode --to <format>` writes for
//! `fixtures/scenarios/<scenario>.jsonl`.
//!
//! Every format (`custom`, `agui`, `agui-v1`) and every scenario is
//! checked. This test only compares; to rewrite the files after an intended
//! change run `cargo xtask bless [--only FORMAT]` and read the diff it
//! prints.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::root;
use std::path::{Path, PathBuf};
use std::process::Command;

const FORMATS: &[&str] = &["custom", "agui", "agui-v1"];

fn scenarios() -> Vec<PathBuf> {
    common::scenario_files()
}

/// Runs `lce encode --to format file`.
fn encode(format: &str, file: &Path) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_lce"))
        .args(["encode", "--to", format])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lce encode --to {format} {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Where two outputs first differ, as `frame N (line L)`.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let at = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let frame = want[..at].windows(2).filter(|w| w == b"\n\n").count() + 1;
    let line = want[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    format!(
        "first difference at byte {at}, frame {frame}, line {line}; golden {} bytes, output {} bytes",
        want.len(),
        got.len()
    )
}

#[test]
fn golden_files_match_encoder_output() {
    let scenarios = scenarios();
    let mut failures = Vec::new();
    let mut checked = 0;
    for format in FORMATS {
        let dir = root().join("fixtures/golden").join(format);
        for scenario in &scenarios {
            let got = encode(format, scenario);
            let stem = scenario.file_stem().unwrap().to_string_lossy().into_owned();
            let golden = dir.join(format!("{stem}.sse"));
            match std::fs::read(&golden) {
                Err(_) => failures.push(format!(
                    "{format}/{stem}.sse is missing (run `cargo xtask bless --only {format}`)"
                )),
                Ok(want) if want != got => failures.push(format!(
                    "{format}/{stem}.sse differs: {}",
                    first_difference(&want, &got)
                )),
                Ok(_) => checked += 1,
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) do not match (if the change is intended, run `cargo xtask bless` and explain the diff):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(checked, FORMATS.len() * scenarios.len());
}

#[test]
fn no_stray_golden_files() {
    let names: Vec<String> = scenarios()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for format in FORMATS {
        let dir = std::fs::read_dir(root().join("fixtures/golden").join(format)).unwrap();
        for entry in dir {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            assert!(
                path.extension().is_some_and(|e| e == "sse") && names.contains(&stem),
                "{} has no scenario",
                path.display()
            );
        }
    }
}

/// The scenarios whose live bytes depend on where the upstream waits: a
/// tool call whose arguments are complete at its start, later rejected. In
/// DA's formats a wait before the rejection releases the held start
/// (D13a), so the client sees the start and its error; without a wait the
/// start is dropped with the rejection, as the golden file shows. Both are
/// right (`docs/wire.md`, D13a); the golden file is the no-wait bytes.
const PAUSE_SENSITIVE: [&str; 2] = [
    "resumed-after-rejected-approval",
    "resumed-mixed-approval-decisions",
];

/// Runs `lce encode --to format` with the scenario in a pipe: the live path
/// (tokio's `FramedRead` over stdin, D13a releases whenever no line is
/// ready). `line_by_line`: written one line at a time while lce reads (it
/// may wait between any two lines); otherwise the whole scenario is in the
/// pipe, and the pipe closed, before lce starts.
fn encode_from_pipe(format: &str, file: &Path, line_by_line: bool) -> Vec<u8> {
    use std::io::Write as _;
    let text = std::fs::read_to_string(file).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_lce"));
    command
        .args(["encode", "--to", format])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = if line_by_line {
        let mut child = command.stdin(std::process::Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            for line in text.split_inclusive('\n') {
                stdin.write_all(line.as_bytes()).unwrap();
                stdin.flush().unwrap();
            }
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    } else {
        // A few KiB: the pipe's buffer holds it all.
        let (reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(text.as_bytes()).unwrap();
        drop(writer);
        command.stdin(reader).output().unwrap()
    };
    assert!(
        out.status.success(),
        "lce encode --to {format} < {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_pipe_gives_the_golden_bytes() {
    let scenarios = scenarios();
    for format in FORMATS {
        for scenario in &scenarios {
            let stem = scenario.file_stem().unwrap().to_string_lossy().into_owned();
            let want = std::fs::read(
                root()
                    .join("fixtures/golden")
                    .join(format)
                    .join(format!("{stem}.sse")),
            )
            .unwrap();
            let line_by_line = !PAUSE_SENSITIVE.contains(&stem.as_str());
            let got = encode_from_pipe(format, scenario, line_by_line);
            assert!(
                want == got,
                "{format}/{stem}.sse from a pipe: {}",
                first_difference(&want, &got)
            );
        }
    }
}
