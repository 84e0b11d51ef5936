//! Graceful shutdown: the first SIGTERM (what Kubernetes sends) or Ctrl-C
//! cancels a token that the serving loops stop on, or that a batch
//! command stops on ([`Interrupt`]).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

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

/// The interruption of a batch command. The first SIGINT or SIGTERM
/// cancels [`Interrupt::token`]: the command stops submitting, writes the
/// lines of the runs that have ended and exits. A second one exits at
/// once (every line written so far is already on disk).
pub struct Interrupt {
    token: CancellationToken,
    /// The number of the first signal; 0 until one came.
    first: Arc<AtomicI32>,
}

impl Interrupt {
    /// Installs the handlers; until then the signals' default (ending the
    /// process) applies, which loses nothing before a batch starts.
    pub fn install() -> anyhow::Result<Self> {
        let token = CancellationToken::new();
        let first = Arc::new(AtomicI32::new(0));
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let (stop, came) = (token.clone(), Arc::clone(&first));
        tokio::spawn(async move {
            let kind = tokio::select! {
                _ = int.recv() => SignalKind::interrupt(),
                _ = term.recv() => SignalKind::terminate(),
            };
            came.store(kind.as_raw_value(), Ordering::SeqCst);
            stop.cancel();
            eprintln!(
                "interrupted: writing the results of ended runs (interrupt again to quit now)"
            );
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            std::process::exit(128 + kind.as_raw_value());
        });
        Ok(Interrupt { token, first })
    }

    /// Cancelled by the first signal.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// 128 + the signal's number (the shell's convention for a command a
    /// signal ended), once one came.
    pub fn exit_code(&self) -> Option<ExitCode> {
        let signal = self.first.load(Ordering::SeqCst);
        (signal > 0).then(|| ExitCode::from(u8::try_from(128 + signal).unwrap_or(u8::MAX)))
    }
}
