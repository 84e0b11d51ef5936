//! `deepfleet resume`: answer a run that waits for a human decision.
//!
//! With `--state FILE` (embedded mode) it reopens the store `deepfleet run
//! --state FILE` left, applies the decisions, drives that run (and any
//! work the earlier process left queued) to the end and appends the
//! task's result line. Against a fleet (`--queue`/`--store`) it records the
//! decisions and publishes the run's next step; the fleet's workers do
//! the rest.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Args;
use deepfleet_proto::{Decision, RunRecord};
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::BatchFollower;
use deepfleet_scheduler::resume::{resume, root_of};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::sealed::ContextKey;

use crate::cmd::batch::{Finished, follow};
use crate::cmd::signals::Interrupt;
use crate::results_file::ResultsFile;
use crate::settings::Settings;

/// Arguments of `deepfleet resume`.
#[derive(Args)]
pub struct ResumeArgs {
    /// The interrupted run (a result line's `review.run_id`).
    #[arg(long)]
    run: String,
    /// A JSON file holding the decisions: an array with one decision per
    /// action request, in order (`{"type": "approve"}`, `{"type": "edit",
    /// "edited_action": {"name", "args"}}`, `{"type": "reject", "message"}`,
    /// `{"type": "respond", "message"}`).
    #[arg(long)]
    decisions: PathBuf,
    /// Embedded mode: the state file written by `deepfleet run --state`.
    #[arg(long, conflicts_with_all = ["queue", "store"])]
    state: Option<PathBuf>,
    /// RabbitMQ URL of a fleet (default: the `queue` setting,
    /// `DEEPFLEET__QUEUE`).
    #[arg(long)]
    queue: Option<String>,
    /// Redis URL of a fleet (default: the `store` setting,
    /// `DEEPFLEET__STORE`).
    #[arg(long)]
    store: Option<String>,
    /// Embedded mode: where the result line is appended.
    #[arg(long, default_value = "results.jsonl")]
    out: PathBuf,
    /// Embedded mode: steps run at once.
    #[arg(long, default_value_t = 16)]
    concurrency: u16,
}

pub async fn run(args: ResumeArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    let decisions = read_decisions(&args.decisions)?;
    match args.state.clone() {
        Some(state) => embedded(args, &state, decisions, settings).await,
        None => {
            let (queue, store) =
                super::connect_fleet(args.queue.clone(), args.store.clone(), &settings).await?;
            let run = find(store.as_ref(), &args.run).await?;
            resume(
                store.as_ref(),
                queue.as_ref(),
                &run.thread_id,
                &run.run_id,
                decisions,
            )
            .await?;
            println!(
                "resumed run {}; the fleet's workers continue it",
                run.run_id
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Reads a decisions file: a JSON array of decisions.
fn read_decisions(path: &Path) -> anyhow::Result<Vec<Decision>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading decisions from {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: expected a JSON array of decisions such as [{{\"type\": \"approve\"}}]",
            path.display()
        )
    })
}

async fn find(store: &dyn Store, run_id: &str) -> anyhow::Result<RunRecord> {
    store
        .find_run(run_id)
        .await?
        .with_context(|| format!("no run {run_id} in the store"))
}

async fn embedded(
    args: ResumeArgs,
    state: &Path,
    decisions: Vec<Decision>,
    settings: Settings,
) -> anyhow::Result<ExitCode> {
    if !state.exists() {
        bail!(
            "no state file at {}: resume needs the file `deepfleet run --state` wrote",
            state.display()
        );
    }
    let store = Arc::new(
        EmbeddedStore::open_with(state, settings.encryption.keyring()?)
            .with_context(|| format!("opening the state file {}", state.display()))?,
    );
    let run = find(store.as_ref(), &args.run).await?;
    let key = match settings.context_key()? {
        Some(key) => key,
        None if run.context.is_some() => bail!(
            "run {} holds a sealed runtime context: set the context_key `deepfleet run` used \
             (DEEPFLEET__CONTEXT_KEY)",
            run.run_id
        ),
        None => ContextKey::generate(),
    };
    let root = root_of(store.as_ref(), &run)
        .await?
        .with_context(|| format!("run {} has no top-level run in the store", run.run_id))?;
    let batch = root
        .batch_id
        .clone()
        .with_context(|| format!("run {} belongs to no batch", root.run_id))?;

    let queue = Arc::new(MemoryQueue::new());
    let runner = crate::cmd::step_runner(queue.clone(), store.clone(), &settings, key, None);
    let worker = crate::cmd::EmbeddedWorker::start(queue.clone(), runner, args.concurrency);

    let mut follower = BatchFollower::new(store.clone(), &batch);
    follower.track(&root);
    for pending in crate::cmd::recover::republish_steps(&store, queue.as_ref()).await? {
        if pending.parent.is_none() && pending.batch_id.as_deref() == Some(batch.as_str()) {
            follower.track(&pending);
        }
    }
    let resumed = resume(
        store.as_ref(),
        queue.as_ref() as &dyn Queue,
        &run.thread_id,
        &run.run_id,
        decisions,
    )
    .await;
    let code = match resumed {
        Ok(_) => follow_resumed(&mut follower, &args.out, state).await,
        Err(e) => Err(e.into()),
    };
    worker.stop().await?;
    store.flush()?;
    code
}

/// Follows the resumed batch until its tracked runs finish or park again,
/// appending their result lines to `out`. SIGINT or SIGTERM stops it
/// early; the runs left go on at the next `resume` of this state file.
async fn follow_resumed(
    follower: &mut BatchFollower,
    out: &Path,
    state: &Path,
) -> anyhow::Result<ExitCode> {
    let mut results = ResultsFile::append(out)?;
    let interrupt = Interrupt::install()?;
    let started = Instant::now();
    let mut finished = Finished::default();
    follow(
        follower,
        &mut results,
        &mut finished,
        None,
        interrupt.token(),
    )
    .await?;
    results.sync()?;
    finished.report(started, out, " (appended)", Some(state));
    Ok(interrupt
        .exit_code()
        .unwrap_or_else(|| finished.exit_code()))
}
