//! `deepfleet submit`: enqueue a batch into a running fleet and follow it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;

use super::batch::BatchPlan;
use super::consumer_watch::ConsumerWatch;
use crate::batch_io::read_tasks;
use crate::settings::Settings;

/// Arguments of `deepfleet submit`.
#[derive(Args)]
pub struct SubmitArgs {
    /// Tasks, one JSON object per line.
    tasks: PathBuf,
    /// The agent spec (YAML).
    #[arg(long)]
    agent: PathBuf,
    /// RabbitMQ URL.
    #[arg(long)]
    queue: Option<String>,
    /// Redis URL (`redis://...`, or `redis+cluster://h1:p1,h2:p2`).
    #[arg(long)]
    store: Option<String>,
    /// Where result lines go.
    #[arg(long, default_value = "results.jsonl")]
    out: PathBuf,
    /// Use this model (`provider:model`) instead of the spec's.
    #[arg(long)]
    model: Option<String>,
    /// Start the batch over even if `--out` holds an unfinished one (an
    /// interrupted submit of it), replacing its results; its runs still
    /// going in the fleet are no longer followed.
    #[arg(long)]
    fresh: bool,
}

pub async fn run(args: SubmitArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let spec = super::load_checked_spec(&args.agent, args.model.as_deref(), &settings)?;
    let tasks = read_tasks(&args.tasks)?;
    let (queue, store) = super::connect_fleet(args.queue, args.store, &settings).await?;
    let key = settings.context_key()?;
    // Without a worker on the queue the batch would wait without a word.
    let watch = ConsumerWatch::start(Arc::clone(&queue), settings.queue_name.clone());
    let plan = BatchPlan {
        spec: &spec,
        tasks: &tasks,
        out: &args.out,
        fresh: args.fresh,
        state_file: None,
    };
    let outcome = super::batch::run_batch(queue, store, plan, key, None).await;
    watch.finish().await;
    outcome
}
