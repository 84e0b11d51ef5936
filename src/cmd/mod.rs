//! The subcommands.

pub mod agent_source;
pub mod agents_dir;
pub mod api_key;
pub mod batch;
pub mod batch_handles;
pub mod chart_values;
pub mod consumer_watch;
pub mod dev;
pub mod health;
pub mod http_serve;
pub mod keygen;
pub mod metrics_server;
pub mod recover;
pub mod resume;
pub mod rotate_keys;
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

use deepfleet_fleet::Metrics;
use deepfleet_proto::AgentSpec;
use deepfleet_queue::{Queue, QueueError};
use deepfleet_store::Store;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::events::EventSink;
use deepfleet_worker::{StepRunner, Worker};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::settings::Settings;

pub use deepfleet_settings::fleet::{agent_options, amqp_config, connect_fleet, providers};

/// A step runner as the settings configure it, shared by the worker that
/// runs it.
pub fn step_runner(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    settings: &Settings,
    key: ContextKey,
    events: Option<Arc<dyn EventSink>>,
) -> Arc<StepRunner> {
    Arc::new(deepfleet_settings::fleet::step_runner(
        queue, store, settings, key, events,
    ))
}

/// The API keys the settings configure; a bad line is an error naming
/// where it came from (never a key).
pub fn api_keys(settings: &Settings) -> anyhow::Result<deepfleet_scheduler::keys::ApiKeys> {
    let lines = settings.api.key_lines()?;
    Ok(deepfleet_scheduler::keys::ApiKeys::parse(
        lines.iter().map(|l| (l.origin.as_str(), l.text.as_str())),
    )?)
}

/// The retention the settings configure (`[retention]`); a tenant id that
/// is not one is an error naming it.
pub fn retention(settings: &Settings) -> anyhow::Result<deepfleet_scheduler::RetentionPolicy> {
    let secs = |secs: u64| (secs > 0).then(|| std::time::Duration::from_secs(secs));
    let tenants = settings
        .retention
        .tenants
        .iter()
        .map(|(id, ttl)| {
            let tenant = deepfleet_proto::TenantId::new(id.clone())
                .map_err(|e| anyhow::anyhow!("retention.tenants.{id}: {e}"))?;
            Ok((tenant, secs(*ttl)))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(deepfleet_scheduler::RetentionPolicy::new(
        settings
            .retention
            .finished_runs_secs
            .map(std::time::Duration::from_secs),
        tenants,
    ))
}

/// The webhook signing secrets and retries (`[webhooks]`); a bad tenant
/// id or secret is an error naming its setting.
pub fn webhooks(settings: &Settings) -> anyhow::Result<deepfleet_scheduler::WebhookConfig> {
    use deepfleet_scheduler::webhooks::Secret;
    use deepfleet_scheduler::webhooks::backoff::Backoff;
    use std::time::Duration;
    let hooks = &settings.webhooks;
    anyhow::ensure!(
        hooks.max_attempts >= 1 && hooks.timeout_secs >= 1,
        "webhooks.max_attempts and webhooks.timeout_secs must be at least 1"
    );
    let mut config = deepfleet_scheduler::WebhookConfig::default();
    config.max_attempts = hooks.max_attempts;
    config.allow_private = hooks.allow_private_destinations;
    config.timeout = Duration::from_secs(hooks.timeout_secs);
    config.backoff = Backoff {
        initial: Duration::from_millis(hooks.retry_initial_ms),
        max: Duration::from_millis(hooks.retry_max_ms.max(hooks.retry_initial_ms)),
    };
    for (id, text) in &hooks.secrets {
        let tenant = deepfleet_proto::TenantId::new(id.clone())
            .map_err(|e| anyhow::anyhow!("webhooks.secrets.{id}: {e}"))?;
        let secret =
            Secret::parse(text).map_err(|e| anyhow::anyhow!("webhooks.secrets.{id}: {e}"))?;
        config = config.with_secret(tenant, secret);
    }
    Ok(config)
}

/// The cross-origin policy of the HTTP API (`[api.cors]`, unset lists at
/// the scheduler's defaults), as a layer; a bad entry is an error naming
/// its setting.
pub fn cors_layer(settings: &Settings) -> anyhow::Result<tower_http::cors::CorsLayer> {
    use deepfleet_api::cors::CorsPolicy;
    let cors = &settings.api.cors;
    let default = CorsPolicy::default();
    let policy = CorsPolicy {
        allow_origins: cors.allow_origins.clone().unwrap_or(default.allow_origins),
        allow_methods: cors.allow_methods.clone().unwrap_or(default.allow_methods),
        allow_headers: cors.allow_headers.clone().unwrap_or(default.allow_headers),
        expose_headers: cors
            .expose_headers
            .clone()
            .unwrap_or(default.expose_headers),
        allow_credentials: cors.allow_credentials,
        max_age: cors
            .max_age_secs
            .map_or(default.max_age, std::time::Duration::from_secs),
    };
    Ok(policy.layer()?)
}

/// The bounds of new runs the settings configure: `[limits]
/// run_timeout_secs`, `[costs] tenant_daily_usd` and `[admission]`'s
/// tenant concurrency; a tenant id that is not one, or a budget that is
/// no amount, is an error naming it.
pub fn run_bounds(settings: &Settings) -> anyhow::Result<deepfleet_scheduler::RunBounds> {
    let tenant_daily_nano_usd = settings
        .costs
        .tenant_daily_usd
        .iter()
        .map(|(id, usd)| {
            let tenant = deepfleet_proto::TenantId::new(id.clone())
                .map_err(|e| anyhow::anyhow!("costs.tenant_daily_usd.{id}: {e}"))?;
            Ok((
                tenant,
                budget_nano_usd(*usd, &format!("costs.tenant_daily_usd.{id}"))?,
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    let admission = &settings.admission;
    let tenant_concurrency = admission
        .tenants
        .iter()
        .map(|(id, limit)| {
            let tenant = deepfleet_proto::TenantId::new(id.clone())
                .map_err(|e| anyhow::anyhow!("admission.tenants.{id}: {e}"))?;
            Ok((tenant, *limit))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(deepfleet_scheduler::RunBounds {
        run_timeout_secs: settings.limits.run_timeout_secs,
        tenant_daily_nano_usd,
        default_tenant_concurrency: Some(admission.tenant_concurrency).filter(|l| *l > 0),
        tenant_concurrency,
    })
}

/// `usd` (a budget named `what`) in nano-dollars: a positive amount.
pub fn budget_nano_usd(usd: f64, what: &str) -> anyhow::Result<u64> {
    if !(usd.is_finite() && usd > 0.0) {
        anyhow::bail!("{what}: a budget is a positive number of dollars, not {usd}");
    }
    Ok(deepfleet_proto::cost::nanos(usd))
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
    use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
    use deepfleet_store::redis::RedisStore;

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
