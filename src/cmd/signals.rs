//! Graceful shutdown: the first SIGTERM (what Kubernetes sends) or Ctrl-C
//! cancels a token that the serving loops stop on.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tracing::info;

/// A token cancelled on the first SIGTERM or Ctrl-C. The handler is
/// installed before this returns, so a signal that arrives while the
/// process is still starting is not lost.
pub fn shutdown_token() -> anyhow::Result<CancellationToken> {
    let token = CancellationToken::new();
    let stop = token.clone();
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        info!("shutdown requested");
        stop.cancel();
    });
    Ok(token)
}
