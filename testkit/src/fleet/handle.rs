//! The handle on a running fleet: its queue and store, its workers, and
//! removing what it created on the shared services.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use deepfleet_queue::amqp::AmqpQueue;
use deepfleet_queue::{DeadLetter, DeadLetters, Queue};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;
use tokio::process::{Child, Command};

use super::workers::{WorkerCommand, Workers, stop};

/// How long a worker process may take to exit after SIGTERM.
const TERM_LIMIT: Duration = Duration::from_secs(30);
/// How long cleaning up after a dropped fleet may take.
const CLEANUP_LIMIT: Duration = Duration::from_secs(10);

/// A fleet: where runs are submitted and where results are read. Built by
/// [`FleetBuilder`](super::FleetBuilder).
pub struct Fleet {
    /// Where step messages go.
    pub queue: Arc<dyn Queue>,
    /// Runs, threads and results.
    pub store: Arc<dyn Store>,
    pub(super) dead: Arc<dyn DeadLetters>,
    /// The step queue's name (empty when embedded).
    pub queue_name: String,
    /// The store's key prefix (empty when embedded).
    pub prefix: String,
    pub(super) workers: Workers,
    /// What to remove at the end (distributed only).
    pub(super) remote: Option<Remote>,
    pub(super) worker_command: WorkerCommand,
    pub(super) poll_every: Duration,
    pub(super) run_limit: Duration,
}

/// What a distributed fleet created on the shared services.
pub(super) struct Remote {
    pub(super) amqp: Arc<AmqpQueue>,
    /// The interactive lane's queue.
    pub(super) interactive: Arc<AmqpQueue>,
    pub(super) redis: Arc<RedisStore>,
}

impl Remote {
    async fn delete(self) {
        let _ = self.amqp.delete_all().await;
        let _ = self.interactive.delete_all().await;
        let _ = self.redis.delete_prefix().await;
    }
}

impl Fleet {
    /// Starts one more worker process (distributed mode only).
    pub fn spawn_worker(&mut self) -> anyhow::Result<()> {
        self.spawn_worker_with(&[], &[])
    }

    /// Starts `n` more worker processes.
    pub fn spawn_workers(&mut self, n: usize) -> anyhow::Result<()> {
        (0..n).try_for_each(|_| self.spawn_worker())
    }

    /// Starts one more worker process with extra flags and environment.
    pub fn spawn_worker_with(&mut self, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<()> {
        let child = self.worker_process(args, env)?;
        self.processes()?.push(child);
        Ok(())
    }

    /// Kills worker `i` (modulo their number) with SIGKILL and starts a
    /// replacement.
    pub async fn kill_worker(&mut self, i: usize) -> anyhow::Result<()> {
        let children = self.processes()?;
        ensure!(!children.is_empty(), "the fleet has no worker to kill");
        let i = i % children.len();
        children[i].kill().await.context("killing a worker")?;
        let replacement = self.worker_process(&[], &[])?;
        self.processes()?[i] = replacement;
        Ok(())
    }

    /// Sends `signal` (`STOP` to freeze it, `CONT` to let it go on) to
    /// worker process `i` (modulo their number).
    pub async fn signal_worker(&mut self, i: usize, signal: &str) -> anyhow::Result<()> {
        let children = self.processes()?;
        ensure!(!children.is_empty(), "the fleet has no worker");
        let n = children.len();
        let pid = children[i % n]
            .id()
            .context("the worker is not running")?
            .to_string();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .await?;
        ensure!(sent.success(), "kill -{signal} {pid} failed");
        Ok(())
    }

    /// Starts a replacement for each worker process that exited by itself,
    /// as Kubernetes restarts a pod; returns how many had exited.
    pub fn replace_exited_workers(&mut self) -> anyhow::Result<usize> {
        let mut exited = Vec::new();
        for (i, child) in self.processes()?.iter_mut().enumerate() {
            if child.try_wait()?.is_some() {
                exited.push(i);
            }
        }
        for &i in &exited {
            let replacement = self.worker_process(&[], &[])?;
            self.processes()?[i] = replacement;
        }
        Ok(exited.len())
    }

    /// Removes and returns up to `max` dead letters.
    pub async fn drain_dead_letters(&self, max: usize) -> anyhow::Result<Vec<DeadLetter>> {
        Ok(self.dead.drain_dead_letters(max).await?)
    }

    /// Whether at least `n` consumers are attached to the step queue (each
    /// worker process attaches one once it is ready, more with a
    /// concurrency past what one channel holds); `false` while the broker
    /// cannot tell.
    pub async fn consumers_at_least(&self, n: usize) -> bool {
        match self.queue.consumers().await {
            Ok(Some(count)) => usize::try_from(count).is_ok_and(|count| count >= n),
            Ok(None) | Err(_) => false,
        }
    }

    /// Sends SIGTERM to worker `i` and waits for it to exit successfully;
    /// returns how long that took.
    pub async fn terminate_worker(&mut self, i: usize) -> anyhow::Result<Duration> {
        let child = self
            .processes()?
            .get_mut(i)
            .with_context(|| format!("no worker {i}"))?;
        let pid = child.id().context("the worker is not running")?.to_string();
        let started = tokio::time::Instant::now();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().await?;
        ensure!(sent.success(), "kill -TERM {pid} failed");
        let status = tokio::time::timeout(TERM_LIMIT, child.wait())
            .await
            .context("the worker did not exit after SIGTERM")??;
        ensure!(status.success(), "the worker exited with {status}");
        Ok(started.elapsed())
    }

    /// Process ids of the worker processes (none when embedded).
    pub fn worker_pids(&self) -> Vec<u32> {
        match &self.workers {
            Workers::Processes(children) => children.iter().filter_map(Child::id).collect(),
            Workers::InProcess { .. } => Vec::new(),
        }
    }

    /// The command that starts a worker process of this fleet, for a test
    /// that runs one itself (to read its logs, say).
    pub fn worker_command(&self) -> anyhow::Result<Command> {
        self.worker_command.command(&self.queue_name, &self.prefix)
    }

    fn worker_process(&self, args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Child> {
        let mut cmd = self.worker_command()?;
        cmd.args(args).envs(env.iter().copied());
        cmd.spawn().context("starting a worker process")
    }

    fn processes(&mut self) -> anyhow::Result<&mut Vec<Child>> {
        match &mut self.workers {
            Workers::Processes(children) => Ok(children),
            Workers::InProcess { .. } => bail!("an embedded fleet has no worker processes"),
        }
    }

    /// Stops the workers and removes everything the fleet created; fails
    /// if the embedded worker failed while it ran.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        let workers = std::mem::replace(&mut self.workers, Workers::Processes(Vec::new()));
        let stopped = stop(workers).await;
        if let Some(remote) = self.remote.take() {
            remote.delete().await;
        }
        stopped
    }
}

/// A test that fails never reaches [`Fleet::shutdown`]: remove its queues
/// and keys anyway, on a runtime of its own (the test's may be
/// unwinding). Worker processes die with their handles (`kill_on_drop`);
/// an embedded worker is told to stop.
impl Drop for Fleet {
    fn drop(&mut self) {
        if let Workers::InProcess { shutdown, .. } = &self.workers {
            shutdown.cancel();
        }
        let Some(remote) = self.remote.take() else {
            return;
        };
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Runtime::new() else {
                return;
            };
            // Bounded: the connections may depend on the test's runtime.
            // The timer must be made inside the runtime, not before it.
            let _ = runtime
                .block_on(async { tokio::time::timeout(CLEANUP_LIMIT, remote.delete()).await });
        });
        let _ = cleanup.join();
    }
}
