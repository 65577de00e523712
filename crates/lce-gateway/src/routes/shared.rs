//! What the routes share: a run's start (upstream → coordinator → log,
//! owned by this replica), the answer that reads it back from the log, and
//! the mapping of failures to [`ApiError`]s.

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use lce_core::WireFormat;
use lce_runlog::{FrameId, LogWriter, SubscribeError};
use lce_stream::{CancelHandle, WireEncoder};
use lce_types::CancelReason;

use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::owner::spawn_owner;
use crate::sse::{KeepAlive, sse_response};
use crate::upstream::{EventStream, RunRequest};

/// A JSON request body, read whole up to the gateway's
/// `max_request_bytes` (a larger one is [`ApiError::BodyTooLarge`] before
/// anything is parsed) with no gap over `body_idle_timeout`
/// ([`ApiError::BodyTimeout`]).
pub(super) struct JsonBody(pub(super) Bytes);

impl axum::extract::FromRequest<Gateway> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, gw: &Gateway) -> Result<Self, ApiError> {
        let settings = &gw.shared.settings;
        crate::body::read_json(
            req.into_body(),
            settings.max_request_bytes,
            settings.body_idle_timeout,
        )
        .await
        .map(JsonBody)
    }
}

/// The wire format a request names (`custom` when it names none).
pub(super) fn protocol(name: Option<&str>) -> Result<WireFormat, ApiError> {
    WireFormat::from_name(name.unwrap_or("custom")).ok_or(ApiError::UnknownProtocol)
}

/// A fresh run id, or a 503 when the OS has no randomness.
pub(super) fn new_run_id() -> Result<String, ApiError> {
    crate::tokens::random_id().map_err(|_| ApiError::NoRandomness)
}

/// Answers a handler's result: the response, or the error's.
pub(super) fn answer(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(ApiError::into_response)
}

impl Gateway {
    /// Starts the run `request` asks the upstream for (logged, owned by
    /// this replica) and answers with its SSE read back from the log. An
    /// upstream that gives no run gets the client a 4xx/502 before any
    /// stream.
    pub(crate) async fn start_run(
        &self,
        request: RunRequest,
        format: WireFormat,
        origin: crate::gateway::Origin,
    ) -> Result<Response, ApiError> {
        let (run_id, conversation_id) = (request.run_id.clone(), request.conversation_id.clone());
        let slot = self.admit()?;
        // The run id is reserved before the upstream is called: a taken id
        // is a 409 and the harness never does the work.
        let (writer, token) = self.create(&run_id, &conversation_id).await?;
        let reservation = Reservation(Some(writer));
        let events = self.open_reserved(&reservation, request).await?;
        let writer = reservation.keep().ok_or(ApiError::Internal)?;
        let cancel = self.register(&run_id, slot, origin);
        let run = self.enforced(events, &run_id, &conversation_id, cancel.clone());
        spawn_owner(self.clone(), writer, run);
        let ids = self.shared.settings.sse_ids;
        self.subscribe(&run_id, &token, format, None, ids, Some(cancel))
            .await
            .map_err(|e| subscribe_error(&e))
    }

    /// [`Gateway::open_upstream`] for a run whose log is reserved, its
    /// lease renewed while the upstream takes its time to answer (so that
    /// no replica takes the run for an orphan meanwhile).
    async fn open_reserved(
        &self,
        reservation: &Reservation,
        request: RunRequest,
    ) -> Result<EventStream, ApiError> {
        let lease = self.shared.settings.lease;
        let mut open = std::pin::pin!(self.open_upstream(request));
        let mut renew = tokio::time::interval(lease / 3);
        renew.tick().await;
        loop {
            tokio::select! {
                opened = &mut open => return opened,
                _ = renew.tick() => {
                    if let Some(writer) = &reservation.0 {
                        let _ = writer.renew(lease).await;
                    }
                }
            }
        }
    }

    /// The run `request` asks the upstream for, or the answer for an
    /// upstream that gives none (its kind logged, never its words).
    pub(super) async fn open_upstream(&self, request: RunRequest) -> Result<EventStream, ApiError> {
        let opened = self.shared.upstream.open(request).await.map_err(|e| {
            tracing::warn!(target: "lce::upstream", error = %e, "no run from the upstream");
            ApiError::from(&e)
        });
        crate::metrics::upstream_request(match &opened {
            Ok(_) => "ok",
            Err(ApiError::Upstream(crate::error::UpstreamErrorKind::UnknownAgent)) => {
                "unknown_agent"
            }
            Err(ApiError::Upstream(crate::error::UpstreamErrorKind::NothingToResume)) => {
                "nothing_to_resume"
            }
            Err(_) => "unavailable",
        });
        opened
    }

    /// An SSE answer that reads `run_id` from the log, encoded in `format`,
    /// with `token` in its `X-Run-Token`. `cancel`: the run's handle,
    /// cancelled if the client leaves early with `cancel_on_disconnect`.
    pub(crate) async fn subscribe(
        &self,
        run_id: &str,
        token: &str,
        format: WireFormat,
        after: Option<FrameId>,
        ids: bool,
        cancel: Option<CancelHandle>,
    ) -> Result<Response, SubscribeError> {
        let settings = &self.shared.settings;
        // One shared reader per run, protocol and agent name (what the
        // bytes depend on) on this replica.
        let agent = settings.agent_name.clone();
        let key = (format, agent.clone());
        let encoder = move || WireEncoder::new(format, agent.clone());
        let frames = self
            .shared
            .fanout
            .open(run_id, key, ids, encoder, after)
            .await?;
        let mut guard = CancelOnDrop(cancel.filter(|_| settings.cancel_on_disconnect));
        let subscriber = SubscriberOpen::new();
        // A zero interval means none (it would send comments without end).
        let keepalive = (format == WireFormat::AguiV1 && !settings.keepalive.is_zero())
            .then_some(settings.keepalive);
        let body = KeepAlive::new(frames, keepalive);
        let run = run_id.to_owned();
        let body = body
            .map(move |r| {
                r.map_err(|e| {
                    if matches!(e, SubscribeError::Log(lce_runlog::LogError::NotFound)) {
                        // A reader slower than the retention: the run's
                        // log expired under it (not a failure of the log).
                        tracing::warn!(target: "lce::gateway", run_id = %run, "the run's log expired before this reader reached its end");
                    } else {
                        tracing::error!(target: "lce::gateway", run_id = %run, error = %e, "the run could not be read");
                    }
                    std::io::Error::other("run log error")
                })
            })
            .chain(futures::stream::once(async move {
                // The run reached its terminal: the client did not leave early.
                guard.disarm();
                drop(subscriber);
                Ok::<Bytes, std::io::Error>(Bytes::new())
            }));
        Ok(sse_response(Body::from_stream(body), format, run_id, token))
    }
}

/// The answer for a subscription that could not start.
pub(super) fn subscribe_error(e: &SubscribeError) -> ApiError {
    match e {
        SubscribeError::NotFound => ApiError::UnknownRun,
        SubscribeError::MalformedId => ApiError::BadLastEventId,
        SubscribeError::UnknownId => ApiError::UnknownLastEventId,
        _ => ApiError::LogUnavailable,
    }
}

/// A run id reserved in the log (its empty log created) while the
/// upstream is asked for the run: abandoned when dropped without
/// [`Reservation::keep`] (the upstream gave no run, or the client went
/// away first), so the id is free again and no empty run is left for the
/// sweeper to end.
struct Reservation(Option<LogWriter>);

impl Reservation {
    /// The upstream gave the run: the writer that logs it (`Some`: only
    /// `keep`, which takes the reservation, and `drop` take it).
    fn keep(mut self) -> Option<LogWriter> {
        self.0.take()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let Some(writer) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let run_id = writer.run_id().to_owned();
            match writer.abandon().await {
                Ok(true) => tracing::debug!(target: "lce::gateway", run_id, "reserved run id given back"),
                // Logged by kind; the lease ends it as an orphan instead.
                Ok(false) | Err(_) => tracing::warn!(target: "lce::gateway", run_id, "a reserved run id was not given back"),
            }
        });
    }
}

/// One open subscriber, counted in `lce_subscribers_open` until dropped
/// (its stream ended or its client went away).
struct SubscriberOpen;

impl SubscriberOpen {
    fn new() -> Self {
        crate::metrics::subscribers_open(1.0);
        SubscriberOpen
    }
}

impl Drop for SubscriberOpen {
    fn drop(&mut self) {
        crate::metrics::subscribers_open(-1.0);
    }
}

/// Cancels a run when its subscriber goes away before the end
/// (`cancel_on_disconnect`).
struct CancelOnDrop(Option<CancelHandle>);

impl CancelOnDrop {
    /// The subscriber reached the end: nothing to cancel.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            handle.cancel(CancelReason::Disconnect);
        }
    }
}
