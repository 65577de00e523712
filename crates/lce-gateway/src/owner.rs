//! The owner of a run: the task that drives a run's chain into the log on
//! the replica that started it, renews its lease, watches for a cancel
//! asked on another replica, and on shutdown releases the run (durable
//! log) or lets the coordinator end it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::future::FusedFuture as _;
use lce_runlog::{LogError, LogWriter, Refusal, RunLogStreamExt, WriteError};
use lce_stream::{Enforced, LifecycleStream};
use lce_types::EventType;

use crate::gateway::Gateway;

/// How often an owner asks the log whether its run was cancelled, on a
/// log that does not announce cancels (the cancel route may run on
/// another replica; one on this replica reaches the run at once). A log
/// that announces them (Redis) is waited on instead
/// (`RunLog::cancel_notice`), and every lease renewal answers the flag
/// too.
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// How the owner's work on a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The run reached its terminal in the log.
    Ended,
    /// This replica released the run at shutdown (another one ends it).
    Released,
    /// Another replica took the run over (sealed or claimed it).
    Lost,
    /// The log failed an append.
    LogFailed,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ended => "ended",
            Outcome::Released => "released",
            Outcome::Lost => "lost",
            Outcome::LogFailed => "log_failed",
        }
    }
}

/// What the owner learnt when its run ended.
#[derive(Debug, Clone)]
pub(crate) struct RunSummary {
    pub(crate) terminal: Option<EventType>,
    pub(crate) events_in: u64,
    pub(crate) dropped: u64,
    /// The rule the coordinator intervened for, and where.
    pub(crate) violation: Option<(String, u64)>,
    pub(crate) outcome: Outcome,
}

/// Drives `run` into the log through `writer` in a task of its own,
/// renewing the lease; the task unregisters the run when it is done.
pub(crate) fn spawn_owner<S>(
    gateway: Gateway,
    writer: LogWriter,
    run: Enforced<S>,
) -> tokio::task::JoinHandle<RunSummary>
where
    S: LifecycleStream + Send + 'static,
{
    tokio::spawn(async move {
        let run_id = writer.run_id().to_owned();
        let renewer = writer.clone();
        let mut logged = std::pin::pin!(run.logged(writer));
        let (outcome, terminal) = drive(&gateway, &renewer, logged.as_mut()).await;
        gateway.unregister(&run_id);
        let coordinated = logged.get_ref();
        let counters = coordinated.counters();
        let violation = coordinated.intervention().and_then(|i| {
            let rule = i.cause?.rule()?;
            Some((rule.id().to_owned(), i.position))
        });
        RunSummary {
            terminal,
            events_in: counters.events_in,
            dropped: counters.dropped,
            violation,
            outcome,
        }
    })
}

/// The owner's loop: the run into the log, the lease, releases and cancels.
async fn drive<S>(
    gateway: &Gateway,
    renewer: &LogWriter,
    mut logged: std::pin::Pin<&mut lce_runlog::Logged<Enforced<S>>>,
) -> (Outcome, Option<EventType>)
where
    S: LifecycleStream + Send + 'static,
{
    let shared = &gateway.shared;
    let lease = shared.settings.lease;
    let mut renew = tokio::time::interval(lease / 3);
    renew.tick().await;
    let mut cancel_poll = tokio::time::interval(CANCEL_POLL);
    let mut cancel_notice = shared.log.cancel_notice(renewer.run_id());
    let polls = cancel_notice.is_none();
    let mut renewing = true;
    let mut cancel_seen = false;
    loop {
        if shared.durable && shared.releasing.load(Ordering::SeqCst) {
            let _ = renewer.release().await;
            return (Outcome::Released, logged.written().terminal);
        }
        tokio::select! {
            written = logged.as_mut(), if !logged.is_terminated() => {
                return match written {
                    Ok(written) => (Outcome::Ended, written.terminal),
                    Err(e) => {
                        // Names a kind and a cause, never a payload.
                        tracing::warn!(target: "lce::gateway", run_id = renewer.run_id(), error = %e, "the run could not be logged");
                        let outcome = match e {
                            WriteError::Log(LogError::Refused {
                                refusal: Refusal::NotOwner | Refusal::Sealed,
                                ..
                            }) => Outcome::Lost,
                            _ => Outcome::LogFailed,
                        };
                        (outcome, logged.written().terminal)
                    }
                };
            },
            _ = renew.tick(), if renewing => {
                let renewal = renewer.renew_and_check(lease).await;
                if !cancel_seen && renewal.as_ref().is_ok_and(|r| r.cancel_requested) {
                    cancel_seen = true;
                    gateway.cancel_after_grace(renewer.run_id());
                }
                if !renewal.map_or(true, |r| r.held) {
                    renewing = false;
                    // Sealed by this run's own terminal (being
                    // acknowledged): drive on to it. Otherwise another
                    // replica took the run over.
                    if !logged.upstream_ended() {
                        tracing::warn!(target: "lce::gateway", run_id = renewer.run_id(), "lost the run's lease; another replica ended it");
                        return (Outcome::Lost, logged.written().terminal);
                    }
                }
            }
            () = shared.release.notified(), if shared.durable => {}
            heard = async {
                match cancel_notice.as_mut() {
                    Some(notice) => notice.await,
                    None => std::future::pending().await,
                }
            }, if !cancel_seen && !polls => {
                if heard.is_ok() {
                    cancel_seen = true;
                    gateway.cancel_after_grace(renewer.run_id());
                } else {
                    // The renewals still answer the flag.
                    cancel_notice = None;
                }
            }
            _ = cancel_poll.tick(), if !cancel_seen && polls => {
                if shared.log.cancel_requested(renewer.run_id()).await.unwrap_or(false) {
                    cancel_seen = true;
                    gateway.cancel_after_grace(renewer.run_id());
                }
            }
        }
    }
}
