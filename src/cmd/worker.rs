//! `deepfleet worker`: execute steps from the fleet's queue until SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use deepfleet_model::Providers;
use deepfleet_worker::{RetryConfig, StepRunner, Worker};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::settings::Settings;

/// Arguments of `deepfleet worker`.
#[derive(Args)]
pub struct WorkerArgs {
    /// RabbitMQ URL.
    #[arg(long)]
    queue: Option<String>,
    /// Redis URL (`redis://...`, or `redis+cluster://h1:p1,h2:p2`).
    #[arg(long)]
    store: Option<String>,
    /// Steps run at once (overrides `worker.concurrency`).
    #[arg(long)]
    concurrency: Option<u16>,
}

pub async fn run(args: WorkerArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let (queue, store) = super::connect_fleet(args.queue, args.store, &settings).await?;
    let providers = Arc::new(Providers::new(settings.providers.clone()));
    let retry = RetryConfig {
        max_attempts: settings.worker.max_attempts,
        ..RetryConfig::default()
    };
    let runner = Arc::new(StepRunner::new(Arc::clone(&queue), store, providers, retry));
    let concurrency = args.concurrency.unwrap_or(settings.worker.concurrency);
    let worker = Worker::new(
        queue,
        runner,
        concurrency,
        Duration::from_secs(settings.worker.grace_secs),
    );
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        info!("shutdown requested");
        stop.cancel();
    });
    info!(concurrency, "worker started");
    worker.run(shutdown).await?;
    Ok(ExitCode::SUCCESS)
}
