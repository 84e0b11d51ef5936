//! A fleet's workers: a task of the test process (embedded) or worker
//! processes of the `deepfleet` binary (distributed), started, killed and
//! stopped by the test.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use deepfleet_queue::QueueError;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Fleet;
use super::builder::API_KEY;
use super::services::{AMQP_URL, REDIS_URL};

/// First backoff of a fleet built with `fast_retries`.
pub const FAST_RETRY_BASE: Duration = Duration::from_millis(20);
/// Longest backoff of a fleet built with `fast_retries`.
pub const FAST_RETRY_MAX: Duration = Duration::from_millis(200);

/// How long a worker process may take to exit after SIGTERM.
const TERM_LIMIT: Duration = Duration::from_secs(30);

pub(super) enum Workers {
    InProcess {
        shutdown: CancellationToken,
        handle: JoinHandle<Result<(), QueueError>>,
    },
    Processes(Vec<Child>),
}

/// What a worker process is started with.
pub(super) struct WorkerCommand {
    pub(super) binary: Option<PathBuf>,
    pub(super) concurrency: u16,
    pub(super) model_url: Option<String>,
    pub(super) context_key: String,
    pub(super) log_level: String,
    pub(super) fast_retries: bool,
}

impl WorkerCommand {
    /// `deepfleet worker` on the fleet's queue and key prefix. Output is
    /// discarded, logs go to the test's stderr, and the process dies with
    /// its handle.
    fn command(&self, queue_name: &str, prefix: &str) -> anyhow::Result<Command> {
        let binary = self
            .binary
            .as_ref()
            .context("no `deepfleet` binary to run worker processes of (FleetBuilder::binary)")?;
        let mut cmd = Command::new(binary);
        cmd.args(["worker", "--queue", AMQP_URL, "--store", REDIS_URL])
            .args(["--concurrency", &self.concurrency.to_string()])
            .env("DEEPFLEET__QUEUE_NAME", queue_name)
            .env("DEEPFLEET__KEY_PREFIX", prefix)
            .env("DEEPFLEET__CONTEXT_KEY", &self.context_key)
            .env("DEEPFLEET__WORKER__GRACE_SECS", "1")
            .env("RUST_LOG", &self.log_level)
            .env_remove("OPENAI_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if self.fast_retries {
            cmd.env(
                "DEEPFLEET__WORKER__RETRY_BASE_MS",
                FAST_RETRY_BASE.as_millis().to_string(),
            )
            .env(
                "DEEPFLEET__WORKER__RETRY_MAX_MS",
                FAST_RETRY_MAX.as_millis().to_string(),
            );
        }
        if let Some(url) = &self.model_url {
            cmd.env("OPENAI_BASE_URL", url)
                .env("OPENAI_API_KEY", API_KEY);
        }
        Ok(cmd)
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
}

/// Stops `workers`: an embedded worker finishes what it holds, processes
/// are killed. Returns the embedded worker's failure, if it had one.
pub(super) async fn stop(workers: Workers) -> anyhow::Result<()> {
    match workers {
        Workers::InProcess { shutdown, handle } => {
            shutdown.cancel();
            handle
                .await
                .context("the embedded worker panicked")?
                .context("the embedded worker failed")
        }
        Workers::Processes(children) => {
            for mut child in children {
                let _ = child.kill().await;
            }
            Ok(())
        }
    }
}
