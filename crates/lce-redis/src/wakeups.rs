//! Wake-ups for reads that wait for a run's next entries: one pub/sub
//! connection per log handle, not one blocking read per subscriber.
//!
//! On one server (or Sentinel's primary), every append's transaction ends
//! with `PUBLISH <prefix>:appended <run_id>`; each
//! [`RedisRunLog`](crate::RedisRunLog) keeps one connection subscribed to
//! that channel and wakes the local reads that wait on that run; a notice
//! for a run nobody here waits on costs a map lookup.
//!
//! On a Cluster, a global channel would be broadcast to every node for
//! every append, so wake-ups are sharded: the append publishes with
//! `SPUBLISH <prefix>:{<run_id>}:appended <run_id>` on the run's own slot,
//! and a handle subscribes (`SSUBSCRIBE`) to the channels of the runs its
//! reads wait on only, from the first such read to the last. Until the
//! engine has confirmed a run's subscription, its reads look again every
//! [`POLL_PAUSE`], and the confirmation wakes them, so an append that
//! landed between a read's look and the subscription is not missed.
//!
//! A read registers before it looks at the log, so an append that lands
//! after the look publishes after the registration and wakes it. Pub/sub
//! delivers at most once: while the subscription is down (the engine
//! restarted, the connection dropped, a failover), waits fall back to
//! looking again every [`POLL_PAUSE`], and every waiting read is woken when
//! it is back, in case a notice was lost in between.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use redis::{PushInfo, PushKind, Value};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::engine::text;
use crate::topology::{Source, Topology};

/// How often a waiting read looks again while the subscription is down.
const POLL_PAUSE: Duration = Duration::from_millis(250);

/// The longest pause between two tries to subscribe again.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// The runs some local read waits on, and whether the subscription is live.
pub(crate) struct Wakeups {
    /// Per run: the counter its notices bump, how many reads wait, and
    /// whether its notices reach this handle (always, with the global
    /// channel; once the engine confirmed the run's shard channel).
    runs: Mutex<HashMap<String, Run>>,
    live: AtomicBool,
    /// Sharded: where a run's first read asks for its channel and its last
    /// read gives it back.
    shard: Option<mpsc::UnboundedSender<Shard>>,
}

/// One run some local read waits on.
struct Run {
    notices: watch::Sender<u64>,
    /// Bumped by the run's cancel announcements, and whenever a notice
    /// may have been lost (so its owner asks the engine again).
    cancels: watch::Sender<u64>,
    readers: usize,
    heard: bool,
}

/// The payload that announces a cancel request of a run (a run id never
/// starts with `!`).
pub(crate) const CANCEL_NOTICE: &str = "!cancel:";

/// A request to the sharded listener.
enum Shard {
    Subscribe(String),
    Unsubscribe(String),
}

/// The channel a Cluster append publishes `run_id`'s notices on (in the
/// run's slot).
pub(crate) fn shard_channel(prefix: &str, run_id: &str) -> String {
    format!("{prefix}:{{{run_id}}}:appended")
}

impl Wakeups {
    /// Starts the subscription on a connection of its own (a task that
    /// reconnects by itself): to `channel` on one server, to the runs'
    /// shard channels (named after `prefix`) on a Cluster. Abort the
    /// handle to stop it.
    pub(crate) fn start(
        source: Arc<Source>,
        topology: &Topology,
        channel: String,
        prefix: &str,
        timeout: Duration,
    ) -> (Arc<Self>, AbortHandle) {
        let (shard, requests) = match topology {
            Topology::Cluster { .. } => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            _ => (None, None),
        };
        let wakeups = Arc::new(Wakeups {
            runs: Mutex::new(HashMap::new()),
            live: AtomicBool::new(false),
            shard,
        });
        let weak = Arc::downgrade(&wakeups);
        let task = match (topology, requests) {
            (Topology::Cluster { nodes, .. }, Some(requests)) => tokio::spawn(listen_sharded(
                weak,
                nodes.clone(),
                prefix.to_owned(),
                requests,
                timeout,
            )),
            _ => tokio::spawn(listen(weak, source, channel, timeout)),
        };
        (wakeups, task.abort_handle())
    }

    /// Registers a read that is about to look at `run_id`'s log and may
    /// wait: a notice from now on wakes it.
    pub(crate) fn register(self: &Arc<Self>, run_id: &str) -> Waiting {
        let receiver = match self.runs.lock() {
            Ok(mut runs) => {
                let run = runs.entry(run_id.to_owned()).or_insert_with(|| Run {
                    notices: watch::channel(0).0,
                    cancels: watch::channel(0).0,
                    readers: 0,
                    heard: self.shard.is_none(),
                });
                run.readers += 1;
                if run.readers == 1
                    && let Some(shard) = &self.shard
                {
                    let _ = shard.send(Shard::Subscribe(run_id.to_owned()));
                }
                Some((run.notices.subscribe(), run.cancels.subscribe()))
            }
            Err(_) => None,
        };
        let (receiver, cancels) = receiver.unzip();
        Waiting {
            wakeups: Arc::clone(self),
            run_id: run_id.to_owned(),
            receiver,
            cancels,
        }
    }

    /// Wakes the reads waiting on the run a notice names (its id), or
    /// the owner waiting for its cancel (`!cancel:<run id>`).
    fn wake(&self, payload: &[u8]) {
        let Ok(payload) = std::str::from_utf8(payload) else {
            return;
        };
        let (run_id, cancel) = match payload.strip_prefix(CANCEL_NOTICE) {
            Some(run_id) => (run_id, true),
            None => (payload, false),
        };
        if let Ok(runs) = self.runs.lock()
            && let Some(run) = runs.get(run_id)
        {
            let watch = if cancel { &run.cancels } else { &run.notices };
            watch.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Records whether `run_id`'s shard channel is heard, and wakes its
    /// reads (a notice may have been missed before).
    fn heard(&self, run_id: &str, heard: bool) {
        if let Ok(mut runs) = self.runs.lock()
            && let Some(run) = runs.get_mut(run_id)
        {
            run.heard = heard;
            run.notices.send_modify(|n| *n = n.wrapping_add(1));
            run.cancels.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Wakes every waiting read (the subscription came back or went down:
    /// a notice may have been lost).
    fn wake_all(&self) {
        if let Ok(runs) = self.runs.lock() {
            for run in runs.values() {
                run.notices.send_modify(|n| *n = n.wrapping_add(1));
                run.cancels.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// Whether `run_id`'s notices reach this handle now.
    fn hears(&self, run_id: &str) -> bool {
        self.live.load(Ordering::Acquire)
            && self
                .runs
                .lock()
                .is_ok_and(|runs| runs.get(run_id).is_some_and(|run| run.heard))
    }

    /// The runs some read waits on.
    fn waited_on(&self) -> Vec<String> {
        self.runs
            .lock()
            .map(|runs| runs.keys().cloned().collect())
            .unwrap_or_default()
    }
}

/// A read registered with [`Wakeups::register`].
pub(crate) struct Waiting {
    wakeups: Arc<Wakeups>,
    run_id: String,
    /// `None` only if the map's lock was poisoned: the wait then polls.
    receiver: Option<watch::Receiver<u64>>,
    /// The run's cancel announcements (`None` as above).
    cancels: Option<watch::Receiver<u64>>,
}

impl Waiting {
    /// Waits for a notice on the run since the registration (or since the
    /// last wait), or `until`, or [`POLL_PAUSE`] while the subscription is
    /// down.
    pub(crate) async fn wait(&mut self, until: Instant) {
        let until = if self.wakeups.hears(&self.run_id) && self.receiver.is_some() {
            until
        } else {
            until.min(Instant::now() + POLL_PAUSE)
        };
        match &mut self.receiver {
            Some(receiver) => {
                // An error is impossible while registered (the sender lives
                // in the map until the last reader leaves).
                let _ = tokio::time::timeout_at(until, receiver.changed()).await;
            }
            None => tokio::time::sleep_until(until).await,
        }
    }
}

impl Waiting {
    /// Waits for a cancel announcement of the run (or a sign that one may
    /// have been lost: the subscription went down or came back), or
    /// [`CANCEL_POLL`] while the run's notices are not heard.
    pub(crate) async fn wait_cancel(&mut self) {
        let heard = self.wakeups.hears(&self.run_id);
        match &mut self.cancels {
            Some(cancels) if heard => {
                let _ = cancels.changed().await;
            }
            Some(cancels) => {
                let _ = tokio::time::timeout(CANCEL_POLL, cancels.changed()).await;
            }
            None => tokio::time::sleep(CANCEL_POLL).await,
        }
    }
}

/// How often an owner asks the engine for its run's cancel flag while its
/// announcements are not heard.
const CANCEL_POLL: Duration = Duration::from_secs(1);

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Ok(mut runs) = self.wakeups.runs.lock()
            && let Some(run) = runs.get_mut(&self.run_id)
        {
            run.readers -= 1;
            if run.readers == 0 {
                runs.remove(&self.run_id);
                if let Some(shard) = &self.wakeups.shard {
                    let _ = shard.send(Shard::Unsubscribe(self.run_id.clone()));
                }
            }
        }
    }
}

/// The subscription's task: subscribe, forward notices, and on any failure
/// mark it down and subscribe again after a growing pause (behind
/// Sentinel, on the primary it names then). Ends when the log handle is
/// gone.
async fn listen(wakeups: Weak<Wakeups>, source: Arc<Source>, channel: String, timeout: Duration) {
    let mut pause = Duration::from_millis(20);
    loop {
        let subscribed = tokio::time::timeout(timeout, async {
            let client = source.node_client().await?.ok_or_else(|| {
                redis::RedisError::from((redis::ErrorKind::Client, "no node client"))
            })?;
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, redis::RedisError>(pubsub.into_on_message())
        })
        .await;
        match subscribed {
            Ok(Ok(mut notices)) => {
                pause = Duration::from_millis(20);
                {
                    let Some(wakeups) = wakeups.upgrade() else {
                        return;
                    };
                    wakeups.live.store(true, Ordering::Release);
                    wakeups.wake_all();
                }
                while let Some(notice) = notices.next().await {
                    let Some(wakeups) = wakeups.upgrade() else {
                        return;
                    };
                    wakeups.wake(notice.get_payload_bytes());
                }
                tracing::debug!("redis: the wake-up subscription ended; subscribing again");
            }
            Ok(Err(e)) => {
                tracing::debug!(kind = ?e.kind(), "redis: could not subscribe for wake-ups");
            }
            Err(_) => tracing::debug!("redis: could not subscribe for wake-ups in time"),
        }
        if !went_down(&wakeups, &mut pause).await {
            return;
        }
    }
}

/// After the subscription failed: marks it down, wakes every waiting read
/// (a notice may have been lost), and pauses before the next try, each
/// pause longer up to [`MAX_RECONNECT_PAUSE`]. `false` when the log
/// handle is gone (the task ends).
async fn went_down(wakeups: &Weak<Wakeups>, pause: &mut Duration) -> bool {
    let Some(current) = wakeups.upgrade() else {
        return false;
    };
    current.live.store(false, Ordering::Release);
    current.wake_all();
    drop(current);
    tokio::time::sleep(*pause).await;
    *pause = (*pause * 2).min(MAX_RECONNECT_PAUSE);
    true
}

/// The sharded subscription's task (a Cluster): one RESP3 Cluster
/// connection whose client resubscribes by itself after a node's
/// connection drops; `SSUBSCRIBE`s and `SUNSUBSCRIBE`s follow the runs
/// reads wait on. Ends when the log handle is gone.
async fn listen_sharded(
    wakeups: Weak<Wakeups>,
    nodes: Vec<redis::ConnectionInfo>,
    prefix: String,
    mut requests: mpsc::UnboundedReceiver<Shard>,
    timeout: Duration,
) {
    let mut pause = Duration::from_millis(20);
    loop {
        let (pushes_to, mut pushes) = mpsc::unbounded_channel::<PushInfo>();
        let connected = tokio::time::timeout(timeout, async {
            redis::cluster::ClusterClientBuilder::new(nodes.clone())
                .use_protocol(redis::ProtocolVersion::RESP3)
                .push_sender(pushes_to)
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .build()?
                .get_async_connection()
                .await
        })
        .await;
        if let Ok(Ok(mut conn)) = connected {
            pause = Duration::from_millis(20);
            let Some(current) = wakeups.upgrade() else {
                return;
            };
            current.live.store(true, Ordering::Release);
            let runs = current.waited_on();
            drop(current);
            let mut failed = false;
            for run_id in runs {
                failed |= subscribe(&wakeups, &mut conn, &prefix, &run_id, timeout).await;
            }
            while !failed {
                tokio::select! {
                    request = requests.recv() => match request {
                        None => return,
                        Some(Shard::Subscribe(run_id)) => {
                            failed = subscribe(&wakeups, &mut conn, &prefix, &run_id, timeout).await;
                        }
                        Some(Shard::Unsubscribe(run_id)) => {
                            let channel = shard_channel(&prefix, &run_id);
                            let _ = tokio::time::timeout(timeout, conn.sunsubscribe(&channel)).await;
                        }
                    },
                    push = pushes.recv() => {
                        let Some(push) = push else { break };
                        let Some(current) = wakeups.upgrade() else { return };
                        on_push(&current, &prefix, push);
                    }
                }
            }
            tracing::debug!("redis: the sharded wake-up subscription failed; connecting again");
        } else {
            tracing::debug!("redis: could not connect for sharded wake-ups");
        }
        if !went_down(&wakeups, &mut pause).await {
            return;
        }
    }
}

/// Subscribes to `run_id`'s shard channel; on the engine's confirmation
/// its reads are woken and wait on notices from then on. Answers whether
/// the connection failed.
async fn subscribe(
    wakeups: &Weak<Wakeups>,
    conn: &mut redis::cluster_async::ClusterConnection,
    prefix: &str,
    run_id: &str,
    timeout: Duration,
) -> bool {
    let channel = shard_channel(prefix, run_id);
    let done = tokio::time::timeout(timeout, conn.ssubscribe(&channel)).await;
    let Some(current) = wakeups.upgrade() else {
        return true;
    };
    match done {
        Ok(Ok(())) => {
            current.heard(run_id, true);
            false
        }
        _ => {
            tracing::debug!("redis: a shard channel could not be subscribed");
            true
        }
    }
}

/// One push from the Cluster: a notice wakes its run; a confirmation
/// (again, after the client resubscribed by itself) wakes it too; an
/// unsubscription (the slot moved) or a dropped node connection makes its
/// reads poll until the confirmation comes back.
fn on_push(wakeups: &Wakeups, prefix: &str, push: PushInfo) {
    let run_of = |data: &[Value]| {
        let channel = data.first().and_then(text)?;
        let channel = std::str::from_utf8(channel).ok()?;
        let run = channel
            .strip_prefix(prefix)?
            .strip_prefix(":{")?
            .strip_suffix("}:appended")?;
        Some(run.to_owned())
    };
    match push.kind {
        PushKind::SMessage => {
            if let Some(run_id) = push.data.last().and_then(text) {
                wakeups.wake(run_id);
            }
        }
        PushKind::SSubscribe => {
            if let Some(run_id) = run_of(&push.data) {
                wakeups.heard(&run_id, true);
            }
        }
        PushKind::SUnsubscribe => {
            if let Some(run_id) = run_of(&push.data) {
                wakeups.heard(&run_id, false);
                if let Some(shard) = &wakeups.shard
                    && wakeups.runs.lock().is_ok_and(|r| r.contains_key(&run_id))
                {
                    let _ = shard.send(Shard::Subscribe(run_id));
                }
            }
        }
        PushKind::Disconnection => {
            for run_id in wakeups.waited_on() {
                wakeups.heard(&run_id, false);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn wakeups(live: bool) -> Arc<Wakeups> {
        Arc::new(Wakeups {
            runs: Mutex::new(HashMap::new()),
            live: AtomicBool::new(live),
            shard: None,
        })
    }

    /// While the subscription is down, a wait ends after the poll pause
    /// (the read then looks again), not at its own end.
    #[tokio::test(start_paused = true)]
    async fn a_wait_without_the_subscription_polls() {
        let mut waiting = wakeups(false).register("r");
        let start = Instant::now();
        waiting.wait(start + Duration::from_secs(30)).await;
        assert_eq!(start.elapsed(), POLL_PAUSE);
        // A wait that ends sooner ends then.
        let start = Instant::now();
        waiting.wait(start + Duration::from_millis(40)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(40));
    }

    /// With the subscription live, a wait lasts until its end, or until a
    /// notice on its run; a notice on another run does not end it.
    #[tokio::test(start_paused = true)]
    async fn a_live_wait_ends_at_its_end_or_at_a_notice() {
        let wakeups = wakeups(true);
        let mut waiting = wakeups.register("r");
        let start = Instant::now();
        waiting.wait(start + Duration::from_secs(30)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(30));
        let notices = Arc::clone(&wakeups);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            notices.wake(b"other");
            tokio::time::sleep(Duration::from_secs(1)).await;
            notices.wake(b"r");
        });
        let start = Instant::now();
        waiting.wait(start + Duration::from_secs(30)).await;
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }
}
