//! The fleet under test, embedded or distributed, and the `scenario!`
//! macro that runs one case on both.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use deepfleet_model::{ProviderConfig, Providers};
use deepfleet_proto::{AgentSpec, ResultLine, RunRecord, TaskLine};
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_queue::{DeadLetter, DeadLetters, Queue};
use deepfleet_scheduler::{BatchFollower, Intake};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::redis::RedisStore;
use deepfleet_worker::events::{EventSink, NoopSink};
use deepfleet_worker::{RetryConfig, StepRunner, Worker};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

pub const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// The test fleet's key for runtime context, shared by the test process
/// and its worker processes.
pub static CONTEXT_KEY: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(deepfleet_store::sealed::ContextKey::generate_base64);

/// [`CONTEXT_KEY`] as a key.
pub fn context_key() -> deepfleet_store::sealed::ContextKey {
    deepfleet_store::sealed::ContextKey::from_base64(&CONTEXT_KEY).expect("a valid test key")
}

/// Runs a scenario once embedded and once on RabbitMQ + Redis with two
/// worker processes (ripgrep's `rgtest!`, for our two modes).
macro_rules! scenario {
    ($name:ident, |$fleet:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use pretty_assertions::assert_eq;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                #[allow(unused_mut)]
                let mut $fleet = $crate::support::Fleet::embedded().await;
                $body
                $fleet.shutdown().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn distributed() {
                #[allow(unused_mut)]
                let Some(mut $fleet) = $crate::support::Fleet::distributed(2).await else {
                    return;
                };
                $body
                $fleet.shutdown().await;
            }
        }
    };
}
pub(crate) use scenario;

/// Whether a local service is reachable. Under `CI=true` a missing service
/// fails the test, saying what to start; elsewhere the test is skipped
/// with a note.
pub async fn require(name: &str, addr: &str) -> bool {
    if tokio::net::TcpStream::connect(addr).await.is_ok() {
        return true;
    }
    let hint = format!("{name} is not reachable at {addr}: run `scripts/services.sh` to start it");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{hint}");
    }
    eprintln!("skipping: {hint}");
    false
}

enum Workers {
    InProcess {
        shutdown: CancellationToken,
        handle: tokio::task::JoinHandle<()>,
    },
    Processes(Vec<Child>),
}

/// What a batch produced.
pub struct Batch {
    /// Result lines, in task order.
    pub results: Vec<ResultLine>,
    /// The top-level runs, in task order.
    pub runs: Vec<RunRecord>,
    /// Worker processes killed while it ran.
    pub kills: usize,
}

/// A fleet: where runs are submitted and where results are read.
pub struct Fleet {
    pub queue: Arc<dyn Queue>,
    pub store: Arc<dyn Store>,
    dead: Arc<dyn DeadLetters>,
    workers: Workers,
    amqp: Option<Arc<AmqpQueue>>,
    redis: Option<Arc<RedisStore>>,
    pub queue_name: String,
    pub prefix: String,
    model_base_url: Option<String>,
}

impl Fleet {
    /// One process, in-memory queue and store.
    pub async fn embedded() -> Fleet {
        Self::embedded_with(None).await
    }

    /// Embedded, with `openai:` models served at `base_url`.
    pub async fn embedded_with(base_url: Option<String>) -> Fleet {
        Self::embedded_observed(base_url, Arc::new(NoopSink)).await
    }

    /// Embedded, reporting harness events to `events`.
    pub async fn embedded_observed(base_url: Option<String>, events: Arc<dyn EventSink>) -> Fleet {
        let mut providers = HashMap::new();
        if let Some(url) = &base_url {
            providers.insert(
                "openai".to_owned(),
                ProviderConfig {
                    base_url: Some(url.clone()),
                    api_key: Some("test-key".into()),
                    timeout_secs: Some(30),
                    ..ProviderConfig::default()
                },
            );
        }
        let mut fleet = Self::embedded_providers(providers, events).await;
        fleet.model_base_url = base_url;
        fleet
    }

    /// Embedded, with the given provider configs (no environment).
    pub async fn embedded_providers(
        providers: HashMap<String, ProviderConfig>,
        events: Arc<dyn EventSink>,
    ) -> Fleet {
        // What `main` does for the binary: HTTP clients need a TLS provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let queue = Arc::new(MemoryQueue::new());
        let store = Arc::new(EmbeddedStore::new());
        let providers = Arc::new(deepfleet_replay::register(Providers::with_env(
            providers,
            |_| None,
        )));
        let runner = Arc::new(
            StepRunner::new(queue.clone(), store.clone(), providers, fast_retries())
                .with_events(events)
                .with_context_key(context_key()),
        );
        let worker = Worker::new(queue.clone(), runner, 32, Duration::from_secs(1));
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let handle = tokio::spawn(async move {
            worker.run(stop).await.expect("embedded worker failed");
        });
        Fleet {
            dead: queue.clone(),
            queue,
            store,
            workers: Workers::InProcess { shutdown, handle },
            amqp: None,
            redis: None,
            queue_name: String::new(),
            prefix: String::new(),
            model_base_url: None,
        }
    }

    /// RabbitMQ + Redis with `workers` worker processes; `None` when the
    /// services are missing outside CI.
    pub async fn distributed(workers: usize) -> Option<Fleet> {
        Self::distributed_with(workers, None).await
    }

    /// Distributed, with `openai:` models served at `base_url`.
    pub async fn distributed_with(workers: usize, base_url: Option<String>) -> Option<Fleet> {
        if !require("RabbitMQ", "127.0.0.1:5672").await || !require("Redis", "127.0.0.1:6379").await
        {
            return None;
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let queue_name = format!("dftest.{id}");
        let prefix = format!("dftest:{id}");
        let amqp = Arc::new(
            AmqpQueue::connect(AmqpConfig::new(AMQP_URL, queue_name.clone()))
                .await
                .expect("connecting to RabbitMQ"),
        );
        let redis = Arc::new(
            RedisStore::connect(REDIS_URL, &prefix)
                .await
                .expect("connecting to Redis"),
        );
        let mut fleet = Fleet {
            queue: amqp.clone(),
            dead: amqp.clone(),
            store: redis.clone(),
            workers: Workers::Processes(Vec::new()),
            amqp: Some(amqp),
            redis: Some(redis),
            queue_name,
            prefix,
            model_base_url: base_url,
        };
        for _ in 0..workers {
            fleet.spawn_worker();
        }
        Some(fleet)
    }

    /// Starts one more worker process (distributed mode only).
    pub fn spawn_worker(&mut self) {
        let child = worker_command(
            &self.queue_name,
            &self.prefix,
            self.model_base_url.as_deref(),
        )
        .spawn()
        .expect("spawning a worker process");
        if let Workers::Processes(children) = &mut self.workers {
            children.push(child);
        }
    }

    /// Starts one more worker process with extra flags and environment.
    pub fn spawn_worker_with(&mut self, args: &[&str], env: &[(&str, &str)]) {
        let mut cmd = worker_command(
            &self.queue_name,
            &self.prefix,
            self.model_base_url.as_deref(),
        );
        cmd.args(args).envs(env.iter().copied());
        let child = cmd.spawn().expect("spawning a worker process");
        if let Workers::Processes(children) = &mut self.workers {
            children.push(child);
        }
    }

    /// Kills worker `i` with SIGKILL and starts a replacement.
    pub async fn kill_worker(&mut self, i: usize) {
        if let Workers::Processes(children) = &mut self.workers {
            let i = i % children.len();
            children[i].kill().await.expect("killing a worker");
            children[i] = worker_command(
                &self.queue_name,
                &self.prefix,
                self.model_base_url.as_deref(),
            )
            .spawn()
            .expect("respawning a worker");
        }
    }

    /// Sends SIGTERM to worker `i` and waits for it to exit; returns how
    /// long that took.
    pub async fn terminate_worker(&mut self, i: usize) -> Duration {
        let Workers::Processes(children) = &mut self.workers else {
            panic!("only worker processes can be terminated");
        };
        let child = &mut children[i];
        let pid = child.id().expect("a running worker").to_string();
        let started = tokio::time::Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .await
            .unwrap();
        assert!(sent.success(), "kill -TERM {pid} failed");
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the worker did not exit after SIGTERM")
            .unwrap();
        assert!(status.success(), "the worker exited with {status}");
        started.elapsed()
    }

    /// Submits `tasks` without waiting for them; returns the follower of
    /// their batch and the runs, in task order.
    pub async fn submit(
        &self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
    ) -> (BatchFollower, Vec<RunRecord>) {
        let intake = self.intake(spec).await;
        let mut follower = BatchFollower::new(self.store.clone(), uuid::Uuid::new_v4().to_string());
        let mut runs = Vec::new();
        for task in tasks {
            runs.push(submit_one(&intake, spec, task, &mut follower).await);
        }
        (follower, runs)
    }

    /// Intake for this fleet, with `spec` registered.
    async fn intake(&self, spec: &AgentSpec) -> Intake {
        let intake =
            Intake::new(self.store.clone(), self.queue.clone()).with_context_key(context_key());
        intake.register(spec).await.expect("registering the spec");
        intake
    }

    /// Runs `tasks` of `spec` to the end; results in task order.
    pub async fn run(&mut self, spec: &AgentSpec, tasks: &[TaskLine]) -> Vec<ResultLine> {
        self.run_batch(spec, tasks).await.results
    }

    /// Runs `tasks` of `spec` to the end; the results and the runs.
    pub async fn run_batch(&mut self, spec: &AgentSpec, tasks: &[TaskLine]) -> Batch {
        self.follow(spec, tasks, None).await
    }

    /// Like [`Fleet::run_batch`], SIGKILLing a worker process (and starting
    /// a replacement) every `every` while runs remain, so kills land in the
    /// middle of steps whatever the batch's pace.
    pub async fn run_killing(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        every: Duration,
    ) -> Batch {
        self.follow(spec, tasks, Some(every)).await
    }

    async fn follow(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        kill_every: Option<Duration>,
    ) -> Batch {
        let intake = self.intake(spec).await;
        let mut follower = BatchFollower::new(self.store.clone(), uuid::Uuid::new_v4().to_string());
        let mut runs = Vec::new();
        let mut kills = 0;
        let mut last_kill = tokio::time::Instant::now();
        // Kills start while the batch is still being submitted: a fast fleet
        // finishes runs as they come in.
        for task in tasks {
            runs.push(submit_one(&intake, spec, task, &mut follower).await);
            if let Some(every) = kill_every
                && last_kill.elapsed() >= every
            {
                self.kill_worker(kills).await;
                kills += 1;
                last_kill = tokio::time::Instant::now();
            }
        }
        let mut results = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
        while follower.remaining() > 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} of {} runs did not finish in time",
                follower.remaining(),
                tasks.len()
            );
            let lines = follower.poll().await.expect("polling results");
            if lines.is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            results.extend(lines);
            if let Some(every) = kill_every
                && last_kill.elapsed() >= every
                && follower.remaining() > 0
            {
                self.kill_worker(kills).await;
                kills += 1;
                last_kill = tokio::time::Instant::now();
            }
        }
        let order: HashMap<&str, usize> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        results.sort_by_key(|r| order.get(r.id.as_str()).copied().unwrap_or(usize::MAX));
        Batch {
            results,
            runs,
            kills,
        }
    }

    /// Waits until at least `n` messages were dead-lettered; returns them.
    pub async fn wait_dead_letters(&self, n: usize) -> Vec<DeadLetter> {
        let mut dead = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while dead.len() < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no dead letter arrived"
            );
            dead.extend(
                self.dead
                    .drain_dead_letters(n)
                    .await
                    .expect("reading dead letters"),
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        dead
    }

    /// Stops the workers and removes everything the fleet created.
    pub async fn shutdown(mut self) {
        match std::mem::replace(&mut self.workers, Workers::Processes(Vec::new())) {
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
        if let Some(amqp) = self.amqp.take() {
            let _ = amqp.delete_all().await;
        }
        if let Some(redis) = self.redis.take() {
            let _ = redis.delete_prefix().await;
        }
    }
}

/// A scenario that panics never reaches [`Fleet::shutdown`]: remove its
/// queues and keys anyway, on a runtime of its own (the test's may be
/// unwinding). Worker processes die with their handles (`kill_on_drop`).
impl Drop for Fleet {
    fn drop(&mut self) {
        let (amqp, redis) = (self.amqp.take(), self.redis.take());
        if amqp.is_none() && redis.is_none() {
            return;
        }
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Runtime::new() else {
                return;
            };
            // Bounded: the connections may depend on the test's runtime.
            let work = async {
                if let Some(amqp) = amqp {
                    let _ = amqp.delete_all().await;
                }
                if let Some(redis) = redis {
                    let _ = redis.delete_prefix().await;
                }
            };
            let _ = runtime
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), work).await });
        });
        let _ = cleanup.join();
    }
}

/// Submits one task of a batch and tracks its run.
async fn submit_one(
    intake: &Intake,
    spec: &AgentSpec,
    task: &TaskLine,
    follower: &mut BatchFollower,
) -> RunRecord {
    let run = intake
        .submit(
            &spec.name,
            task,
            Some(follower.batch_id()),
            deepfleet_worker::tokens::count_message,
        )
        .await
        .expect("submitting a task");
    follower.track(&run);
    run
}

fn worker_command(queue_name: &str, prefix: &str, base_url: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_deepfleet"));
    cmd.args([
        "worker",
        "--queue",
        AMQP_URL,
        "--store",
        REDIS_URL,
        "--concurrency",
        "32",
    ])
    .env("DEEPFLEET__QUEUE_NAME", queue_name)
    .env("DEEPFLEET__KEY_PREFIX", prefix)
    .env("DEEPFLEET__CONTEXT_KEY", CONTEXT_KEY.as_str())
    .env("DEEPFLEET__WORKER__GRACE_SECS", "1")
    // Short backoffs, so retry scenarios finish quickly.
    .env("DEEPFLEET__WORKER__RETRY_BASE_MS", "20")
    .env("DEEPFLEET__WORKER__RETRY_MAX_MS", "200")
    .env("RUST_LOG", "warn")
    .env_remove("OPENAI_BASE_URL")
    .env_remove("OPENAI_API_KEY")
    .stdout(Stdio::null())
    .stderr(Stdio::inherit())
    .kill_on_drop(true);
    if let Some(url) = base_url {
        cmd.env("OPENAI_BASE_URL", url)
            .env("OPENAI_API_KEY", "test-key");
    }
    cmd
}

/// Short backoffs, so retry scenarios finish quickly.
fn fast_retries() -> RetryConfig {
    RetryConfig {
        max_attempts: 5,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(200),
    }
}

/// Writes a replay script and returns the spec's `model` string for it.
pub fn replay_model(dir: &Path, script: &str) -> String {
    let path = dir.join("script.yaml");
    std::fs::write(&path, script).expect("writing the script");
    format!("replay:{}", path.display())
}

/// A spec with `model` and defaults, tweaked by `yaml_extra` (YAML lines).
pub fn spec(name: &str, model: &str, yaml_extra: &str) -> AgentSpec {
    AgentSpec::from_yaml(&format!("name: {name}\nmodel: '{model}'\n{yaml_extra}"))
        .expect("a valid spec")
}

/// A task with no seed files.
pub fn task(id: &str, input: &str) -> TaskLine {
    TaskLine {
        id: id.into(),
        input: input.into(),
        context: None,
        files: None,
        state: None,
    }
}
