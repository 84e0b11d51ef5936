//! Submitting a batch and following it to the end: shared by `run`
//! (embedded) and `submit` (distributed).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use deepfleet_proto::{AgentSpec, PendingReview, TaskLine};
use deepfleet_queue::Queue;
use deepfleet_scheduler::{BatchFollower, Intake};
use deepfleet_store::Store;
use deepfleet_store::sealed::ContextKey;
use indicatif::{ProgressBar, ProgressStyle};

use crate::batch_io::Summary;

/// Runs `tasks` of `spec` through the fleet behind `queue` and `store`,
/// writing result lines to `out` as runs finish. Exits non-zero if any
/// run did not succeed.
pub async fn run_batch(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    spec: &AgentSpec,
    tasks: &[TaskLine],
    out: &Path,
    context_key: Option<ContextKey>,
    state_file: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let invalid: Vec<String> = tasks
        .iter()
        .filter_map(|t| {
            deepfleet_scheduler::validate_task(t)
                .err()
                .or_else(|| deepfleet_scheduler::validate_seed(spec, &t.id, t.state.as_ref()).err())
        })
        .map(|e| e.to_string())
        .collect();
    if !invalid.is_empty() {
        bail!(
            "{} invalid task(s):\n  {}",
            invalid.len(),
            invalid.join("\n  ")
        );
    }
    let mut writer =
        BufWriter::new(File::create(out).with_context(|| format!("creating {}", out.display()))?);
    let mut intake = Intake::new(Arc::clone(&store), queue);
    if let Some(key) = context_key {
        intake = intake.with_context_key(key);
    }
    intake.register(spec).await?;
    let batch_id = uuid::Uuid::now_v7().to_string();
    let mut follower = BatchFollower::new(store, &batch_id);

    let started = Instant::now();
    let progress = ProgressBar::new(tasks.len() as u64);
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} {pos}/{len} runs [{elapsed_precise}] {bar:40} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.set_message("submitting");
    for task in tasks {
        let run = intake.submit(&spec.name, task, Some(&batch_id)).await?;
        follower.track(&run);
    }
    progress.set_message("running");

    let finished = write_results(&mut follower, &mut writer, Some(&progress)).await?;
    progress.finish_and_clear();
    Ok(finished.report(started, out, "", state_file))
}

/// What a followed batch produced.
pub struct Finished {
    summary: Summary,
    /// Runs waiting for a human decision, by task id.
    reviews: Vec<(String, PendingReview)>,
}

impl Finished {
    /// Prints the summary table, where the results went (`note` after the
    /// path) and how to resume parked runs; the exit code says whether
    /// every run succeeded.
    pub fn report(
        &self,
        started: Instant,
        out: &Path,
        note: &str,
        state_file: Option<&Path>,
    ) -> ExitCode {
        print!("{}", self.summary.table(started.elapsed()));
        println!("results   {}{note}", out.display());
        if !self.reviews.is_empty() {
            print!(
                "{}",
                crate::batch_io::resume_hint(&self.reviews, state_file)
            );
        }
        if self.summary.all_succeeded() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

/// Writes the result line of each of `follower`'s runs to `writer` as it
/// finishes (or parks for a review), until none is left.
pub async fn write_results(
    follower: &mut BatchFollower,
    writer: &mut impl Write,
    progress: Option<&ProgressBar>,
) -> anyhow::Result<Finished> {
    let mut summary = Summary::default();
    let mut reviews = Vec::new();
    while follower.remaining() > 0 {
        let lines = follower.poll().await?;
        if lines.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        for line in lines {
            serde_json::to_writer(&mut *writer, &line)?;
            writer.write_all(b"\n")?;
            summary.add(&line);
            reviews.extend(line.review.clone().map(|r| (line.id.clone(), r)));
            if let Some(progress) = progress {
                progress.inc(1);
            }
        }
    }
    writer.flush()?;
    Ok(Finished { summary, reviews })
}
