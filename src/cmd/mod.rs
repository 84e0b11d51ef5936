//! The subcommands.

pub mod agent_source;
pub mod agents_dir;
pub mod batch;
pub mod batch_handles;
pub mod chart_values;
pub mod consumer_watch;
pub mod dev;
pub mod health;
pub mod keygen;
pub mod metrics_server;
pub mod recover;
pub mod resume;
pub mod run;
pub mod scheduler;
pub mod signals;
pub mod spec_watch;
pub mod submit;
pub mod telemetry;
pub mod worker;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deepfleet_fleet::Metrics;
use deepfleet_model::Providers;
use deepfleet_proto::AgentSpec;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::{Queue, QueueError};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::agent::AgentOptions;
use deepfleet_worker::events::EventSink;
use deepfleet_worker::{StepRunner, Worker};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::redacted_url::redacted;
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
    let queue = AmqpQueue::connect(amqp_config(&queue_url, &settings.queue_name, settings))
        .await
        .with_context(|| format!("connecting to RabbitMQ at {}", redacted(&queue_url)))?;
    let store =
        RedisStore::connect_within(&store_url, &settings.key_prefix, settings.connect_timeout())
            .await
            .with_context(|| format!("connecting to Redis at {}", redacted(&store_url)))?;
    Ok((Arc::new(queue), Arc::new(store)))
}

/// The broker configuration for queue `name` at `url`, with the
/// settings' connect timeout.
pub fn amqp_config(url: &str, name: &str, settings: &Settings) -> AmqpConfig {
    AmqpConfig {
        connect_timeout: settings.connect_timeout(),
        ..AmqpConfig::new(url, name)
    }
}

/// A step runner as the settings configure it (providers, retries, time
/// limits, harness profiles), opening runs' context with `key` and reporting to `events`.
pub fn step_runner(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    settings: &Settings,
    key: ContextKey,
    events: Option<Arc<dyn EventSink>>,
) -> Arc<StepRunner> {
    let providers = Arc::new(providers(settings));
    let mut runner = StepRunner::new(queue, store, providers, settings.worker.retry())
        .with_time_limits(settings.worker.time_limits())
        .with_context_key(key)
        .with_profiles(settings.profiles.clone());
    if let Some(events) = events {
        runner = runner.with_events(events);
    }
    Arc::new(runner)
}

/// The model providers the settings configure, their keys and URLs read
/// as the project's processes see variables ([`Settings::var`]).
/// `replay:PATH` models (examples, trying the fleet without a key) are
/// served in process by the replay provider.
pub fn providers(settings: &Settings) -> Providers {
    deepfleet_replay::register(Providers::with_env(
        settings.providers.clone(),
        settings.var_lookup(),
    ))
}

/// What a worker of these settings adds to every agent: its harness
/// profiles and tool-call time limit.
pub fn agent_options(settings: &Settings) -> AgentOptions {
    AgentOptions {
        profiles: settings.profiles.clone(),
        tool_timeout: settings.worker.time_limits().tool_call,
        ..AgentOptions::default()
    }
}

/// Loads the spec at `path` (`model_override` replacing its models) and
/// checks it as workers of these settings would run it.
pub fn load_checked_spec(
    path: &Path,
    model_override: Option<&str>,
    settings: &Settings,
) -> anyhow::Result<AgentSpec> {
    crate::batch_io::load_spec(
        path,
        model_override,
        &providers(settings),
        &agent_options(settings),
    )
}

/// `--check-providers`: one cheap authenticated call per provider the
/// spec at `path` uses, failing (naming the field and line) on a key the
/// provider refuses or a host that does not answer.
pub async fn check_provider_access(
    path: &Path,
    spec: &AgentSpec,
    settings: &Settings,
) -> anyhow::Result<()> {
    let Err(e) = deepfleet_worker::preflight::check_access(spec, &providers(settings)).await else {
        return Ok(());
    };
    let e = match std::fs::read_to_string(path) {
        Ok(text) => e.located(&text),
        Err(_) => e,
    };
    Err(anyhow::anyhow!("{}: {e}", path.display()))
}

/// Serves `/metrics`, `/healthz` and `/readyz` (over `probes`) when `flag`
/// or the `metrics_listen` setting names an address.
pub async fn serve_metrics(
    flag: Option<String>,
    settings: &Settings,
    metrics: &Arc<Metrics>,
    queue: Arc<dyn Queue>,
    probes: health::Probes,
) -> anyhow::Result<()> {
    if let Some(addr) = flag.or_else(|| settings.metrics_listen.clone()) {
        let bound =
            metrics_server::serve(&addr, Arc::clone(metrics), queue, health::routes(probes))
                .await?;
        tracing::info!(%bound, "serving /metrics, /healthz and /readyz");
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The first bytes a client sends to a listener of ours when it
    /// connects to `url` (`PORT` replaced by the listener's port).
    async fn first_bytes(url: &str, connect: fn(String) -> tokio::task::JoinHandle<()>) -> Vec<u8> {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let client = connect(url.replace("PORT", &port.to_string()));
        // A connection that closes without a byte is a reachability check
        // (the AMQP client makes one); the next one speaks.
        let head = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut head = vec![0_u8; 3];
                if socket.read_exact(&mut head).await.is_ok() {
                    return head;
                }
            }
        })
        .await
        .expect("the client never spoke");
        client.abort();
        head
    }

    /// A TLS handshake record: content type 22, protocol version 3.x.
    fn is_client_hello(head: &[u8]) -> bool {
        head[0] == 0x16 && head[1] == 0x03
    }

    /// rediss:// and amqps:// open with a TLS handshake (before, rediss://
    /// failed with "TLS feature not enabled").
    #[tokio::test]
    async fn tls_urls_start_a_tls_handshake() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let redis = first_bytes("rediss://127.0.0.1:PORT", |url| {
            tokio::spawn(async move {
                let _ = RedisStore::connect(&url, "tls-test").await;
            })
        })
        .await;
        assert!(is_client_hello(&redis), "{redis:?}");
        let amqp = first_bytes("amqps://127.0.0.1:PORT/%2f", |url| {
            tokio::spawn(async move {
                let _ = AmqpQueue::connect(AmqpConfig::new(url, "tls-test")).await;
            })
        })
        .await;
        assert!(is_client_hello(&amqp), "{amqp:?}");
        // Plain URLs stay plain.
        let plain = first_bytes("amqp://127.0.0.1:PORT/%2f", |url| {
            tokio::spawn(async move {
                let _ = AmqpQueue::connect(AmqpConfig::new(url, "tls-test")).await;
            })
        })
        .await;
        assert_eq!(plain, b"AMQ");
    }
}
