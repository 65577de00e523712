//! DA's non-streaming invoke: `lce invoke [--agent-id ID] [--trace-id ID]
//! [FILE]` (the `POST /api/v1/chat/invoke` route of the gateway gives the
//! same answer for a live run).
//!
//! Both run the whole pipeline of a live service (strict parsing, the
//! coordinator: sanitize, validate, commit, the contract's guarantees), feed
//! the coordinator's output to
//! [`InvokeAccumulator`](lce_encode_custom::InvokeAccumulator) (the `custom`
//! encoder's own frame decisions, D13 included) and answer from the run's
//! terminal: 200 finished, 400 interrupt, 503 capacity (`Retry-After`), 500
//! anything else (see `lce_encode_custom::invoke` and docs/wire.md).
//!
//! `lce invoke` prints the exact response body on stdout (no newline added)
//! and `status N` on stderr, plus `retry-after S` for a 503. Exit status: 0
//! for 200, 1 for any other answer, 2 for usage or I/O errors. `agent_id` is
//! `--agent-id`, else the FILE's name without `.jsonl` (what `lce serve`
//! calls that scenario's agent), else (stdin) the `harness_id` of the run's
//! `run.started`; `conversation_id` is the run's; `trace_id` is `--trace-id`,
//! else `null`. Input from a file or stdin is always ready, so the live
//! release (D13a) never happens and the answer is deterministic.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lce::custom::invoke::InvokeIds;
use lce::prelude::*;
use lce::stream::MemoryAudit;

use crate::input;
use crate::usage::UsageError;

/// What `lce invoke --help` shows after the options.
const AFTER_HELP: &str = "\
The body goes to stdout as is (no newline added); `status N` (and
`retry-after S` for a 503) to stderr.
Exit status: 0 for a 200 answer, 1 for any other, 2 usage or I/O error.

Example:
  lce invoke --agent-id my-agent --trace-id tr-1 run.jsonl";

/// Answer a run as DA's non-streaming invoke would.
///
/// The run goes through the whole pipeline (parsing, the coordinator, the
/// `custom` encoder's decisions) and is answered from its terminal: 200
/// finished, 400 interrupt, 503 capacity (with Retry-After), 500 otherwise.
#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// `agent_id` of the answer.
    ///
    /// Default: FILE's name without `.jsonl`, else (stdin) the `harness_id`
    /// of the run's `run.started`.
    #[arg(long, value_name = "ID")]
    agent_id: Option<String>,
    /// `trace_id` of the answer (default: null).
    #[arg(long, value_name = "ID")]
    trace_id: Option<String>,
    /// Canonical JSON Lines of one run; `-` is stdin [default: -].
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
}

/// Runs `lce invoke`; `Ok(true)` when the answer is a 200.
pub(crate) fn run(args: Args) -> Result<bool, UsageError> {
    let Args {
        agent_id,
        trace_id,
        file,
    } = args;
    let input = input::open(file.as_deref())?;
    let name = input.name.clone();
    // Read ahead of the pipeline only as far as the first line (the run's ids).
    let mut lines = EventLines::new(input.reader).peekable();
    let first = match lines.peek() {
        Some(Ok(Ok(e))) => Some(e.clone()),
        Some(Err(e)) => return Err(UsageError(format!("{name}: read error: {e}"))),
        _ => None,
    };
    let (run_id, conversation_id) = first.as_ref().map_or_else(
        || ("unknown-run".to_owned(), "unknown-conversation".to_owned()),
        |e| (e.run_id.to_string(), e.conversation_id.to_string()),
    );
    let agent_id = agent_id
        .or_else(|| {
            file.as_deref()
                .filter(|f| !input::is_stdin(Some(f)))
                .and_then(Path::file_stem)
                .map(|s| s.to_string_lossy().into_owned())
        })
        .or_else(|| match first.as_ref().map(|e| &e.payload) {
            Some(Payload::RunStarted(s)) => Some(s.harness_id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "unknown-agent".to_owned());

    let io_error: std::rc::Rc<std::cell::RefCell<Option<std::io::Error>>> = Default::default();
    let items = {
        let io_error = io_error.clone();
        futures::stream::iter(lines.map(move |item| match item {
            Ok(Ok(e)) => Ok(e),
            Ok(Err(e)) => Err(LceError::Parse(e)),
            Err(e) => {
                let err = LceError::Io(std::io::Error::new(e.kind(), "read error"));
                io_error.borrow_mut().get_or_insert(e);
                Err(err)
            }
        }))
    };
    let audit = Arc::new(MemoryAudit::new());
    let coordinator = Coordinator::new(CoordinatorOptions::new(run_id, conversation_id.clone()))
        .audit(audit.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| UsageError(format!("cannot start the runtime: {e}")))?;
    // Input read in place is always ready: never a live release (D13a).
    let acc = runtime.block_on(lce::gateway::accumulate(
        lce::stream::source(items).enforced(coordinator),
        false,
    ));
    if let Some(e) = io_error.borrow_mut().take() {
        return Err(UsageError(format!("{name}: read error: {e}")));
    }
    if let Some(record) = audit.records().into_iter().next() {
        if record.coordinator_terminal || record.rule.is_some() {
            let reason = record.reason.unwrap_or_else(|| {
                format!(
                    "the coordinator ended the run with {}",
                    record.code.unwrap_or_default()
                )
            });
            eprintln!("{name}: {reason}");
        }
    }
    if acc.truncated_bytes() > 0 {
        eprintln!(
            "{name}: {} bytes of text cut by the invoke bound",
            acc.truncated_bytes()
        );
    }

    let response = acc.response(&InvokeIds {
        agent_id: &agent_id,
        conversation_id: &conversation_id,
        trace_id: trace_id.as_deref(),
    });
    let mut out = std::io::stdout().lock();
    out.write_all(&response.body)
        .and_then(|()| out.flush())
        .map_err(|e| UsageError(format!("cannot write to stdout: {e}")))?;
    eprintln!("status {}", response.status);
    if let Some(secs) = response.retry_after_seconds {
        eprintln!("retry-after {secs}");
    }
    Ok(response.status == 200)
}
