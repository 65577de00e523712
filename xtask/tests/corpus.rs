//! The corpus generator (`lce_testkit::corpus`) and its command line
//! `cargo xtask corpus`: the two write the same bytes; determinism, exact
//! event counts, and every generated run parses with `lce-types` and obeys
//! the contract's state machine (checked here by `lce-validate`'s
//! `RunValidator` and by a small independent model of the rules the
//! generator touches, with its size promises).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{HashMap, HashSet};
use std::process::Command;

use lce_testkit::corpus::{self as generator, Mix, Options};
use lce_types::{Durability, Event, EventType, JsonObject, Payload};
use lce_validate::{RunValidator, ValidatorOptions};

/// Runs `xtask corpus` with `args` and returns stdout.
fn corpus(args: &[&str]) -> Vec<u8> {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("corpus")
        .args(args)
        .output()
        .expect("run xtask");
    assert!(
        output.status.success(),
        "xtask corpus {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The run the library writes for these options, in memory.
fn library(events: u64, mix: &str, seed: u64) -> Vec<u8> {
    let mix = Mix::from_name(mix).expect("a mix");
    generator::to_vec(&Options { events, mix, seed }).expect("generate")
}

/// What a check of a run saw.
#[derive(Default, Debug)]
struct Seen {
    counts: HashMap<EventType, u64>,
    max_depth: usize,
    max_args: usize,
    max_result: usize,
    streamed_tools: u64,
}

/// Parses every line and checks the run; panics with the line number.
fn check_run(bytes: &[u8], expected_events: usize) -> Seen {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    assert!(text.ends_with('\n'), "the last line ends with a newline");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), expected_events, "exact event count");

    let mut seen = Seen::default();
    let mut open_spans: HashSet<String> = HashSet::new();
    let mut closed_spans: HashSet<String> = HashSet::new();
    // tool id -> (name, namespace, streamed arguments so far, started with `{}`)
    let mut open_tools: HashMap<String, (String, Vec<String>, String, bool)> = HashMap::new();
    let mut closed_tools: HashSet<String> = HashSet::new();
    // Active delegations, outermost first: (tool id, agent id).
    let mut namespaces: Vec<(String, String)> = Vec::new();
    let mut last_timestamp = String::new();
    // The contract's own validator, full mode, gaps in `sequence` rejected.
    let mut validator = RunValidator::new(ValidatorOptions::new().contiguous(true));

    for (i, line) in lines.iter().enumerate() {
        let at = format!("line {}", i + 1);
        let event = Event::from_json(line).unwrap_or_else(|e| panic!("{at}: {e}: {line}"));
        assert_eq!(event.sequence, i as u64, "{at}: contiguous sequence");
        if let Err(violation) = validator.push(&event) {
            panic!("{at}: lce-validate: {violation:?}");
        }
        let ts = event.timestamp.as_str().to_owned();
        assert!(
            ts.ends_with('Z') && ts.len() == 24,
            "{at}: RFC 3339 with ms: {ts}"
        );
        assert!(ts > last_timestamp, "{at}: timestamps increase");
        last_timestamp = ts;
        *seen.counts.entry(event.event_type()).or_default() += 1;

        let ty = event.event_type();
        assert_eq!(
            i == 0,
            ty == EventType::RunStarted,
            "{at}: run.started first and only first"
        );
        let terminal = matches!(
            ty,
            EventType::RunFinished
                | EventType::RunError
                | EventType::RunCancelled
                | EventType::RunInterrupted
        );
        assert_eq!(
            terminal,
            i + 1 == lines.len(),
            "{at}: exactly one terminal, last"
        );

        // Namespace: events carry the active path, except enter/exit which
        // are written in the parent's namespace.
        let active: Vec<String> = namespaces.iter().map(|(id, _)| id.clone()).collect();
        let expected_ns = if ty == EventType::NamespaceExited {
            active[..active.len().saturating_sub(1)].to_vec()
        } else {
            active.clone()
        };
        assert_eq!(event.namespace, expected_ns, "{at}: namespace");
        seen.max_depth = seen.max_depth.max(event.namespace.len());

        match &event.payload {
            Payload::TextStarted(s) | Payload::ReasoningStarted(s) => {
                assert!(
                    !closed_spans.contains(&*s.message_id)
                        && open_spans.insert(s.message_id.to_string()),
                    "{at}: span started twice"
                );
            }
            Payload::TextDelta(d) | Payload::ReasoningDelta(d) => {
                assert!(
                    open_spans.contains(&*d.message_id),
                    "{at}: delta of a span not open"
                );
                assert!(
                    (5..=40).contains(&d.delta.len()),
                    "{at}: delta of {} bytes",
                    d.delta.len()
                );
            }
            Payload::TextFinished(s) | Payload::ReasoningFinished(s) => {
                assert!(
                    open_spans.remove(&*s.message_id),
                    "{at}: finish of a span not open"
                );
                closed_spans.insert(s.message_id.to_string());
            }
            Payload::ToolStarted(t) => {
                assert!(
                    !closed_tools.contains(&t.tool_call_id)
                        && !open_tools.contains_key(&t.tool_call_id),
                    "{at}: tool started twice"
                );
                let streamed = t.arguments.is_empty_object();
                if streamed {
                    seen.streamed_tools += 1;
                } else if t.tool_name != "task" {
                    let len = t.arguments.get().len();
                    assert!(
                        (100..=4096).contains(&len),
                        "{at}: arguments of {len} bytes"
                    );
                    seen.max_args = seen.max_args.max(len);
                }
                open_tools.insert(
                    t.tool_call_id.clone(),
                    (
                        t.tool_name.clone(),
                        event.namespace.clone(),
                        String::new(),
                        streamed,
                    ),
                );
            }
            Payload::ToolArgumentsDelta(d) => {
                let tool = open_tools
                    .get_mut(&d.tool_call_id)
                    .unwrap_or_else(|| panic!("{at}: args of a tool not open"));
                assert!(
                    tool.3,
                    "{at}: streamed args for a tool started with arguments"
                );
                assert!(!d.delta.is_empty(), "{at}: empty arguments delta");
                tool.2.push_str(&d.delta);
            }
            Payload::ToolFinished(_) | Payload::ToolError(_) => {
                let id = match &event.payload {
                    Payload::ToolFinished(f) => {
                        assert!(
                            f.result.len() <= 8192,
                            "{at}: result of {} bytes",
                            f.result.len()
                        );
                        seen.max_result = seen.max_result.max(f.result.len());
                        &f.tool_call_id
                    }
                    Payload::ToolError(e) => &e.tool_call_id,
                    _ => unreachable!(),
                };
                let (_, ns, args, streamed) = open_tools
                    .remove(id)
                    .unwrap_or_else(|| panic!("{at}: end of a tool not open"));
                assert_eq!(ns, event.namespace, "{at}: tool ends in its namespace");
                assert!(
                    !namespaces.iter().any(|(d, _)| d == id),
                    "{at}: delegation finished before its namespace exited"
                );
                if streamed {
                    let object = JsonObject::from_json(&args).unwrap_or_else(|e| {
                        panic!("{at}: streamed arguments are not an object: {e}")
                    });
                    let len = object.get().len();
                    assert!(
                        (100..=4096).contains(&len),
                        "{at}: streamed arguments of {len} bytes"
                    );
                    seen.max_args = seen.max_args.max(len);
                }
                closed_tools.insert(id.clone());
            }
            Payload::NamespaceEntered(n) => {
                let (name, ns, _, _) = open_tools
                    .get(&n.parent_tool_call_id)
                    .unwrap_or_else(|| panic!("{at}: entered under a tool not open"));
                assert_eq!(name, "task", "{at}: delegation tool");
                assert_eq!(
                    *ns, event.namespace,
                    "{at}: delegation in the parent namespace"
                );
                namespaces.push((n.parent_tool_call_id.clone(), n.agent_id.clone()));
            }
            Payload::NamespaceExited(n) => {
                let (id, agent) = namespaces
                    .pop()
                    .unwrap_or_else(|| panic!("{at}: exit of the root"));
                assert_eq!(
                    (id, agent),
                    (n.parent_tool_call_id.clone(), n.agent_id.clone()),
                    "{at}: balanced"
                );
            }
            Payload::RunFinished(f) => {
                let state = f.thread_state.as_ref().expect("thread_state");
                assert_eq!(state.durability, Durability::Committed);
            }
            Payload::RunStarted(_)
            | Payload::Warning(_)
            | Payload::UsageUpdated(_)
            | Payload::ProviderMetadata(_) => {}
            other => panic!("{at}: unexpected {:?}", other.event_type()),
        }
    }
    if let Err(violation) = validator.finish() {
        panic!("end of run: lce-validate: {violation:?}");
    }
    assert!(open_spans.is_empty(), "spans left open: {open_spans:?}");
    assert!(
        open_tools.is_empty(),
        "tools left open: {:?}",
        open_tools.keys()
    );
    assert!(namespaces.is_empty(), "namespaces left open");
    seen
}

#[test]
fn same_seed_same_bytes_and_out_file_matches_stdout() {
    for mix in ["text", "tools", "mixed"] {
        let a = corpus(&["--events", "3000", "--mix", mix, "--seed", "42"]);
        let b = corpus(&["--events", "3000", "--mix", mix, "--seed", "42"]);
        assert_eq!(a, b, "{mix}: same seed, same bytes");
        let c = corpus(&["--events", "3000", "--mix", mix, "--seed", "43"]);
        assert_ne!(a, c, "{mix}: another seed, another run");
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let out = dir.join("corpus-out-test.jsonl");
    let stdout = corpus(&["--events", "777", "--seed", "5"]);
    corpus(&[
        "--events",
        "777",
        "--seed",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read(&out).unwrap(), stdout);
}

#[test]
fn the_command_line_writes_what_the_library_writes() {
    for mix in ["text", "tools", "mixed"] {
        for (n, seed) in [(2u64, 0u64), (17, 3), (1000, 1), (5000, 42)] {
            let cli = corpus(&[
                "--events",
                &n.to_string(),
                "--mix",
                mix,
                "--seed",
                &seed.to_string(),
            ]);
            assert!(
                cli == library(n, mix, seed),
                "{mix} {n} seed {seed}: the command line and the library differ"
            );
        }
    }
    // The defaults are the library's: mixed, seed 1; and --stats prints the
    // library's table.
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["corpus", "--events", "1_000", "--stats"])
        .output()
        .expect("run xtask");
    assert!(output.status.success());
    let mut bytes = Vec::new();
    let stats = generator::write(&Options::new(1000), &mut bytes).unwrap();
    assert!(output.stdout == bytes, "defaults differ");
    assert_eq!(String::from_utf8(output.stderr).unwrap(), stats.to_string());
}

#[test]
fn exact_counts_and_valid_runs_for_small_and_odd_sizes() {
    for mix in ["text", "tools", "mixed"] {
        for n in [2usize, 3, 4, 5, 6, 7, 8, 9, 10, 13, 17, 31, 64, 100, 257] {
            for seed in 0..6u64 {
                check_run(&library(n as u64, mix, seed), n);
            }
        }
    }
}

#[test]
fn mixes_have_their_shape() {
    let text = check_run(&library(20_000, "text", 1), 20_000);
    let deltas = text.counts[&EventType::TextDelta];
    assert!(
        deltas * 100 >= 92 * 20_000,
        "text mix: {deltas} text deltas of 20000"
    );

    let tools = check_run(&library(20_000, "tools", 1), 20_000);
    assert!(tools.counts[&EventType::ToolStarted] > 500, "{tools:?}");
    assert!(
        tools.counts[&EventType::ToolArgumentsDelta] > 5000,
        "{tools:?}"
    );
    assert!(tools.streamed_tools > 100);
    assert!(
        tools.max_args > 3000 && tools.max_result > 6000,
        "{tools:?}"
    );

    let mixed = check_run(&library(50_000, "mixed", 1), 50_000);
    assert_eq!(mixed.max_depth, 2, "namespaces two deep");
    for ty in [
        EventType::TextDelta,
        EventType::ReasoningDelta,
        EventType::ToolArgumentsDelta,
        EventType::ToolError,
        EventType::NamespaceEntered,
        EventType::Warning,
        EventType::UsageUpdated,
        EventType::ProviderMetadata,
    ] {
        assert!(
            mixed.counts.get(&ty).copied().unwrap_or(0) > 0,
            "mixed has {ty:?}"
        );
    }
}

#[test]
fn bad_arguments_are_refused() {
    for args in [
        &["--events", "1"][..],
        &["--mix", "text"][..],
        &["--events", "10", "--mix", "nope"][..],
        &["--events", "ten"][..],
        &["--events", "10", "--bogus"][..],
    ] {
        let status = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("corpus")
            .args(args)
            .output()
            .unwrap()
            .status;
        assert!(!status.success(), "{args:?} should fail");
    }
}
