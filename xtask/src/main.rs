//! Project automation, run as `cargo xtask <task>` (alias in `.cargo/config.toml`).
//!
//! Few dependencies on purpose: this binary only shells out to `cargo`, `npm`
//! and `node` (and `redis-server` with its tools for `cluster` and
//! `bench-gateway`), and compares files. Each task lives in its own module. The one
//! dependency is `lce-testkit`, in this workspace, small and unpublished, for
//! the corpus generator that `corpus` and `memcheck` run in process (it
//! brings `lce-types` and its serde along).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

mod bench_gateway;
mod bench_peers;
mod bless;
mod cluster;
mod conformance;
mod corpus;
mod fuzz;
mod json;
mod memcheck;
mod msrv;
mod mutants;
mod release;
mod soak;
mod util;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        print_help();
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let result = match task.as_str() {
        "help" | "--help" | "-h" => {
            print_help();
            Ok(())
        }
        "conformance" => conformance::run(rest),
        "bless" => bless::run(rest),
        "corpus" => corpus::run(rest),
        "fuzz" => fuzz::run(rest),
        "soak" => soak::run(rest),
        "release" => release::run(rest),
        "msrv" => msrv::run(rest),
        "memcheck" => memcheck::run(rest),
        "mutants" => mutants::run(rest),
        "bench-peers" => bench_peers::run(rest),
        "cluster" => cluster::run(rest),
        "bench-gateway" => bench_gateway::run(rest),
        other => Err(format!("unknown task `{other}` (try `cargo xtask help`)")),
    };
    let _ = rest;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    println!(
        "cargo xtask <task>\n\ntasks:\n  help          this text\n  conformance   check agui-v1 SSE with the official AG-UI 1.0 npm packages\n  bless [--only KIND]  rewrite the goldens and recorded outcomes (custom, agui, agui-v1, invoke, hostile; sse = the three formats) and print the diff\n  corpus        generate a deterministic canonical JSON Lines run (--events N --mix text|tools|mixed --seed S)\n  fuzz [--seconds N] [--target T]  run every fuzz target N s each (cargo fuzz, stable)\n  soak [--seconds N] [--clients C]  hostile load on `lce serve`: terminals, frames, RSS and fds\n  release       bump every crate, move the changelog, package and check; stops before publishing (<version> [--dry-run])\n  msrv          check the declared rust-version and build with it when installed\n  memcheck      peak RSS of lce encode over generated runs of growing length ([--events 100000,10000000] [--mix M] [--to F])\n  mutants       mutation testing, each library crate by its own tests: caught/viable and the missed ([--crate C] [--sample N] [--seed S] [--timeout SECS])
  bench-peers   lce beside Python, Node and Rust AG-UI implementations on one corpus ([--events N] [--seconds S])
  cluster       a local gateway: redis-server and three `lce serve --log redis://` replicas, with the curl commands to push and read a run; Ctrl-C stops it ([--debug] [--no-build] [--replicas N] [--seconds N]: stop after N s, and check a pushed run reads back as its golden file)
  bench-gateway the gateway's Redis run log measured: throughput against raw XADD, ingest-to-subscriber latency, Redis and replica memory ([--runs N] [--events M] [--concurrency 1,100,1000] [--idle N] [--no-always] [--no-build])\n"
    );
}
