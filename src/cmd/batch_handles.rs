//! `deepfleet batch status|follow|cancel|results ID`: a submitted batch
//! handled by its id alone, from any process (the one that submitted it
//! may be gone): counted, followed into a results file, cancelled.
//!
//! Following writes each task's result line once: the lines a results
//! file holds already (an interrupted `submit` or `follow` wrote them)
//! are kept, and their tasks get no second one.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use deepfleet_scheduler::{BatchFollower, TaskBatchCounts, TaskBatches};
use deepfleet_store::Store;

use super::batch::{Finished, follow};
use super::signals::Interrupt;
use crate::settings::Settings;
use crate::unfinished_batch::UnfinishedBatch;

/// Arguments of `deepfleet batch`.
#[derive(Args)]
pub struct BatchArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Count the batch's tasks by their run's status.
    Status {
        #[command(flatten)]
        batch: Handle,
        /// Print the counts as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Follow the batch to its end, writing each task's result line once.
    Follow {
        #[command(flatten)]
        batch: Handle,
        /// Where result lines go; the lines it holds already are kept.
        #[arg(long, default_value = "results.jsonl")]
        out: PathBuf,
    },
    /// Write the result lines of the tasks that have ended, and exit.
    Results {
        #[command(flatten)]
        batch: Handle,
        /// Where result lines go; the lines it holds already are kept.
        #[arg(long, default_value = "results.jsonl")]
        out: PathBuf,
    },
    /// Stop the batch's runs that have not ended (at their next step).
    Cancel {
        #[command(flatten)]
        batch: Handle,
    },
}

/// Which batch, in which fleet.
#[derive(Args)]
struct Handle {
    /// The batch id `submit` printed.
    id: String,
    /// RabbitMQ URL.
    #[arg(long, env = "DEEPFLEET__QUEUE")]
    queue: Option<String>,
    /// Redis URL (`redis://...`, or `redis+cluster://h1:p1,h2:p2`).
    #[arg(long, env = "DEEPFLEET__STORE")]
    store: Option<String>,
}

impl Handle {
    async fn connect(&self, settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
        let (_, store) =
            super::connect_fleet(self.queue.clone(), self.store.clone(), settings).await?;
        Ok(store)
    }
}

pub async fn run(args: BatchArgs, settings: Settings) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Status { batch, json } => {
            let store = batch.connect(&settings).await?;
            let counts = TaskBatches::new(store)
                .counts(&batch.id)
                .await?
                .with_context(|| unknown(&batch.id))?;
            if json {
                println!("{}", serde_json::to_string(&counts)?);
            } else {
                println!("{}", status_line(&counts));
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Follow { batch, out } => {
            let store = batch.connect(&settings).await?;
            attach(store, &batch.id, &out, true).await
        }
        Action::Results { batch, out } => {
            let store = batch.connect(&settings).await?;
            attach(store, &batch.id, &out, false).await
        }
        Action::Cancel { batch } => {
            let store = batch.connect(&settings).await?;
            let asked = TaskBatches::new(store)
                .cancel(&batch.id)
                .await?
                .with_context(|| unknown(&batch.id))?;
            println!(
                "batch {}: {asked} run(s) asked to stop; workers end them, cancelled, at their \
                 next step",
                batch.id
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn unknown(id: &str) -> String {
    format!("no batch {id} in this fleet's store (check --store and DEEPFLEET__KEY_PREFIX)")
}

/// `batch ID: N tasks: 3 success, 2 running, ...`.
fn status_line(counts: &TaskBatchCounts) -> String {
    let parts: Vec<String> = counts
        .counts
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    format!(
        "batch {}: {} task(s), {} ended: {}",
        counts.batch_id,
        counts.total,
        counts.ended(),
        parts.join(", ")
    )
}

/// Writes the result lines of batch `batch_id` to `out`: of every task
/// once it ends when `wait`, else of those ended now. Exits like `submit`:
/// non-zero while a task has no line, or if any run did not succeed.
async fn attach(
    store: Arc<dyn Store>,
    batch_id: &str,
    out: &std::path::Path,
    wait: bool,
) -> anyhow::Result<ExitCode> {
    let roster = TaskBatches::new(Arc::clone(&store))
        .runs(batch_id)
        .await?
        .with_context(|| unknown(batch_id))?;
    let interrupt = Interrupt::install()?;
    let (mark, mut results, earlier) = UnfinishedBatch::attach(out, batch_id)?;
    let started = Instant::now();
    let mut finished = Finished::default();
    finished.add_earlier(&earlier);
    let mut follower = BatchFollower::new(store, batch_id);
    let mut never_submitted = 0;
    for (member, run) in &roster {
        if results.has(&member.task_id) {
            continue;
        }
        match run {
            Some(run) => follower.track(run),
            None => never_submitted += 1,
        }
    }
    let ended = follower.collect_ended().await?;
    finished.record(&mut results, ended, None)?;
    if wait {
        follow(
            &mut follower,
            &mut results,
            &mut finished,
            None,
            interrupt.token(),
        )
        .await?;
        if interrupt.token().is_cancelled() {
            let last = follower.collect_ended().await?;
            finished.record(&mut results, last, None)?;
        }
    }
    results.sync()?;
    finished.report(started, out, "", None);
    let have = roster
        .iter()
        .filter(|(member, _)| results.has(&member.task_id))
        .count();
    if have == roster.len() {
        if let Some(mark) = mark {
            mark.finish()?;
        }
        return Ok(finished.exit_code());
    }
    let never = if never_submitted > 0 {
        format!(
            "; {never_submitted} task(s) were never submitted: submit the tasks file again to \
             start them"
        )
    } else {
        String::new()
    };
    eprintln!(
        "batch {batch_id}: {have} of {} tasks have their result line in {}{never}",
        roster.len(),
        out.display()
    );
    Ok(interrupt.exit_code().unwrap_or(ExitCode::from(1)))
}
