//! The subcommands.

pub mod batch;
pub mod metrics_server;
pub mod resume;
pub mod run;
pub mod scheduler;
pub mod scripted_server;
pub mod submit;
pub mod telemetry;
pub mod worker;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deepfleet_fleet::Metrics;
use deepfleet_model::Providers;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::{Queue, QueueError};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::events::EventSink;
use deepfleet_worker::{StepRunner, Worker};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::settings::Settings;

/// Connects to the fleet's RabbitMQ and Redis; flags win over settings.
pub async fn connect_fleet(
    queue_url: Option<String>,
    store_url: Option<String>,
    settings: &Settings,
) -> anyhow::Result<(Arc<dyn Queue>, Arc<dyn Store>)> {
    let queue_url = queue_url
        .or_else(|| settings.queue.clone())
        .context("no queue URL: pass --queue amqp://... or set DEEPFLEET__QUEUE")?;
    let store_url = store_url
        .or_else(|| settings.store.clone())
        .context("no store URL: pass --store redis://... or set DEEPFLEET__STORE")?;
    let queue = AmqpQueue::connect(AmqpConfig::new(queue_url, settings.queue_name.clone()))
        .await
        .context("connecting to RabbitMQ")?;
    let store = RedisStore::connect(&store_url, &settings.key_prefix)
        .await
        .context("connecting to Redis")?;
    Ok((Arc::new(queue), Arc::new(store)))
}

/// A step runner as the settings configure it (providers, retries, harness
/// profiles), opening runs' context with `key` and reporting to `events`.
pub fn step_runner(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    settings: &Settings,
    key: ContextKey,
    events: Option<Arc<dyn EventSink>>,
) -> Arc<StepRunner> {
    let providers = Arc::new(Providers::new(settings.providers.clone()));
    let mut runner = StepRunner::new(queue, store, providers, settings.worker.retry())
        .with_context_key(key)
        .with_profiles(settings.profiles.clone());
    if let Some(events) = events {
        runner = runner.with_events(events);
    }
    Arc::new(runner)
}

/// Serves `/metrics` when `flag` or the `metrics_listen` setting names an
/// address.
pub async fn serve_metrics(
    flag: Option<String>,
    settings: &Settings,
    metrics: &Arc<Metrics>,
    queue: Arc<dyn Queue>,
) -> anyhow::Result<()> {
    if let Some(addr) = flag.or_else(|| settings.metrics_listen.clone()) {
        let bound = metrics_server::serve(&addr, Arc::clone(metrics), queue).await?;
        tracing::info!(%bound, "serving /metrics");
    }
    Ok(())
}

/// A worker inside this process, for embedded mode.
pub struct EmbeddedWorker {
    shutdown: CancellationToken,
    handle: JoinHandle<Result<(), QueueError>>,
}

impl EmbeddedWorker {
    /// Starts consuming `queue` with up to `concurrency` steps at once.
    pub fn start(queue: Arc<dyn Queue>, runner: Arc<StepRunner>, concurrency: u16) -> Self {
        let worker = Worker::new(queue, runner, concurrency, Duration::from_secs(1));
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let handle = tokio::spawn(async move { worker.run(stop).await });
        EmbeddedWorker { shutdown, handle }
    }

    /// Stops it; steps still in flight after a second are dropped, which
    /// in embedded mode only happens once the batch is over.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.handle.await??;
        Ok(())
    }
}
