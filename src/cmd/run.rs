//! `deepfleet run`: a batch in this process, with no servers.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use deepfleet_model::Providers;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_worker::{RetryConfig, StepRunner, Worker};
use tokio_util::sync::CancellationToken;

use crate::batch_io::{load_spec, read_tasks};
use crate::settings::Settings;

/// Arguments of `deepfleet run`.
#[derive(Args)]
pub struct RunArgs {
    /// Tasks, one JSON object per line.
    tasks: PathBuf,
    /// The agent spec (YAML).
    #[arg(long)]
    agent: PathBuf,
    /// Steps run at once.
    #[arg(long, default_value_t = 16)]
    concurrency: u16,
    /// Where result lines go.
    #[arg(long, default_value = "results.jsonl")]
    out: PathBuf,
    /// Use this model (`provider:model`) instead of the spec's.
    #[arg(long)]
    model: Option<String>,
}

pub async fn run(args: RunArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let spec = load_spec(&args.agent, args.model.as_deref())?;
    let tasks = read_tasks(&args.tasks)?;
    let queue = Arc::new(MemoryQueue::new());
    let store = Arc::new(EmbeddedStore::new());
    let providers = Arc::new(Providers::new(settings.providers.clone()));
    let retry = RetryConfig {
        max_attempts: settings.worker.max_attempts,
        ..RetryConfig::default()
    };
    let runner = Arc::new(StepRunner::new(
        queue.clone(),
        store.clone(),
        providers,
        retry,
    ));
    let worker = Worker::new(
        queue.clone(),
        runner,
        args.concurrency,
        Duration::from_secs(1),
    );
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let handle = tokio::spawn(async move { worker.run(stop).await });
    let code = super::batch::run_batch(queue, store, &spec, &tasks, &args.out).await;
    shutdown.cancel();
    handle.await??;
    code
}
