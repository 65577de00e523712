//! `lce-testkit`: what lce's tests, benches and automation share, kept out of
//! the published crates' public API (issue 17). Not published
//! (`publish = false`); use it as a dev-dependency, or as a dependency of
//! unpublished members (`xtask`, `lce-benches`).
//!
//! - [`RunBuilder`]: the one event builder of the tests. The events of one
//!   run with automatic sequences, a deterministic clock and a settable
//!   namespace ([`RunBuilder::at`]), from shorthands for the common events
//!   (`run_started`, `text_delta`, `tool_started`, ...) or any type and `data`
//!   ([`RunBuilder::event`]); every event is parsed from its JSON line by the
//!   real, strict parser of `lce-types`.
//! - [`corpus`]: the deterministic generator of benchmark runs (issue 7):
//!   [`corpus::write`] writes a valid canonical run of any length, in constant
//!   memory, the same bytes for the same [`corpus::Options`]. `cargo xtask
//!   corpus` is a command line over it; the benches and `cargo xtask
//!   memcheck` call it in process.
//! - [`rng`]: [`rng::SplitMix64`], the deterministic generator the corpus
//!   and the `xtask` commands that draw (`soak`, `conformance`) share.
//! - [`time`]: the clock both start from, RFC 3339 timestamps from
//!   milliseconds, and the civil date of a day number.
//! - [`json_string`]: a string as JSON text, for `data` written by hand.
//! - [`fixtures`]: the bundled scenarios, read and parsed once per call.
//!
//! - [`FaultyStore`]: a thread store that fails, hangs or delays its
//!   commits, counting them (the coordinator's tests of rules 13-15).
//! - [`run_log`]: the conformance suite of `lce_runlog::RunLog` (feature `run-log`)
//!   ([`run_log::check_run_log`]), which every run log must pass.
//! - [`redis_server`]: [`redis_server::RedisServer`], a throwaway
//!   `redis-server` (free port, fresh directory, fsync on every write) that a
//!   test can `kill -9` and restart; a loud skip where none is installed,
//!   a failure in CI.
//! - [`redis_topology`]: Sentinel-watched pairs and Clusters of
//!   throwaway servers, for failover tests.
//! - `fuzzing` (feature `fuzzing`): the fuzz harnesses the `fuzz/` targets
//!   call in one line, replayed over the committed corpora by
//!   `tests/fuzz_corpus.rs`.
//!
//! May depend on: `lce-types` (the builder parses with it), `lce-core` and
//! tokio's timers (the faulty store, the run log suite) and std (the Redis
//! server is a child process); with `fuzzing`, the published
//! crates the harnesses drive (through their public API only, and
//! `lce-gateway`'s hidden `fuzzing` seam) and `arbitrary`. The corpus generator and [`time`] use std only. Any crate's
//! tests may use it, except `lce-types`' own unit tests (there it would bring
//! a second copy of `lce-types`, whose `Event` is another type). In the unit
//! tests of a crate it depends on (`lce-wire`, `lce-core`), a second copy of
//! that crate is built; harmless while only `lce_types::Event` crosses.
//!
//! ```
//! use lce_testkit::RunBuilder;
//! let mut run = RunBuilder::new("run-1", "conv-1");
//! let events = [
//!     run.run_started(),
//!     run.text_started("msg-1"),
//!     run.text_delta("msg-1", "Hello"),
//!     run.text_finished("msg-1"),
//!     run.run_finished(),
//! ];
//! assert_eq!(events[4].sequence, 4);
//! ```

pub mod corpus;
pub mod fixtures;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod json;
pub mod redis_server;
pub mod redis_topology;
pub mod rng;
mod run;
#[cfg(feature = "run-log")]
pub mod run_log;
mod store;
pub mod time;

pub use json::json_string;
pub use run::RunBuilder;
pub use store::{Fault, FaultyStore};
