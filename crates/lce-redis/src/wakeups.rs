//! Wake-ups for reads that wait for a run's next entries: one pub/sub
//! subscription per log handle, not one blocking read per subscriber.
//!
//! Every append's transaction ends with `PUBLISH <prefix>:appended
//! <run_id>`. Each [`RedisRunLog`](crate::RedisRunLog) keeps one
//! connection subscribed to that channel and wakes the local reads that
//! wait on that run. A read registers before it looks at the log, so an
//! append that lands after the look publishes after the registration and
//! wakes it; a notice for a run nobody here waits on costs a map lookup.
//! Pub/sub delivers at most once: while the subscription is down (the
//! engine restarted, the connection dropped), waits fall back to looking
//! again every [`POLL_PAUSE`], and every waiting read is woken when it is
//! back, in case a notice was lost in between.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use redis::Client;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// How often a waiting read looks again while the subscription is down.
const POLL_PAUSE: Duration = Duration::from_millis(250);

/// The longest pause between two tries to subscribe again.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(1);

/// The runs some local read waits on, and whether the subscription is live.
pub(crate) struct Wakeups {
    /// Per run: the counter its notices bump, and how many reads wait.
    runs: Mutex<HashMap<String, (watch::Sender<u64>, usize)>>,
    live: AtomicBool,
}

impl Wakeups {
    /// Starts the subscription to `channel` on a connection of its own (a
    /// task that reconnects by itself); abort the handle to stop it.
    pub(crate) fn start(
        client: Client,
        channel: String,
        timeout: Duration,
    ) -> (Arc<Self>, AbortHandle) {
        let wakeups = Arc::new(Wakeups {
            runs: Mutex::new(HashMap::new()),
            live: AtomicBool::new(false),
        });
        let task = tokio::spawn(listen(Arc::downgrade(&wakeups), client, channel, timeout));
        (wakeups, task.abort_handle())
    }

    /// Registers a read that is about to look at `run_id`'s log and may
    /// wait: a notice from now on wakes it.
    pub(crate) fn register(self: &Arc<Self>, run_id: &str) -> Waiting {
        let receiver = match self.runs.lock() {
            Ok(mut runs) => {
                let (sender, readers) = runs
                    .entry(run_id.to_owned())
                    .or_insert_with(|| (watch::channel(0).0, 0));
                *readers += 1;
                Some(sender.subscribe())
            }
            Err(_) => None,
        };
        Waiting {
            wakeups: Arc::clone(self),
            run_id: run_id.to_owned(),
            receiver,
        }
    }

    /// Wakes the reads waiting on `run_id`.
    fn wake(&self, run_id: &[u8]) {
        let Ok(run_id) = std::str::from_utf8(run_id) else {
            return;
        };
        if let Ok(runs) = self.runs.lock()
            && let Some((sender, _)) = runs.get(run_id)
        {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Wakes every waiting read (the subscription came back or went down:
    /// a notice may have been lost).
    fn wake_all(&self) {
        if let Ok(runs) = self.runs.lock() {
            for (sender, _) in runs.values() {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }
}

/// A read registered with [`Wakeups::register`].
pub(crate) struct Waiting {
    wakeups: Arc<Wakeups>,
    run_id: String,
    /// `None` only if the map's lock was poisoned: the wait then polls.
    receiver: Option<watch::Receiver<u64>>,
}

impl Waiting {
    /// Waits for a notice on the run since the registration (or since the
    /// last wait), or `until`, or [`POLL_PAUSE`] while the subscription is
    /// down.
    pub(crate) async fn wait(&mut self, until: Instant) {
        let live = self.wakeups.live.load(Ordering::Acquire);
        let until = if live && self.receiver.is_some() {
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

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Ok(mut runs) = self.wakeups.runs.lock()
            && let Some((_, readers)) = runs.get_mut(&self.run_id)
        {
            *readers -= 1;
            if *readers == 0 {
                runs.remove(&self.run_id);
            }
        }
    }
}

/// The subscription's task: subscribe, forward notices, and on any failure
/// mark it down and subscribe again after a growing pause. Ends when the
/// log handle is gone.
async fn listen(wakeups: Weak<Wakeups>, client: Client, channel: String, timeout: Duration) {
    let mut pause = Duration::from_millis(20);
    loop {
        let subscribed = tokio::time::timeout(timeout, async {
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
        let Some(current) = wakeups.upgrade() else {
            return;
        };
        current.live.store(false, Ordering::Release);
        current.wake_all();
        drop(current);
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_RECONNECT_PAUSE);
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
