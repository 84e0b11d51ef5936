//! `deepfleet worker`: execute steps from the fleet's queue until SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use deepfleet_fleet::Metrics;
use deepfleet_worker::LimiterMetrics;
use deepfleet_worker::Worker;
use deepfleet_worker::events::EventSink;
use tracing::info;

use super::health::{Probes, WatchedQueue};
use crate::settings::Settings;

/// Arguments of `deepfleet worker`.
#[derive(Args)]
pub struct WorkerArgs {
    /// RabbitMQ URL (`amqp://...` or `amqps://...`).
    #[arg(long, env = "DEEPFLEET__QUEUE")]
    queue: Option<String>,
    /// Redis URL (`redis://...`, `rediss://...`, or
    /// `redis+cluster://h1:p1,h2:p2`).
    #[arg(long, env = "DEEPFLEET__STORE")]
    store: Option<String>,
    /// Steps run at once (overrides `worker.concurrency`).
    #[arg(long, env = "DEEPFLEET__WORKER__CONCURRENCY", value_parser = concurrency)]
    concurrency: Option<u16>,
    /// Serve `/metrics`, `/healthz` and `/readyz` at this address, e.g.
    /// `0.0.0.0:9464` in a pod (overrides `metrics_listen`).
    #[arg(long, env = "DEEPFLEET__METRICS_LISTEN")]
    metrics_listen: Option<String>,
}

/// Parses `--concurrency`, naming the variable too: clap's own message
/// names only the flag, though the value may come from the variable.
fn concurrency(value: &str) -> Result<u16, String> {
    value
        .parse()
        .map_err(|e| format!("{e} (from --concurrency or DEEPFLEET__WORKER__CONCURRENCY)"))
}

pub async fn run(args: WorkerArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    // A fleet's runs carry context sealed with the shared key; a worker
    // without it could run none of them, so it does not start.
    let context_key = settings.fleet_context_key()?;
    let shutdown = super::signals::shutdown_token()?;
    let store_url = args.store.clone().or_else(|| settings.store.clone());
    let (queue, store) = super::connect_fleet(args.queue, args.store, &settings).await?;
    let (consumed, attached) = WatchedQueue::wrap(Arc::clone(&queue));
    let probes = Probes::new(shutdown.clone())
        .broker(Arc::clone(&queue))
        .store(Arc::clone(&store))
        .consumer("consumer", attached);
    let metrics = Arc::new(Metrics::new()?);
    super::serve_metrics(
        args.metrics_listen,
        &settings,
        &metrics,
        Arc::clone(&queue),
        probes,
    )
    .await?;
    // Every worker of the fleet shares the limiter's buckets in Redis.
    let limiter = match store_url {
        Some(url) => deepfleet_settings::fleet::connect_store(&url, &settings)
            .await?
            .rate_limiter(),
        None => anyhow::bail!("no store URL for the rate limiter"),
    };
    let gate = deepfleet_settings::fleet::rate_gate(&settings, Arc::new(limiter))
        .with_observer(Arc::new(LimiterMetrics(Arc::clone(&metrics))));
    let runner = Arc::new(deepfleet_settings::fleet::limited_step_runner(
        Arc::clone(&queue),
        store,
        &settings,
        context_key,
        Some(Arc::clone(&metrics) as Arc<dyn EventSink>),
        Some(gate),
    ));
    let concurrency = args.concurrency.unwrap_or(settings.worker.concurrency);
    let worker = Worker::new(consumed, runner, concurrency, settings.worker.grace());
    // Loaded before the worker subscribes: deliveries taken while still
    // starting would be held, unworked, by a process that may be killed
    // before it starts on them, and each such loss counts towards the
    // queue's delivery limit.
    tokio::task::spawn_blocking(deepfleet_fleet::tokens::warm)
        .await
        .context("loading the tokenizer")?;
    info!(concurrency, "worker started");
    metrics.set_queue_consumers(1);
    let ran = worker.run(shutdown).await;
    metrics.set_queue_consumers(0);
    ran?;
    Ok(ExitCode::SUCCESS)
}
