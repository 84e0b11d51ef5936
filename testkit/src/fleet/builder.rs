//! How a test fleet is set up: one builder for both modes, so the e2e
//! suite and the benchmarks configure their fleets alike.

use deepfleet_model::ratelimit::{
    InProcessLimiter, Limits, RateGate, RateLimits, RateLimitsConfig,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deepfleet_model::{ProviderConfig, Providers};
use deepfleet_proto::InputLimits;
use deepfleet_queue::Queue;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::lanes::{Lanes, interactive_name};
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_store::Keyring;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::events::{EventSink, NoopSink};
use deepfleet_worker::sandbox::SandboxHost;
use deepfleet_worker::{RetryConfig, StepRunner, TimeLimits, Worker};
use tokio_util::sync::CancellationToken;

use super::handle::{Fleet, Remote};
use super::services::{self, AMQP_URL, REDIS_URL, Service};
use super::workers::{API_KEY, FAST_RETRY_BASE, FAST_RETRY_MAX, WorkerCommand, Workers};

/// How long a stopping worker may finish what it holds.
const GRACE: Duration = Duration::from_secs(1);

/// Sets up a [`Fleet`]: embedded with [`FleetBuilder::embedded`], or on
/// RabbitMQ and Redis with [`FleetBuilder::distributed`].
pub struct FleetBuilder {
    pub(super) worker: WorkerCommand,
    providers: HashMap<String, ProviderConfig>,
    events: Arc<dyn EventSink>,
    model_timeout_secs: u64,
    poll_every: Duration,
    run_limit: Duration,
    sandbox: Option<Arc<SandboxHost>>,
}

impl Default for FleetBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl FleetBuilder {
    /// Defaults: 32 steps at once per worker, replay models only, a fresh
    /// context key, standard retries, warnings logged, results polled
    /// every 20 ms, batches given 240 s; no binary for worker processes.
    pub fn new() -> Self {
        FleetBuilder {
            worker: WorkerCommand {
                binary: None,
                amqp_url: AMQP_URL.to_owned(),
                redis_url: REDIS_URL.to_owned(),
                concurrency: 32,
                model_url: None,
                context_key: ContextKey::generate_base64(),
                encryption: None,
                log_level: "warn".to_owned(),
                fast_retries: false,
                model_http2: false,
                time_limits: None,
                file_limits: None,
                rate_limits: None,
            },
            providers: HashMap::new(),
            events: Arc::new(NoopSink),
            model_timeout_secs: 30,
            poll_every: Duration::from_millis(20),
            run_limit: Duration::from_secs(240),
            sandbox: None,
        }
    }

    /// The `deepfleet` binary worker processes run (the e2e suite passes
    /// `env!("CARGO_BIN_EXE_deepfleet")`, the benchmarks the release
    /// build).
    pub fn binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.worker.binary = Some(path.into());
        self
    }

    /// Runs a distributed fleet on the RabbitMQ and Redis at these URLs
    /// (a test's private [`servers`](crate::servers)) instead of the
    /// shared local ones.
    pub fn servers(mut self, amqp_url: &str, redis_url: &str) -> Self {
        amqp_url.clone_into(&mut self.worker.amqp_url);
        redis_url.clone_into(&mut self.worker.redis_url);
        self
    }

    /// Steps each worker runs at once.
    pub fn concurrency(mut self, steps: u16) -> Self {
        self.worker.concurrency = steps;
        self
    }

    /// Serves `openai:` models at `base_url` (a scripted server), or
    /// none when `None`.
    pub fn model_url(mut self, base_url: Option<String>) -> Self {
        self.worker.model_url = base_url;
        self
    }

    /// Makes the `openai:` provider of [`FleetBuilder::model_url`] speak
    /// HTTP/2 by prior knowledge: a worker's calls share one connection.
    pub fn model_http2(mut self) -> Self {
        self.worker.model_http2 = true;
        self
    }

    /// How long a model call may take before the client gives up.
    pub fn model_timeout(mut self, timeout: Duration) -> Self {
        self.model_timeout_secs = timeout.as_secs();
        self
    }

    /// Provider configs of an embedded fleet (no environment is read);
    /// [`FleetBuilder::model_url`] adds `openai` to them.
    pub fn providers(mut self, providers: HashMap<String, ProviderConfig>) -> Self {
        self.providers = providers;
        self
    }

    /// Where an embedded fleet reports harness events.
    pub fn events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// The runtime-context key (base64), shared with worker processes.
    pub fn context_key(mut self, base64: &str) -> Self {
        base64.clone_into(&mut self.worker.context_key);
        self
    }

    /// Encryption at rest for a distributed fleet: its store and worker
    /// processes seal under these keys (`kid:base64,...`, as the
    /// `encryption.keys` setting) with `current` sealing. An embedded
    /// fleet keeps its state in memory only and ignores them.
    pub fn encryption(mut self, keys: &str, current: &str) -> Self {
        self.worker.encryption = Some((keys.to_owned(), current.to_owned()));
        self
    }

    /// Retries after [`FAST_RETRY_BASE`], backing off to
    /// [`FAST_RETRY_MAX`], so retry scenarios finish quickly.
    pub fn fast_retries(mut self) -> Self {
        self.worker.fast_retries = true;
        self
    }

    /// Runs steps and tool calls under `limits` instead of the defaults.
    pub fn time_limits(mut self, limits: TimeLimits) -> Self {
        self.worker.time_limits = Some(limits);
        self
    }

    /// Keeps the files agents' tools write within `limits` instead of
    /// the defaults.
    pub fn file_limits(mut self, limits: InputLimits) -> Self {
        self.worker.file_limits = Some(limits);
        self
    }

    /// `RUST_LOG` of worker processes.
    pub fn log_level(mut self, level: &str) -> Self {
        level.clone_into(&mut self.worker.log_level);
        self
    }

    /// Where an embedded fleet's `execute` runs commands instead of the
    /// process's own host (a host without `bwrap`); worker processes find
    /// theirs on their `PATH` ([`Fleet::spawn_worker_with`]).
    pub fn sandbox(mut self, host: Arc<SandboxHost>) -> Self {
        self.sandbox = Some(host);
        self
    }

    /// How often result lines are polled while a batch runs.
    pub fn poll_every(mut self, every: Duration) -> Self {
        self.poll_every = every;
        self
    }

    /// Passes the fleet's model calls through the fleet-wide rate limiter
    /// under `limits` (every provider and model): in process when
    /// embedded, in the fleet's Redis when distributed.
    pub fn rate_limits(mut self, limits: Limits) -> Self {
        self.worker.rate_limits = Some(limits);
        self
    }

    /// How long a batch may take before following it fails.
    pub fn run_limit(mut self, limit: Duration) -> Self {
        self.run_limit = limit;
        self
    }

    /// One process: an in-memory queue and store, and a worker task.
    /// Needs a Tokio runtime.
    pub fn embedded(self) -> anyhow::Result<Fleet> {
        // What `main` does for the binary: HTTP clients need a TLS provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let main = Arc::new(MemoryQueue::new());
        let queue: Arc<dyn Queue> =
            Arc::new(Lanes::new(main.clone(), Arc::new(MemoryQueue::new())));
        let store = Arc::new(EmbeddedStore::new());
        let providers =
            deepfleet_replay::register(Providers::with_env(self.provider_configs(), |_| None));
        let providers = Arc::new(match self.worker.rate_limits {
            Some(limits) => {
                let config = RateLimitsConfig {
                    default: limits,
                    ..RateLimitsConfig::default()
                };
                providers.with_rate_gate(RateGate::new(
                    Arc::new(InProcessLimiter::new()),
                    RateLimits::from(config),
                ))
            }
            None => providers,
        });
        let key = ContextKey::from_base64(&self.worker.context_key)?;
        let mut runner = StepRunner::builder(queue.clone(), store.clone(), providers)
            .retry(self.retries())
            .events(Arc::clone(&self.events))
            .context_key(key);
        if let Some(limits) = self.worker.time_limits {
            runner = runner.time_limits(limits);
        }
        if let Some(limits) = self.worker.file_limits {
            runner = runner.file_limits(limits);
        }
        if let Some(host) = &self.sandbox {
            runner = runner.sandbox(Arc::clone(host));
        }
        let runner = Arc::new(runner.build());
        let worker = Worker::new(queue.clone(), runner, self.worker.concurrency, GRACE);
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let handle = tokio::spawn(async move { worker.run(stop).await });
        Ok(Fleet {
            queue: queue.clone(),
            store,
            dead: main,
            queue_name: String::new(),
            prefix: String::new(),
            workers: Workers::InProcess { shutdown, handle },
            remote: None,
            worker_command: self.worker,
            poll_every: self.poll_every,
            run_limit: self.run_limit,
        })
    }

    /// RabbitMQ and Redis under a fresh queue name and key prefix, with
    /// `workers` worker processes of the [`FleetBuilder::binary`]. Fails,
    /// saying what to start, when a shared service is down.
    pub async fn distributed(self, workers: usize) -> anyhow::Result<Fleet> {
        if self.worker.amqp_url == AMQP_URL && self.worker.redis_url == REDIS_URL {
            services::check(&Service::FLEET).await?;
        }
        let keyring = match &self.worker.encryption {
            Some((keys, current)) => Some(Arc::new(
                Keyring::parse(keys, Some(current)).context("the fleet's encryption keys")?,
            )),
            None => None,
        };
        let id = uuid::Uuid::new_v4().simple().to_string();
        let queue_name = format!("dftest.{id}");
        let prefix = format!("dftest:{id}");
        let amqp = Arc::new(
            AmqpQueue::connect(AmqpConfig::new(&self.worker.amqp_url, queue_name.clone()))
                .await
                .context("connecting to RabbitMQ")?,
        );
        let interactive = match AmqpQueue::connect(AmqpConfig::new(
            &self.worker.amqp_url,
            interactive_name(&queue_name),
        ))
        .await
        {
            Ok(queue) => Arc::new(queue),
            Err(e) => {
                let _ = amqp.delete_all().await;
                return Err(anyhow::Error::new(e).context("connecting to RabbitMQ"));
            }
        };
        let redis = match RedisStore::connect(&self.worker.redis_url, &prefix).await {
            Ok(redis) => Arc::new(match keyring {
                Some(keyring) => redis.with_keyring(keyring),
                None => redis,
            }),
            Err(e) => {
                let _ = amqp.delete_all().await;
                let _ = interactive.delete_all().await;
                return Err(anyhow::Error::new(e).context("connecting to Redis"));
            }
        };
        let mut fleet = Fleet {
            queue: Arc::new(Lanes::new(amqp.clone(), interactive.clone())),
            store: redis.clone(),
            dead: amqp.clone(),
            queue_name,
            prefix,
            workers: Workers::Processes(Vec::new()),
            remote: Some(Remote {
                amqp,
                interactive,
                redis,
            }),
            worker_command: self.worker,
            poll_every: self.poll_every,
            run_limit: self.run_limit,
        };
        for _ in 0..workers {
            fleet.spawn_worker()?;
        }
        Ok(fleet)
    }

    pub(super) fn provider_configs(&self) -> HashMap<String, ProviderConfig> {
        let mut providers = self.providers.clone();
        if let Some(url) = &self.worker.model_url {
            let openai = ProviderConfig {
                base_url: Some(url.clone()),
                api_key: Some(API_KEY.into()),
                timeout_secs: Some(self.model_timeout_secs),
                http2_prior_knowledge: self.worker.model_http2,
                ..ProviderConfig::default()
            };
            providers.insert("openai".to_owned(), openai);
        }
        providers
    }

    pub(super) fn retries(&self) -> RetryConfig {
        if self.worker.fast_retries {
            RetryConfig {
                max_attempts: 5,
                base_delay: FAST_RETRY_BASE,
                max_delay: FAST_RETRY_MAX,
            }
        } else {
            RetryConfig::default()
        }
    }
}
