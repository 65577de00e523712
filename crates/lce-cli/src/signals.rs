//! SIGTERM and SIGINT (Ctrl-C) as a stream of their names, for the accept
//! loop (`lce::gateway::server::serve_http`).

use futures::Stream;

/// The handlers, installed up front: before the server says it listens, so
/// that no signal finds the default action.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers (fails only if the OS refuses).
    pub(crate) fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// The next signal's name (pending forever once the runtime goes away).
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = self.term.recv() => "SIGTERM",
                Some(()) = self.int.recv() => "SIGINT",
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            match tokio::signal::ctrl_c().await {
                Ok(()) => "Ctrl-C",
                Err(_) => std::future::pending().await,
            }
        }
    }

    /// Every signal's name, the first one held back `delay` after it came
    /// (a second signal ends the delay at once): when it comes `on_first`
    /// runs (`lce serve`: readiness turns 503 while the listener still
    /// accepts, `--drain-delay`).
    pub(crate) fn after_drain<F>(
        self,
        delay: std::time::Duration,
        on_first: F,
    ) -> impl Stream<Item = &'static str> + Unpin
    where
        F: FnOnce() + Send + 'static,
    {
        let state = (self, Some(on_first));
        Box::pin(futures::stream::unfold(
            state,
            move |(mut signals, on_first)| async move {
                let name = signals.recv().await;
                let Some(on_first) = on_first else {
                    return Some((name, (signals, None)));
                };
                on_first();
                tracing::info!(target: "lce::serve", signal = name, delay_secs = delay.as_secs_f64(), "draining: not ready, still accepting");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    second = signals.recv() => {
                        tracing::info!(target: "lce::serve", signal = second, "second signal: ending the drain delay");
                    }
                }
                Some((name, (signals, None)))
            },
        ))
    }
}
