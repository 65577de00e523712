//! Project automation, run as `cargo xtask <task>` (alias in `.cargo/config.toml`).
//!
//! This binary shells out to `cargo`, `npm` and `node` (and `redis-server`
//! with its tools for `cluster` and `bench-gateway`), and compares files.
//! Each task lives in its own module, with its command line as a `clap`
//! `Args` struct. Its dependencies are well-kept crates for what it would
//! otherwise hand-write (JSON, `cargo metadata`, TOML edits, semver, HTTP to
//! the loopback replicas, Redis commands), and `lce-testkit`, in this
//! workspace, for the corpus generator and the throwaway `redis-server`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::Parser;

/// The `redis` crate without its async features (`redis-blocking` in the
/// workspace's dependencies), under its own name.
extern crate redis_blocking as redis;

mod bench_gateway;
mod bench_peers;
mod bench_python;
mod bless;
mod cluster;
mod conformance;
mod corpus;
mod fuzz;
mod memcheck;
mod msrv;
mod mutants;
mod release;
mod soak;
mod util;

/// `cargo xtask <task>`: the project's automation.
#[derive(Debug, Parser)]
#[command(bin_name = "cargo xtask", arg_required_else_help = true)]
enum Task {
    /// Check agui-v1 SSE with the official AG-UI 1.0 npm packages.
    Conformance(conformance::Args),
    /// Rewrite the goldens and recorded outcomes (custom, agui, agui-v1,
    /// invoke, hostile; sse = the three formats) and print the diff.
    Bless(bless::Args),
    /// Generate a deterministic canonical JSON Lines run.
    Corpus(corpus::Args),
    /// Run every fuzz target N s each (cargo fuzz, stable).
    Fuzz(fuzz::Args),
    /// Hostile load on `lce serve`: terminals, frames, RSS and fds.
    Soak(soak::Args),
    /// Bump every crate, move the changelog, package and check; stops
    /// before publishing.
    Release(release::Args),
    /// Check the declared rust-version and build with it when installed.
    Msrv(msrv::Args),
    /// Peak RSS of lce encode over generated runs of growing length.
    Memcheck(memcheck::Args),
    /// Mutation testing, each library crate by its own tests: caught/viable
    /// and the missed.
    Mutants(mutants::Args),
    /// lce beside Python, Node and Rust AG-UI implementations on one corpus.
    BenchPeers(bench_peers::Args),
    /// A local gateway: redis-server and three `lce serve --log redis://`
    /// replicas, with the curl commands to push and read a run; Ctrl-C
    /// stops it (`--seconds N`: stop after N s, and check a pushed run reads
    /// back as its golden file).
    Cluster(cluster::Args),
    /// The gateway's Redis run log measured: throughput against raw XADD,
    /// ingest-to-subscriber latency, Redis and replica memory.
    BenchGateway(bench_gateway::Args),
    /// The Python package per event against `lce encode` and a CPython
    /// DA-style encoder, on short realistic runs and a long one.
    BenchPython(bench_python::Args),
}

fn main() -> ExitCode {
    let result = match Task::parse() {
        Task::Conformance(args) => conformance::run(args),
        Task::Bless(args) => bless::run(args),
        Task::Corpus(args) => corpus::run(args),
        Task::Fuzz(args) => fuzz::run(args),
        Task::Soak(args) => soak::run(args),
        Task::Release(args) => release::run(args),
        Task::Msrv(args) => msrv::run(args),
        Task::Memcheck(args) => memcheck::run(args),
        Task::Mutants(args) => mutants::run(args),
        Task::BenchPeers(args) => bench_peers::run(args),
        Task::Cluster(args) => cluster::run(args),
        Task::BenchGateway(args) => bench_gateway::run(args),
        Task::BenchPython(args) => bench_python::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        <super::Task as clap::CommandFactory>::command().debug_assert();
    }
}
