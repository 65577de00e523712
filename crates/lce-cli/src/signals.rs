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

    /// Every signal's name, as it comes.
    pub(crate) fn into_stream(self) -> impl Stream<Item = &'static str> + Unpin {
        Box::pin(futures::stream::unfold(self, |mut signals| async move {
            let name = signals.recv().await;
            Some((name, signals))
        }))
    }
}
