//! Submitting a batch and following it to the end: shared by `run`
//! (embedded) and `submit` (distributed).
//!
//! Each result line is written as its run ends. SIGINT or SIGTERM stops
//! the batch cleanly: no further run is submitted, the line of every run
//! that has ended is written, and the results file stays marked
//! unfinished ([`UnfinishedBatch`]), so running the same command again
//! continues the batch instead of starting it over.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use deepfleet_proto::{
    AgentSpec, InputLimits, PendingReview, ResultLine, RunRecord, TaskLine, TenantId,
};
use deepfleet_queue::Queue;
use deepfleet_scheduler::{
    AdmissionSweep, BatchFollower, Intake, RetentionPolicy, RunBounds, TaskBatches,
};
use deepfleet_store::Store;
use deepfleet_store::embedded::EmbeddedStore;
use deepfleet_store::sealed::ContextKey;
use indicatif::{ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::EmbeddedWorker;
use super::consumer_watch::ConsumerWatch;
use super::signals::Interrupt;
use crate::batch_io::Summary;
use crate::results_file::ResultsFile;
use crate::unfinished_batch::UnfinishedBatch;

/// How often embedded mode sweeps its batch's admission window.
const ADMISSION_SWEEP_EVERY: Duration = Duration::from_millis(500);

/// A batch to run: what, and where its results go.
pub struct BatchPlan<'a> {
    /// The agent every task runs.
    pub spec: &'a AgentSpec,
    /// What a task's input may bring (`[limits]`).
    pub limits: InputLimits,
    /// The tasks, in order.
    pub tasks: &'a [TaskLine],
    /// The results file.
    pub out: &'a Path,
    /// Start over even if `out` holds an unfinished batch.
    pub fresh: bool,
    /// Embedded mode's state file, for the resume hints.
    pub state_file: Option<&'a Path>,
    /// The id a new batch takes (`submit`'s batch key, so the same tasks
    /// submitted again are the same batch); `None` for a fresh id.
    pub batch_id: Option<&'a str>,
    /// The broker's name of the step queue, watched for consumers once
    /// the batch is named (distributed mode: without a worker on it the
    /// batch would wait without a word).
    pub watch_queue: Option<String>,
    /// How long the batch's runs live once ended.
    pub retention: RetentionPolicy,
    /// Runs in flight at once (the batch's admission window); `None`
    /// starts every run at once.
    pub window: Option<u32>,
    /// Deadlines and tenant budgets of its runs.
    pub bounds: RunBounds,
    /// What its runs may spend in all, in nano-dollars (`--budget-usd`).
    pub budget_nano_usd: Option<u64>,
    /// The tenant its runs belong to (`--tenant`).
    pub tenant: TenantId,
}

/// Embedded mode's part of a batch: the worker that executes its steps
/// in this process, and the store an interrupted batch continues from.
pub struct InProcess {
    /// The worker.
    pub worker: EmbeddedWorker,
    /// The store (persisted with `--state`).
    pub store: Arc<EmbeddedStore>,
}

/// Runs `plan` through the fleet behind `queue` and `store` (with
/// `in_process` executing its steps, in embedded mode),
/// writing result lines as runs end. Exits non-zero if any run did not
/// succeed, or with 128 + the signal's number when interrupted.
pub async fn run_batch(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    plan: BatchPlan<'_>,
    context_key: Option<ContextKey>,
    in_process: Option<InProcess>,
) -> anyhow::Result<ExitCode> {
    let intake = intake_for(
        Arc::clone(&store),
        queue,
        (context_key, plan.retention.clone()),
        plan.spec,
        plan.tasks,
    )
    .await?
    .with_limits(plan.limits)
    .with_bounds(plan.bounds.clone())
    .with_batch_budget(plan.budget_nano_usd)
    .with_tenant(plan.tenant.clone());
    let intake = plan
        .window
        .map_or(intake.clone(), |w| intake.with_admission_window(w));
    let sweep = in_process
        .as_ref()
        .map(|_| sweep_admission(&store, &intake));
    let interrupt = Interrupt::install()?;
    let (batch, mut results, earlier) =
        UnfinishedBatch::open(plan.out, plan.tasks, plan.fresh, plan.batch_id)?;
    if in_process.is_none() {
        announce(batch.batch_id(), plan.out);
    }
    let watch = plan
        .watch_queue
        .map(|name| ConsumerWatch::start(Arc::clone(intake.queue()), name));
    let mut finished = Finished::default();
    finished.add_earlier(&earlier);
    if let Some(local) = &in_process
        && batch.continued()
    {
        // The runs the interrupted process left queued or executing.
        super::recover::republish_steps(&local.store, intake.queue().as_ref()).await?;
    }
    let mut follower = BatchFollower::new(store, batch.batch_id());
    let started = Instant::now();
    let progress = progress_bar(plan.tasks.len(), earlier.len());

    progress.set_message("submitting");
    let runs = enqueue(
        &intake,
        plan.spec,
        plan.tasks,
        batch.batch_id(),
        |id| results.has(id),
        interrupt.token(),
    )
    .await?;
    runs.iter().for_each(|run| follower.track(run));
    // The runs of a continued batch that ended while nobody followed them.
    let ended = follower.collect_ended().await?;
    finished.record(&mut results, ended, Some(&progress))?;
    progress.set_message("running");
    follow(
        &mut follower,
        &mut results,
        &mut finished,
        Some(&progress),
        interrupt.token(),
    )
    .await?;
    sweep.inspect(tokio::task::JoinHandle::abort);
    let left_note = unfinished_runs_note(in_process.is_some(), plan.state_file);
    if let Some(local) = in_process {
        local.worker.stop().await?;
    }
    if let Some(watch) = watch {
        watch.finish().await;
    }
    progress.finish_and_clear();
    if interrupt.token().is_cancelled() {
        // What ended meanwhile (in embedded mode, the steps the worker
        // finished while it stopped) still gets its line.
        let mut last = follower.poll().await?;
        last.extend(follower.collect_ended().await?);
        finished.record(&mut results, last, None)?;
    }
    results.sync()?;
    finished.report(
        started,
        plan.out,
        &continued_note(&earlier),
        plan.state_file,
    );
    let have = plan.tasks.iter().filter(|t| results.has(&t.id)).count();
    if have == plan.tasks.len() {
        batch.finish()?;
        return Ok(finished.exit_code());
    }
    eprintln!(
        "{}: {have} of {} tasks have their result line in {}; run the same command again to \
         continue the batch ({left_note})",
        if interrupt.token().is_cancelled() {
            "interrupted"
        } else {
            "unfinished"
        },
        plan.tasks.len(),
        plan.out.display(),
    );
    Ok(interrupt.exit_code().unwrap_or(ExitCode::from(1)))
}

/// Embedded mode has no scheduler: its batch sweeps its own admission
/// (a distributed fleet's schedulers sweep theirs) until aborted.
fn sweep_admission(store: &Arc<dyn Store>, intake: &Intake) -> tokio::task::JoinHandle<()> {
    tokio::spawn(
        AdmissionSweep::new(Arc::clone(store), Arc::clone(intake.queue()))
            .run(ADMISSION_SWEEP_EVERY),
    )
}

/// An intake over `store` and `queue` (sealing contexts with `key`,
/// fixing each run's `retention`) whose runs of `spec`'s name use `spec`,
/// once every task of `tasks` is checked. The spec is pinned, not served: a batch never changes the spec
/// a scheduler on the same store serves under that name.
pub async fn intake_for(
    store: Arc<dyn Store>,
    queue: Arc<dyn Queue>,
    (key, retention): (Option<ContextKey>, RetentionPolicy),
    spec: &AgentSpec,
    tasks: &[TaskLine],
) -> anyhow::Result<Intake> {
    check_tasks(spec, tasks)?;
    let mut intake = Intake::new(store, queue).with_retention(retention);
    if let Some(key) = key {
        intake = intake.with_context_key(key);
    }
    Ok(intake.pin(spec).await?)
}

/// Says which batch this is and how to follow it from elsewhere, before
/// anything is submitted.
pub fn announce(batch_id: &str, out: &Path) {
    eprintln!("batch {batch_id}");
    eprintln!(
        "  re-attach with: deepfleet batch follow {batch_id} --out {}",
        out.display()
    );
}

/// Records every task of `tasks` in batch `batch_id`, then starts the run
/// of each that `skip` leaves out, until `stop` is cancelled; returns
/// those runs. A task whose run exists already (the batch was submitted
/// before) gets that run back, not a second one. The tasks are checked
/// ([`intake_for`]). The whole roster comes first, so a follower of the
/// batch knows every task, and which were never submitted.
pub async fn enqueue(
    intake: &Intake,
    spec: &AgentSpec,
    tasks: &[TaskLine],
    batch_id: &str,
    skip: impl Fn(&str) -> bool,
    stop: &CancellationToken,
) -> anyhow::Result<Vec<RunRecord>> {
    let roster = TaskBatches::new(Arc::clone(intake.store()));
    roster.open(batch_id, &spec.name).await?;
    for (index, task) in (0_u64..).zip(tasks) {
        roster.add(batch_id, index, &task.id).await?;
    }
    let mut runs = Vec::new();
    for task in tasks.iter().filter(|t| !skip(&t.id)) {
        if stop.is_cancelled() {
            break;
        }
        runs.push(
            deepfleet_scheduler::submit_task(intake, &spec.name, task, Some(batch_id)).await?,
        );
    }
    Ok(runs)
}

/// Every task is valid (files, seed state, runtime context), or none
/// runs.
pub fn check_tasks(spec: &AgentSpec, tasks: &[TaskLine]) -> anyhow::Result<()> {
    let invalid: Vec<String> = tasks
        .iter()
        .filter_map(|t| {
            deepfleet_scheduler::validate_task(t)
                .err()
                .or_else(|| deepfleet_scheduler::validate_seed(spec, &t.id, t.state.as_ref()).err())
                .or_else(|| {
                    deepfleet_scheduler::validate_context(spec, &t.id, t.context.as_ref()).err()
                })
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
    Ok(())
}

fn progress_bar(tasks: usize, done: usize) -> ProgressBar {
    let progress = ProgressBar::new(tasks as u64);
    progress.set_style(
        ProgressStyle::with_template(
            "{spinner} {pos}/{len} runs [{elapsed_precise}] {bar:40} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.set_position(done as u64);
    progress
}

/// After the results path: how many lines an earlier process wrote.
fn continued_note(earlier: &[ResultLine]) -> String {
    if earlier.is_empty() {
        String::new()
    } else {
        format!(" (continued; {} line(s) from before)", earlier.len())
    }
}

/// What becomes of the runs an interrupted batch leaves.
fn unfinished_runs_note(embedded: bool, state_file: Option<&Path>) -> String {
    match (embedded, state_file) {
        (false, _) => "runs still going go on in the fleet and are followed again".to_owned(),
        (true, Some(state)) => format!("runs not ended continue from {}", state.display()),
        (true, None) => {
            "runs not ended start over; with --state FILE they would continue where they were"
                .to_owned()
        }
    }
}

/// What a followed batch produced.
#[derive(Default)]
pub struct Finished {
    summary: Summary,
    /// Runs waiting for a human decision, by task id.
    reviews: Vec<(String, PendingReview)>,
}

impl Finished {
    /// Counts the lines an earlier process wrote for this batch.
    pub fn add_earlier(&mut self, lines: &[ResultLine]) {
        for line in lines {
            self.summary.add_earlier(line);
            self.note_review(line);
        }
    }

    /// Writes `lines` (each unless its task has one already) and counts
    /// them.
    pub fn record(
        &mut self,
        results: &mut ResultsFile,
        lines: Vec<ResultLine>,
        progress: Option<&ProgressBar>,
    ) -> anyhow::Result<()> {
        for line in lines {
            if !results.write(&line)? {
                continue;
            }
            self.summary.add(&line);
            self.note_review(&line);
            if let Some(progress) = progress {
                progress.inc(1);
            }
        }
        Ok(())
    }

    fn note_review(&mut self, line: &ResultLine) {
        self.reviews
            .extend(line.review.clone().map(|r| (line.id.clone(), r)));
    }

    /// Prints the summary table, where the results went (`note` after the
    /// path) and how to resume parked runs.
    pub fn report(&self, started: Instant, out: &Path, note: &str, state_file: Option<&Path>) {
        print!("{}", self.summary.table(started.elapsed()));
        println!("results   {}{note}", out.display());
        if !self.reviews.is_empty() {
            print!(
                "{}",
                crate::batch_io::resume_hint(&self.reviews, state_file)
            );
        }
    }

    /// Success if every run succeeded.
    pub fn exit_code(&self) -> ExitCode {
        if self.summary.all_succeeded() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

/// How long a follower waits on the done list alone before it reads its
/// runs' records (another process following the same batch takes the
/// notices it pops): at least this, and a millisecond per run followed,
/// so a big batch is not read every few seconds.
const SWEEP_EVERY: Duration = Duration::from_secs(2);

fn sweep_interval(followed: usize) -> Duration {
    SWEEP_EVERY.max(Duration::from_millis(
        u64::try_from(followed).unwrap_or(u64::MAX),
    ))
}

/// Writes the result line of each of `follower`'s runs to `results` as it
/// ends (or parks for a review), until none is left or `interrupt` is
/// cancelled.
pub async fn follow(
    follower: &mut BatchFollower,
    results: &mut ResultsFile,
    finished: &mut Finished,
    progress: Option<&ProgressBar>,
    interrupt: &CancellationToken,
) -> anyhow::Result<()> {
    let mut swept = Instant::now();
    while follower.remaining() > 0 && !interrupt.is_cancelled() {
        let mut lines = follower.poll().await?;
        if lines.is_empty() && swept.elapsed() >= sweep_interval(follower.remaining()) {
            lines = follower.collect_ended().await?;
            swept = Instant::now();
        }
        if lines.is_empty() {
            tokio::select! {
                () = interrupt.cancelled() => {}
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            continue;
        }
        finished.record(results, lines, progress)?;
    }
    Ok(())
}
