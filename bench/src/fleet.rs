//! The fleets under test: embedded (one process, in-memory queue and
//! store) and distributed (worker processes of the release `deepfleet`
//! binary on RabbitMQ and Redis), with submission and result following.
//!
//! A distributed fleet works under its own queue name and key prefix and
//! removes both when it shuts down, so a benchmark never touches another
//! fleet's data on the shared services.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use deepfleet_model::{ProviderConfig, Providers};
use deepfleet_proto::{AgentSpec, ResultLine, TaskLine};
use deepfleet_queue::Queue;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::{BatchFollower, Intake};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::{RetryConfig, StepRunner, Worker};
use futures::StreamExt;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The local RabbitMQ (`scripts/services.sh` starts it).
pub const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// The local Redis.
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// Runs submitted at once: enough to keep both cores busy while the
/// broker confirms each publish.
const SUBMIT_CONCURRENCY: usize = 64;

enum Workers {
    InProcess {
        shutdown: CancellationToken,
        handle: JoinHandle<()>,
    },
    Processes(Vec<Child>),
}

/// A fleet and where its runs are submitted.
pub struct Fleet {
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    key: String,
    workers: Workers,
    amqp: Option<Arc<AmqpQueue>>,
    redis: Option<Arc<RedisStore>>,
    queue_name: String,
    prefix: String,
}

fn openai_at(base_url: &str) -> HashMap<String, ProviderConfig> {
    let config = ProviderConfig {
        base_url: Some(base_url.to_owned()),
        api_key: Some("bench".into()),
        timeout_secs: Some(120),
        ..ProviderConfig::default()
    };
    HashMap::from([("openai".to_owned(), config)])
}

impl Fleet {
    /// One process: an in-memory queue and store, and a worker task
    /// running up to `concurrency` steps at once against `base_url`.
    pub fn embedded(base_url: &str, concurrency: u16) -> anyhow::Result<Fleet> {
        let queue = Arc::new(MemoryQueue::new());
        let store = Arc::new(EmbeddedStore::new());
        let providers = Arc::new(Providers::with_env(openai_at(base_url), |_| None));
        let key = ContextKey::generate_base64();
        let runner = Arc::new(
            StepRunner::new(
                queue.clone(),
                store.clone(),
                providers,
                RetryConfig::default(),
            )
            .with_context_key(ContextKey::from_base64(&key)?),
        );
        let worker = Worker::new(queue.clone(), runner, concurrency, Duration::from_secs(1));
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let handle = tokio::spawn(async move {
            // A memory queue does not fail to consume; if it ever did,
            // the batch would time out and say so.
            let _ = worker.run(stop).await;
        });
        Ok(Fleet {
            queue,
            store,
            key,
            workers: Workers::InProcess { shutdown, handle },
            amqp: None,
            redis: None,
            queue_name: String::new(),
            prefix: String::new(),
        })
    }

    /// RabbitMQ and Redis under a fresh queue name and key prefix, with
    /// no workers yet.
    pub async fn distributed() -> anyhow::Result<Fleet> {
        for (name, addr) in [("RabbitMQ", "127.0.0.1:5672"), ("Redis", "127.0.0.1:6379")] {
            if tokio::net::TcpStream::connect(addr).await.is_err() {
                bail!("{name} is not reachable at {addr}: run `scripts/services.sh` to start it");
            }
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let queue_name = format!("dfbench.{id}");
        let prefix = format!("dfbench:{id}");
        let amqp = Arc::new(
            AmqpQueue::connect(AmqpConfig::new(AMQP_URL, queue_name.clone()))
                .await
                .context("connecting to RabbitMQ")?,
        );
        let redis = Arc::new(
            RedisStore::connect(REDIS_URL, &prefix)
                .await
                .context("connecting to Redis")?,
        );
        Ok(Fleet {
            queue: amqp.clone(),
            store: redis.clone(),
            key: ContextKey::generate_base64(),
            workers: Workers::Processes(Vec::new()),
            amqp: Some(amqp),
            redis: Some(redis),
            queue_name,
            prefix,
        })
    }

    /// Starts `n` worker processes of `binary`, each running up to
    /// `concurrency` steps at once against `base_url`.
    pub fn spawn_workers(
        &mut self,
        binary: &Path,
        n: usize,
        concurrency: u16,
        base_url: &str,
    ) -> anyhow::Result<()> {
        let Workers::Processes(children) = &mut self.workers else {
            bail!("an embedded fleet has no worker processes");
        };
        for _ in 0..n {
            let child = Command::new(binary)
                .args(["worker", "--queue", AMQP_URL, "--store", REDIS_URL])
                .args(["--concurrency", &concurrency.to_string()])
                .env("DEEPFLEET__QUEUE_NAME", &self.queue_name)
                .env("DEEPFLEET__KEY_PREFIX", &self.prefix)
                .env("DEEPFLEET__CONTEXT_KEY", &self.key)
                .env("DEEPFLEET__WORKER__GRACE_SECS", "1")
                .env("OPENAI_BASE_URL", base_url)
                .env("OPENAI_API_KEY", "bench")
                .env("RUST_LOG", "error")
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .with_context(|| format!("starting {}", binary.display()))?;
            children.push(child);
        }
        Ok(())
    }

    /// Process ids of the worker processes.
    pub fn worker_pids(&self) -> Vec<u32> {
        match &self.workers {
            Workers::Processes(children) => children.iter().filter_map(Child::id).collect(),
            Workers::InProcess { .. } => Vec::new(),
        }
    }

    /// Registers `spec` and submits `tasks` as one batch.
    pub async fn submit(
        &self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
    ) -> anyhow::Result<BatchFollower> {
        let intake = Intake::new(self.store.clone(), self.queue.clone());
        intake.register(spec).await?;
        let mut follower = BatchFollower::new(self.store.clone(), uuid::Uuid::new_v4().to_string());
        let batch = follower.batch_id().to_owned();
        let runs: Vec<_> = futures::stream::iter(tasks)
            .map(|task| {
                intake.submit(
                    &spec.name,
                    task,
                    Some(&batch),
                    deepfleet_worker::tokens::count_message,
                )
            })
            .buffer_unordered(SUBMIT_CONCURRENCY)
            .collect()
            .await;
        for run in runs {
            follower.track(&run?);
        }
        Ok(follower)
    }

    /// Submits `tasks` and waits for all of them, for at most `limit`;
    /// returns their result lines in completion order.
    pub async fn run(
        &self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        limit: Duration,
    ) -> anyhow::Result<Vec<ResultLine>> {
        let deadline = tokio::time::Instant::now() + limit;
        let follower = self.submit(spec, tasks).await?;
        follow(follower, deadline).await
    }

    /// Stops the workers and removes the queue and keys it created.
    pub async fn shutdown(self) {
        match self.workers {
            Workers::InProcess { shutdown, handle } => {
                shutdown.cancel();
                let _ = handle.await;
            }
            Workers::Processes(children) => {
                for mut child in children {
                    let _ = child.kill().await;
                }
            }
        }
        if let Some(amqp) = self.amqp {
            let _ = amqp.delete_all().await;
        }
        if let Some(redis) = self.redis {
            let _ = redis.delete_prefix().await;
        }
    }
}

/// Waits for every run `follower` tracks, failing past `deadline`.
pub async fn follow(
    mut follower: BatchFollower,
    deadline: tokio::time::Instant,
) -> anyhow::Result<Vec<ResultLine>> {
    let mut results = Vec::new();
    while follower.remaining() > 0 {
        if tokio::time::Instant::now() > deadline {
            bail!(
                "{} runs did not finish in time ({} did)",
                follower.remaining(),
                results.len()
            );
        }
        let lines = follower.poll().await?;
        if lines.is_empty() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        results.extend(lines);
    }
    Ok(results)
}

/// Fails unless every result is a success with the scenario's answer.
pub fn check(results: &[ResultLine]) -> anyhow::Result<()> {
    for line in results {
        if !crate::scenario::output_ok(&line.id, &line.output) {
            bail!(
                "run {} ended {:?} with {:?} ({:?})",
                line.id,
                line.status,
                line.output,
                line.error
            );
        }
    }
    Ok(())
}

/// Peak resident memory of a process (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM line")?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .context("an empty VmHWM line")?
        .parse()?;
    Ok(kib * 1024)
}
