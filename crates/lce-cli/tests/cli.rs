//! The command line a Rust user expects: `--help` on every command (its
//! options and an example), `lce help COMMAND`, `--version`, suggestions
//! for misspelt commands and options, and the exit statuses (0 for help and
//! version, on stdout; 2 for usage errors, on stderr).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::lce;

/// Every command and every option it takes.
const COMMANDS: &[(&str, &[&str])] = &[
    (
        "check",
        &[
            "--json",
            "--all",
            "--adapter",
            "--ephemeral",
            "--schemas <DIR>",
            "--window <N>",
            "--summary",
            "[FILE]...",
        ],
    ),
    (
        "encode",
        &[
            "--to <FORMAT>",
            "--agent-name <NAME>",
            "--ephemeral",
            "--limits <FILE>",
            "custom, agui, agui-v1",
            "[FILE]",
        ],
    ),
    ("invoke", &["--agent-id <ID>", "--trace-id <ID>", "[FILE]"]),
    (
        "serve",
        &[
            "--addr <ADDR>",
            "--scenarios <DIR>",
            "--speed <F>",
            "--keepalive <SECS>",
            "--agent-name <NAME>",
            "--default-scenario <NAME>",
            "--audit-log <FILE>",
        ],
    ),
];

#[test]
fn every_command_has_help_with_its_options_and_an_example() {
    for (cmd, options) in COMMANDS {
        for flag in ["--help", "-h"] {
            let (code, out, err) = lce(&[cmd, flag]);
            assert_eq!((code, err.as_str()), (0, ""), "{cmd} {flag}");
            assert!(
                out.contains(&format!("Usage: lce {cmd}")),
                "{cmd} {flag}: {out}"
            );
            for option in *options {
                assert!(out.contains(option), "{cmd} {flag}: no {option}: {out}");
            }
            assert!(
                out.contains(&format!("\n  lce {cmd} ")),
                "{cmd} {flag}: no example: {out}"
            );
            assert!(out.contains("Exit status: "), "{cmd} {flag}: {out}");
        }
    }
}

#[test]
fn help_names_a_command() {
    for (cmd, _) in COMMANDS {
        let (code, out, err) = lce(&["help", cmd]);
        assert_eq!((code, err.as_str()), (0, ""), "{cmd}");
        assert_eq!(out, lce(&[cmd, "--help"]).1, "{cmd}");
    }
    // `lce help`, `--help` and `-h`: the commands, on stdout.
    for args in [&["help"][..], &["--help"], &["-h"]] {
        let (code, out, _) = lce(args);
        assert_eq!(code, 0, "{args:?}");
        for (cmd, _) in COMMANDS {
            assert!(out.contains(&format!("\n  {cmd} ")), "{args:?}: {out}");
        }
    }
    // No command at all: the same list, as a usage error.
    let (code, out, err) = lce(&[]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("\n  check "), "{err}");
}

#[test]
fn version() {
    let want = format!("lce {}\n", env!("CARGO_PKG_VERSION"));
    for flag in ["--version", "-V"] {
        assert_eq!(lce(&[flag]), (0, want.clone(), String::new()), "{flag}");
    }
}

#[test]
fn misspelt_options_and_commands_get_a_suggestion() {
    for (args, tip) in [
        (&["check", "--jsn", "x.jsonl"][..], "'--json'"),
        (&["encode", "--too", "custom"], "'--to'"),
        (&["serve", "--adress", "127.0.0.1:0"], "'--addr'"),
        (&["invoke", "--agent", "a"], "'--agent-id'"),
        (&["chek", "x.jsonl"], "'check'"),
        (&["encode", "--to", "agiu"], "agui"),
    ] {
        let (code, out, err) = lce(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(tip), "{args:?}: {err}");
    }
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["encode"][..],
        &["encode", "--to"],
        &["check", "--window", "many"],
        &["serve", "--speed", "-1"],
        &["serve", "--keepalive", "0"],
        // Too long for a `Duration`: a usage error, not a panic.
        &["serve", "--keepalive", "1e300"],
        // Each seconds option takes its range only.
        &["serve", "--takeover-after", "0"],
        &["serve", "--takeover-after", "-1"],
        &["serve", "--takeover-after", "NaN"],
        &["serve", "--header-timeout", "86401"],
        &["serve", "--shutdown-grace", "-0.5"],
        &["serve", "--run-deadline", "-1"],
        &["serve", "--addr", "nowhere"],
        &["invoke", "a.jsonl", "b.jsonl"],
    ] {
        let (code, out, err) = lce(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}
