//! A fleet's workers: a task of the test process (embedded) or worker
//! processes of the `deepfleet` binary (distributed), and the command that
//! starts one.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use deepfleet_model::ratelimit::Limits;
use deepfleet_proto::InputLimits;
use deepfleet_queue::QueueError;
use deepfleet_worker::TimeLimits;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The API key the fleet's `openai:` models send (the scripted server
/// takes any).
pub const API_KEY: &str = "test-key";

/// First backoff of a fleet built with `fast_retries`.
pub const FAST_RETRY_BASE: Duration = Duration::from_millis(20);
/// Longest backoff of a fleet built with `fast_retries`.
pub const FAST_RETRY_MAX: Duration = Duration::from_millis(200);

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
    /// The broker and the store the fleet runs on.
    pub(super) amqp_url: String,
    pub(super) redis_url: String,
    pub(super) concurrency: u16,
    pub(super) model_url: Option<String>,
    /// Whether the `openai:` provider speaks HTTP/2 by prior knowledge.
    pub(super) model_http2: bool,
    pub(super) context_key: String,
    /// Encryption at rest: the keys (`kid:base64,...`) and the current id.
    pub(super) encryption: Option<(String, String)>,
    pub(super) log_level: String,
    pub(super) fast_retries: bool,
    /// Step and tool-call limits, when not the defaults (whole seconds
    /// for worker processes).
    pub(super) time_limits: Option<TimeLimits>,
    /// File limits of the agents' tools, when not the defaults.
    pub(super) file_limits: Option<InputLimits>,
    /// The fleet-wide rate limiter's default limits, when set.
    pub(super) rate_limits: Option<Limits>,
}

impl WorkerCommand {
    /// `deepfleet worker` on the fleet's queue and key prefix. Output is
    /// discarded, logs go to the test's stderr, and the process dies with
    /// its handle.
    pub(super) fn command(&self, queue_name: &str, prefix: &str) -> anyhow::Result<Command> {
        let binary = self
            .binary
            .as_ref()
            .context("no `deepfleet` binary to run worker processes of (FleetBuilder::binary)")?;
        let mut cmd = Command::new(binary);
        cmd.args([
            "worker",
            "--queue",
            &self.amqp_url,
            "--store",
            &self.redis_url,
        ])
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
        if let Some(limits) = self.time_limits {
            cmd.env(
                "DEEPFLEET__WORKER__STEP_TIMEOUT_SECS",
                limits.step.as_secs().max(1).to_string(),
            )
            .env(
                "DEEPFLEET__WORKER__TOOL_TIMEOUT_SECS",
                limits.tool_call.as_secs().max(1).to_string(),
            );
        }
        if let Some(limits) = self.file_limits {
            cmd.env(
                "DEEPFLEET__LIMITS__MAX_FILE_BYTES",
                limits.max_file_bytes.to_string(),
            )
            .env(
                "DEEPFLEET__LIMITS__MAX_FILES_PER_THREAD",
                limits.max_files_per_thread.to_string(),
            );
        }
        if let Some(limits) = self.rate_limits {
            let names = [
                "REQUESTS_PER_MINUTE",
                "TOKENS_PER_MINUTE",
                "INPUT_TOKENS_PER_MINUTE",
                "OUTPUT_TOKENS_PER_MINUTE",
            ];
            for (name, limit) in names.into_iter().zip(limits.as_array()) {
                if let Some(limit) = limit {
                    cmd.env(
                        format!("DEEPFLEET__RATE_LIMITS__DEFAULT__{name}"),
                        limit.to_string(),
                    );
                }
            }
        }
        if let Some((keys, current)) = &self.encryption {
            cmd.env("DEEPFLEET__ENCRYPTION__KEYS", keys)
                .env("DEEPFLEET__ENCRYPTION__CURRENT", current);
        }
        if let Some(url) = &self.model_url {
            cmd.env("OPENAI_BASE_URL", url)
                .env("OPENAI_API_KEY", API_KEY);
        }
        if self.model_http2 {
            cmd.env(
                "DEEPFLEET__PROVIDERS__OPENAI__HTTP2_PRIOR_KNOWLEDGE",
                "true",
            );
        }
        Ok(cmd)
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
