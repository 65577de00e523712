//! The run log conformance suite against `lce_stream::MemoryRunLog` (the
//! Redis one runs it in `crates/lce-redis/tests/run_log.rs`).

use lce_stream::MemoryRunLog;
use lce_testkit::run_log::check_run_log;

#[tokio::test]
async fn memory_run_log_conforms() {
    let log = MemoryRunLog::new();
    check_run_log(&log).await;
    // Again on the same log: the suite's runs never collide.
    check_run_log(&log).await;
}
