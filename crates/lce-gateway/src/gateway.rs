//! [`Gateway`]: the state every route shares, the runs this replica owns,
//! and what ends them (cancel, shutdown, the sweeper of orphaned runs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use lce_core::{AuditSink, ThreadStore};
use lce_runlog::{LogError, LogWriter, RunInfo, RunLog, Takeover};
use lce_stream::{
    CancelHandle, Coordinator, CoordinatorOptions, Enforced, LceError, LifecycleStreamExt, Source,
};
use lce_types::{CancelReason, Event, Limits};

use crate::error::ApiError;
use crate::tokens::ReadTokens;
use crate::upstream::{Forwarded, Upstream};

/// How long an owner lets the upstream end a cancelled run with its own
/// terminal before the coordinator ends it (`run.cancelled{client_request}`).
pub(crate) const UPSTREAM_CANCEL_GRACE: Duration = Duration::from_secs(1);

/// How long a run may go on when no deadline is given: an hour.
pub const DEFAULT_RUN_DEADLINE: Duration = Duration::from_secs(3600);

/// The options of a gateway that need no checking (see [`GatewayBuilder`](crate::GatewayBuilder)).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) agent_name: Option<String>,
    pub(crate) default_agent: Option<String>,
    pub(crate) limits: Limits,
    pub(crate) lease: Duration,
    pub(crate) retention: Duration,
    pub(crate) sse_ids: bool,
    pub(crate) cancel_on_disconnect: bool,
    pub(crate) keepalive: Duration,
    pub(crate) max_runs: usize,
    pub(crate) max_request_bytes: usize,
    /// `None`: runs have no deadline.
    pub(crate) run_deadline: Option<Duration>,
    /// `None`: CORS is off.
    pub(crate) cors: Option<Cors>,
    /// What `GET /metrics` answers (`None`: no such route).
    pub(crate) metrics: Option<crate::metrics::MetricsRender>,
    pub(crate) body_idle_timeout: Duration,
    pub(crate) ingest_idle_timeout: Duration,
    /// The inspector (`GET /inspect`): off, loopback only, or behind a token.
    pub(crate) inspector: InspectorGate,
}

/// Whether the inspector is on, and who may use it.
#[derive(Clone, Default)]
pub(crate) enum InspectorGate {
    /// No `/inspect` routes (404), no index.
    #[default]
    Off,
    /// Loopback peers only.
    Loopback,
    /// Any peer with `Authorization: Bearer` this token.
    Token(String),
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("agent_name", &self.agent_name)
            .field("default_agent", &self.default_agent)
            .field("lease", &self.lease)
            .field("retention", &self.retention)
            .field("max_runs", &self.max_runs)
            .field("run_deadline", &self.run_deadline)
            .field("cors", &self.cors)
            .field("metrics", &self.metrics.is_some())
            .field("inspector", &!matches!(self.inspector, InspectorGate::Off))
            .finish_non_exhaustive()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            agent_name: None,
            default_agent: None,
            limits: Limits::default(),
            lease: Duration::from_secs(10),
            retention: lce_runlog::DEFAULT_RETENTION,
            sse_ids: false,
            cancel_on_disconnect: false,
            keepalive: Duration::from_secs(15),
            max_runs: 10_000,
            max_request_bytes: 1024 * 1024,
            run_deadline: Some(DEFAULT_RUN_DEADLINE),
            cors: None,
            metrics: None,
            body_idle_timeout: Duration::from_secs(30),
            ingest_idle_timeout: Duration::from_secs(300),
            inspector: InspectorGate::Off,
        }
    }
}

/// The origins a browser page may call the gateway from.
#[derive(Debug, Clone)]
pub(crate) enum Cors {
    /// Any origin (`*`).
    Any,
    /// These origins, exactly.
    List(Vec<axum::http::HeaderValue>),
}

/// Who may push runs.
#[derive(Debug)]
pub(crate) enum Ingest {
    Off,
    Anonymous,
    Bearer(String),
}

/// lce's gateway: durable, resumable runs behind DA's and AG-UI's routes
/// (`gateway.md`). Built by [`GatewayBuilder`](crate::GatewayBuilder);
/// cheap to clone (every clone is the same gateway).
///
/// [`Gateway::router`] (defined with the routes) gives its routes to nest
/// in a host's own server;
/// [`Gateway::shutdown`] ends (memory log) or releases (a durable log) the
/// runs it owns.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("replica", &self.shared.replica)
            .field("durable", &self.shared.durable)
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// What every clone of a gateway shares.
pub(crate) struct Shared {
    pub(crate) log: Arc<dyn RunLog>,
    /// One shared reader per run and protocol read on this replica
    /// (guarantee 8).
    pub(crate) fanout: lce_runlog::Fanout<(lce_core::WireFormat, Option<String>)>,
    pub(crate) store: Arc<dyn ThreadStore>,
    pub(crate) upstream: Arc<dyn Upstream>,
    pub(crate) audit: Arc<dyn AuditSink>,
    /// The inspector's index, while it is on.
    pub(crate) inspector: Option<Arc<crate::inspect::Inspector>>,
    pub(crate) tokens: ReadTokens,
    pub(crate) ingest: Ingest,
    /// This replica's id (random per gateway).
    pub(crate) replica: String,
    pub(crate) settings: Settings,
    /// The log outlives this process: on shutdown, release runs instead of
    /// ending them.
    pub(crate) durable: bool,
    pub(crate) releasing: AtomicBool,
    pub(crate) release: tokio::sync::Notify,
    /// The runs this replica drives, by run id.
    running: Mutex<HashMap<String, Driven>>,
    /// Runs admitted and not yet ended (the `max_runs` bound).
    admitted: AtomicUsize,
    /// Requests refused, by error code.
    refusals: Mutex<std::collections::BTreeMap<&'static str, u64>>,
    shutting_down: AtomicBool,
    /// `/readyz` answers `draining` (`Gateway::drain`).
    draining: AtomicBool,
    sweeper: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Gateway {
    /// The gateway the builder checked; starts the sweeper.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        log: Arc<dyn RunLog>,
        store: Arc<dyn ThreadStore>,
        upstream: Arc<dyn Upstream>,
        audit: Arc<dyn AuditSink>,
        tokens: ReadTokens,
        ingest: Ingest,
        replica: String,
        settings: Settings,
    ) -> Gateway {
        let durable = log.durable();
        let fanout = lce_runlog::Fanout::new(log.clone()).take_over(Takeover {
            claimant: replica.clone(),
            lease: settings.lease,
        });
        crate::metrics::build_info();
        let audit: Arc<dyn AuditSink> = Arc::new(crate::metrics::CountingAudit(audit));
        let inspector = match &settings.inspector {
            InspectorGate::Off => None,
            InspectorGate::Loopback => Some(Arc::new(crate::inspect::Inspector::new(None))),
            InspectorGate::Token(t) => {
                Some(Arc::new(crate::inspect::Inspector::new(Some(t.clone()))))
            }
        };
        let audit: Arc<dyn AuditSink> = match &inspector {
            Some(inspector) => Arc::new(crate::inspect::InspectAudit {
                inner: audit,
                inspector: inspector.clone(),
            }),
            None => audit,
        };
        let gateway = Gateway {
            shared: Arc::new(Shared {
                log,
                fanout,
                store,
                upstream,
                audit,
                inspector,
                tokens,
                ingest,
                replica,
                settings,
                durable,
                releasing: AtomicBool::new(false),
                release: tokio::sync::Notify::new(),
                running: Mutex::new(HashMap::new()),
                admitted: AtomicUsize::new(0),
                refusals: Mutex::new(std::collections::BTreeMap::new()),
                shutting_down: AtomicBool::new(false),
                draining: AtomicBool::new(false),
                sweeper: Mutex::new(None),
            }),
        };
        let sweeper = tokio::spawn(sweep(Arc::downgrade(&gateway.shared)));
        if let Ok(mut slot) = gateway.shared.sweeper.lock() {
            *slot = Some(sweeper.abort_handle());
        }
        gateway
    }

    /// This replica's id (it owns the runs it starts under this id).
    pub fn replica_id(&self) -> &str {
        &self.shared.replica
    }

    /// The read token of the run `run_id` names now (its current
    /// incarnation, whose log keeps the nonce the token covers), for a host
    /// that hands tokens out itself: what the start answers carry in
    /// `X-Run-Token`. `None` when the run has no log.
    pub async fn read_token(&self, run_id: &str) -> Result<Option<String>, LogError> {
        let info = self.shared.log.info(run_id).await?;
        Ok(info.map(|info| self.shared.tokens.token(run_id, &info.nonce)))
    }

    /// The run log.
    pub fn log(&self) -> &Arc<dyn RunLog> {
        &self.shared.log
    }

    /// How many requests this gateway's routes refused since it was
    /// built, by error code (`invalid_id`, `overloaded`, `body_too_large`,
    /// ...: the codes of `docs/gateway.md`'s error table). What a metrics
    /// exporter counts; no label holds an id.
    pub fn refusals(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.shared
            .refusals
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Counts one refusal with `code`.
    pub(crate) fn count_refusal(&self, code: &'static str) {
        crate::metrics::refusal(code);
        if let Ok(mut refusals) = self.shared.refusals.lock() {
            *refusals.entry(code).or_default() += 1;
        }
    }

    /// Marks the gateway as draining: `GET /readyz` answers `503
    /// {"status": "not_ready", "reason": "draining"}` from now on, so that
    /// a load balancer stops sending it new clients, while every route
    /// still serves (`lce serve` calls it on SIGTERM, `--drain-delay`
    /// before it stops accepting).
    pub fn drain(&self) {
        self.shared.draining.store(true, Ordering::SeqCst);
    }

    /// Whether [`Gateway::drain`] was called.
    pub fn draining(&self) -> bool {
        self.shared.draining.load(Ordering::SeqCst)
    }

    /// How many runs this gateway is driving now.
    pub fn running(&self) -> usize {
        self.shared.running.lock().map_or(0, |r| r.len())
    }

    /// Ends or releases every run this gateway drives, at once, without
    /// waiting: with a durable log every run releases its lease (another
    /// replica ends it, and its subscribers reconnect elsewhere); with the
    /// memory log each ends as `run.cancelled{shutdown}` (D11). Runs
    /// started afterwards are ended (or released) as they start.
    pub fn stop_runs(&self) {
        let shared = &self.shared;
        shared.shutting_down.store(true, Ordering::SeqCst);
        shared.draining.store(true, Ordering::SeqCst);
        if shared.durable {
            shared.releasing.store(true, Ordering::SeqCst);
            shared.release.notify_waiters();
        } else if let Ok(running) = shared.running.lock() {
            for driven in running.values() {
                driven.handle.cancel(CancelReason::Shutdown);
            }
        }
    }

    /// Shuts the gateway down as SIGTERM does `lce serve` past its grace:
    /// [`stop_runs`](Gateway::stop_runs), then waits (at most
    /// [`DRAIN`](crate::server::DRAIN)) until it drives no run, their
    /// terminals logged and audited, and stops the sweeper. The router
    /// still answers; a host stops serving it first.
    pub async fn shutdown(&self) {
        self.stop_runs();
        self.wait_for_runs(crate::server::DRAIN).await;
        if let Some(sweeper) = self.shared.sweeper.lock().ok().and_then(|mut s| s.take()) {
            sweeper.abort();
        }
    }

    /// Waits, at most `bound`, until this gateway drives no run.
    pub async fn wait_for_runs(&self, bound: Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        while self.running() > 0 {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(target: "lce::gateway", running = self.running(), "runs still going at shutdown");
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A place for one more run on this replica, or
    /// [`ApiError::Overloaded`] when `max_runs` are open: taken before the
    /// upstream is called or anything is written, given back when the
    /// [`Slot`] is dropped (the run ended, or never started).
    pub(crate) fn admit(&self) -> Result<Slot, ApiError> {
        let max = self.shared.settings.max_runs;
        self.shared
            .admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| {
                crate::metrics::runs_open(1.0);
                Slot(self.shared.clone())
            })
            .map_err(|open| {
                tracing::warn!(target: "lce::gateway", open, max, "overloaded: run refused");
                ApiError::Overloaded
            })
    }

    /// A fresh cancel handle for a run this replica drives, registered
    /// (with its `slot`) so that shutdown and a cancel reach it, and its
    /// deadline armed: past `run_deadline` the run is cancelled
    /// (`run.cancelled{deadline}`) and, when `origin` is the upstream, the
    /// upstream's cancel is called.
    pub(crate) fn register(&self, run_id: &str, slot: Slot, origin: Origin) -> CancelHandle {
        crate::metrics::run_started(origin.route());
        let handle = CancelHandle::new();
        let deadline = self
            .shared
            .settings
            .run_deadline
            .map(|after| self.arm_deadline(run_id, after, &handle, origin));
        let driven = Driven {
            handle: handle.clone(),
            _slot: slot,
            deadline,
        };
        if let Ok(mut running) = self.shared.running.lock() {
            running.insert(run_id.to_owned(), driven);
        }
        if self.shared.shutting_down.load(Ordering::SeqCst) && !self.shared.durable {
            handle.cancel(CancelReason::Shutdown);
        }
        handle
    }

    /// The task that ends `run_id` at its deadline (aborted when the run
    /// ends first).
    fn arm_deadline(
        &self,
        run_id: &str,
        after: Duration,
        handle: &CancelHandle,
        origin: Origin,
    ) -> tokio::task::AbortHandle {
        let (gateway, handle) = (Arc::downgrade(&self.shared), handle.clone());
        let run_id = run_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            tracing::warn!(target: "lce::gateway", run_id, deadline_secs = after.as_secs_f64(), "the run's deadline passed: cancelled");
            handle.cancel(CancelReason::Deadline);
            if origin.given_by_upstream()
                && let Some(shared) = gateway.upgrade()
            {
                let accepted = shared.upstream.cancel(&run_id, &Forwarded::default()).await;
                tracing::info!(target: "lce::gateway", run_id, accepted, "upstream cancel at the deadline");
            }
        })
        .abort_handle()
    }

    /// The run ended (or was released).
    pub(crate) fn unregister(&self, run_id: &str) {
        let driven = self
            .shared
            .running
            .lock()
            .ok()
            .and_then(|mut running| running.remove(run_id));
        if let Some(deadline) = driven.and_then(|d| d.deadline) {
            deadline.abort();
        }
    }

    /// Cancels `run_id` (`client_request`) after [`UPSTREAM_CANCEL_GRACE`]
    /// if this replica drives it (unless it has ended by then); `false`
    /// when it does not.
    pub(crate) fn cancel_after_grace(&self, run_id: &str) -> bool {
        let handle = self
            .shared
            .running
            .lock()
            .ok()
            .and_then(|r| r.get(run_id).map(|driven| driven.handle.clone()));
        let Some(handle) = handle else {
            return false;
        };
        tokio::spawn(async move {
            tokio::time::sleep(UPSTREAM_CANCEL_GRACE).await;
            handle.cancel(CancelReason::ClientRequest);
        });
        true
    }

    /// Creates `run_id`'s log, owned by this replica, with a fresh nonce:
    /// its writer and its read token.
    pub(crate) async fn create(
        &self,
        run_id: &str,
        conversation_id: &str,
    ) -> Result<(LogWriter, String), ApiError> {
        let nonce = crate::tokens::random_id().map_err(|_| ApiError::NoRandomness)?;
        let token = self.shared.tokens.token(run_id, &nonce);
        let info = RunInfo {
            run_id: run_id.to_owned(),
            conversation_id: conversation_id.to_owned(),
            owner: self.shared.replica.clone(),
            nonce,
        };
        let writer = LogWriter::create(self.shared.log.clone(), info, self.shared.settings.lease)
            .await
            .map_err(crate::error::log_error)?;
        Ok((writer, token))
    }

    /// The chain lce builds for a run this replica drives:
    /// `source.enforced(coordinator)`, with the thread store, the audit,
    /// the limits and `cancel`.
    pub(crate) fn enforced<S>(
        &self,
        source: S,
        run_id: &str,
        conversation_id: &str,
        cancel: CancelHandle,
    ) -> Enforced<Source<S>>
    where
        S: futures::Stream<Item = Result<Event, LceError>> + Send + 'static,
    {
        if let Some(inspector) = &self.shared.inspector {
            inspector.begin(run_id, conversation_id);
        }
        let options = CoordinatorOptions::new(run_id, conversation_id)
            .limits(self.shared.settings.limits.clone());
        let coordinator = Coordinator::new(options)
            .store(self.shared.store.clone())
            .audit(self.shared.audit.clone())
            .cancel_handle(cancel);
        lce_stream::source(source).enforced(coordinator)
    }

    /// `POST /api/v1/chat/stream/cancel` on any replica: finds the
    /// conversation's running run, asks the upstream to cancel it, and once
    /// the upstream accepts, records the request for the run's owner (which
    /// ends it with `run.cancelled{client_request}` unless the upstream's
    /// own terminal comes first). A run this replica drives is cancelled
    /// here at once, without waiting for the owner's next look at the log.
    /// `Ok(true)` once the upstream accepted, even when its own terminal
    /// sealed the run before the request was recorded. `Ok(false)`:
    /// nothing runs, or the upstream refused.
    pub(crate) async fn cancel_conversation(
        &self,
        conversation_id: &str,
        forwarded: &Forwarded,
    ) -> Result<bool, LogError> {
        let log = &self.shared.log;
        let Some(run_id) = log.running_run(conversation_id).await? else {
            return Ok(false);
        };
        if !self.shared.upstream.cancel(&run_id, forwarded).await {
            return Ok(false);
        }
        match log.request_cancel(&run_id).await {
            // `false`: the run is sealed already, as when the harness
            // answered the cancel with its own terminal before this line:
            // the cancel was delivered all the same.
            Ok(true | false) => {}
            Err(LogError::NotFound) => return Ok(false),
            Err(e) => return Err(e),
        }
        let local = self.cancel_after_grace(&run_id);
        tracing::info!(target: "lce::gateway", run_id, local, "cancel requested");
        Ok(true)
    }
}

pub(crate) fn takeover(shared: &Shared) -> Takeover {
    Takeover {
        claimant: shared.replica.clone(),
        lease: shared.settings.lease,
    }
}

/// Ends orphaned runs every half lease, for runs nobody is reading; stops
/// when the gateway is gone.
async fn sweep(shared: Weak<Shared>) {
    let lease = match shared.upgrade() {
        Some(s) => s.settings.lease,
        None => return,
    };
    let mut every = tokio::time::interval(lease / 2);
    loop {
        every.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Ok(orphans) = shared.log.orphans().await else {
            continue;
        };
        let takeover = takeover(&shared);
        for run_id in orphans {
            let _ = lce_runlog::end_orphan(&shared.log, &run_id, &takeover).await;
        }
    }
}

/// Where a run this replica drives comes from: the route that started it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// DA's start.
    Start,
    /// DA's resume.
    Resume,
    /// Standard AG-UI's `POST /api/v1/agui`.
    Agui,
    /// DA's non-streaming invoke.
    Invoke,
    /// A harness pushed it (`POST /api/v1/runs`).
    Push,
}

impl Origin {
    /// The `route` label of `lce_runs_started_total`.
    pub(crate) fn route(self) -> &'static str {
        match self {
            Origin::Start => "start",
            Origin::Resume => "resume",
            Origin::Agui => "agui",
            Origin::Invoke => "invoke",
            Origin::Push => "push",
        }
    }

    /// The upstream gave the run: it is told when the run is cancelled at
    /// its deadline.
    pub(crate) fn given_by_upstream(self) -> bool {
        self != Origin::Push
    }
}

/// A run this replica drives: its cancel handle, its place among the
/// admitted runs, and its deadline's task.
struct Driven {
    handle: CancelHandle,
    _slot: Slot,
    deadline: Option<tokio::task::AbortHandle>,
}

/// One admitted run's place (see [`Gateway::admit`]); given back on drop.
pub(crate) struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        crate::metrics::runs_open(-1.0);
        self.0.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}
