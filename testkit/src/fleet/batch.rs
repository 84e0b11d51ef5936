//! Running batches on a fleet: submit tasks, follow their result lines,
//! optionally killing workers along the way.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use deepfleet_proto::{AgentSpec, ResultLine, RunRecord, TaskLine};
use deepfleet_queue::DeadLetter;
use deepfleet_scheduler::{BatchFollower, Intake, TaskBatches, submit_task};
use deepfleet_store::sealed::ContextKey;
use futures::StreamExt;
use tokio::time::Instant;

use super::handle::Fleet;

/// Runs submitted at once: enough to keep a fleet busy while the broker
/// confirms each publish.
const SUBMIT_CONCURRENCY: usize = 64;
/// How long [`Fleet::wait_dead_letters`] waits.
const DEAD_LETTER_LIMIT: Duration = Duration::from_secs(30);

/// What a batch produced.
#[derive(Debug)]
pub struct Batch {
    /// Result lines, in task order.
    pub results: Vec<ResultLine>,
    /// The top-level runs, in task order.
    pub runs: Vec<RunRecord>,
    /// Worker processes killed while it ran.
    pub kills: usize,
}

impl Fleet {
    /// Registers `spec` and submits `tasks` as one batch without waiting
    /// for them; returns the batch's follower and the runs, in task order.
    pub async fn submit(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
    ) -> anyhow::Result<(BatchFollower, Vec<RunRecord>)> {
        self.submit_killing(spec, tasks, &mut Killer::new(None))
            .await
    }

    /// Registers `spec` and submits `tasks` as one batch of task lines
    /// (as `deepfleet submit` does) whose admission window is `window`
    /// runs, in task order, without waiting for them; returns the
    /// batch's follower and the runs, in task order.
    pub async fn submit_windowed(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        window: u32,
    ) -> anyhow::Result<(BatchFollower, Vec<RunRecord>)> {
        let intake = self.intake()?.with_admission_window(window);
        intake.register(spec).await?;
        let mut follower = BatchFollower::new(self.store.clone(), uuid::Uuid::new_v4().to_string());
        let batch = follower.batch_id().to_owned();
        // The roster first, as `deepfleet submit` keeps it: `batch
        // status|cancel` find the batch's runs by it.
        let roster = TaskBatches::new(self.store.clone());
        roster.open(&batch, &spec.name).await?;
        for (index, task) in (0_u64..).zip(tasks) {
            roster.add(&batch, index, &task.id).await?;
        }
        let mut runs = Vec::with_capacity(tasks.len());
        for task in tasks {
            let run = submit_task(&intake, &spec.name, task, Some(&batch)).await?;
            follower.track(&run);
            runs.push(run);
        }
        Ok((follower, runs))
    }

    /// Runs `tasks` of `spec` to the end; results in task order.
    pub async fn run(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
    ) -> anyhow::Result<Vec<ResultLine>> {
        Ok(self.run_batch(spec, tasks).await?.results)
    }

    /// Runs `tasks` of `spec` to the end; the results and the runs.
    pub async fn run_batch(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
    ) -> anyhow::Result<Batch> {
        self.run_with(spec, tasks, Killer::new(None)).await
    }

    /// Like [`Fleet::run_batch`], SIGKILLing a worker process (and starting
    /// a replacement) every `every` while runs remain, so kills land in the
    /// middle of steps whatever the batch's pace. A kill waits until every
    /// worker consumes: on a machine so loaded that a worker takes longer
    /// than `every` to start, kills would otherwise only ever hit workers
    /// still starting, and the batch would never move.
    pub async fn run_killing(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        every: Duration,
    ) -> anyhow::Result<Batch> {
        self.run_with(spec, tasks, Killer::new(Some(every))).await
    }

    /// Waits for every run `follower` tracks, for at most the fleet's run
    /// limit; returns their result lines in completion order.
    pub async fn follow(&mut self, follower: BatchFollower) -> anyhow::Result<Vec<ResultLine>> {
        self.follow_killing(follower, &mut Killer::new(None)).await
    }

    /// Follows `run`'s batch until it reports `run` again: a run resumed
    /// after a human review ends on the batch it started in.
    pub async fn follow_run(&mut self, run: &RunRecord) -> anyhow::Result<ResultLine> {
        let batch = run
            .batch_id
            .as_deref()
            .context("the run belongs to no batch")?;
        let mut follower = BatchFollower::new(self.store.clone(), batch);
        follower.track(run);
        self.follow(follower)
            .await?
            .pop()
            .context("the batch reported no line for the run")
    }

    /// Waits until at least `n` messages were dead-lettered; returns them.
    pub async fn wait_dead_letters(&self, n: usize) -> anyhow::Result<Vec<DeadLetter>> {
        let mut dead = Vec::new();
        let deadline = Instant::now() + DEAD_LETTER_LIMIT;
        while dead.len() < n {
            ensure!(Instant::now() < deadline, "no dead letter arrived");
            dead.extend(self.dead.drain_dead_letters(n).await?);
            tokio::time::sleep(self.poll_every).await;
        }
        Ok(dead)
    }

    async fn run_with(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        mut killer: Killer,
    ) -> anyhow::Result<Batch> {
        // Kills start while the batch is still being submitted: a fast
        // fleet finishes runs as they come in.
        let (follower, runs) = self.submit_killing(spec, tasks, &mut killer).await?;
        let mut results = self.follow_killing(follower, &mut killer).await?;
        let order: HashMap<&str, usize> = tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i))
            .collect();
        results.sort_by_key(|r| order.get(r.id.as_str()).copied().unwrap_or(usize::MAX));
        Ok(Batch {
            results,
            runs,
            kills: killer.kills,
        })
    }

    /// The intake runs are submitted through: this fleet's store, queue
    /// and context key.
    pub fn intake(&self) -> anyhow::Result<Intake> {
        let key = ContextKey::from_base64(&self.worker_command.context_key)?;
        Ok(Intake::new(self.store.clone(), self.queue.clone()).with_context_key(key))
    }

    async fn submit_killing(
        &mut self,
        spec: &AgentSpec,
        tasks: &[TaskLine],
        killer: &mut Killer,
    ) -> anyhow::Result<(BatchFollower, Vec<RunRecord>)> {
        let intake = self.intake()?;
        intake.register(spec).await?;
        let mut follower = BatchFollower::new(self.store.clone(), uuid::Uuid::new_v4().to_string());
        let batch = follower.batch_id().to_owned();
        let mut submitted = futures::stream::iter(tasks)
            .map(|task| submit_task(&intake, &spec.name, task, Some(&batch)))
            .buffered(SUBMIT_CONCURRENCY);
        let mut runs = Vec::with_capacity(tasks.len());
        while let Some(run) = submitted.next().await {
            let run = run?;
            follower.track(&run);
            runs.push(run);
            killer.tick(self).await?;
        }
        Ok((follower, runs))
    }

    async fn follow_killing(
        &mut self,
        mut follower: BatchFollower,
        killer: &mut Killer,
    ) -> anyhow::Result<Vec<ResultLine>> {
        let mut results = Vec::new();
        let deadline = Instant::now() + self.run_limit;
        while follower.remaining() > 0 {
            if Instant::now() >= deadline {
                bail!(
                    "{} runs did not finish in time ({} did): {}",
                    follower.remaining(),
                    results.len(),
                    self.describe(&follower).await
                );
            }
            let lines = follower.poll().await?;
            if lines.is_empty() {
                tokio::time::sleep(self.poll_every).await;
            }
            results.extend(lines);
            if follower.remaining() > 0 {
                killer.tick(self).await?;
            }
        }
        Ok(results)
    }

    /// Where the first few runs `follower` still waits for stand, and
    /// the subagents they wait on: what a test that timed out reports.
    async fn describe(&self, follower: &BatchFollower) -> String {
        let mut out = Vec::new();
        let mut runs: Vec<(String, String, u32)> = follower
            .waiting()
            .take(5)
            .map(|(run, thread)| (run.to_owned(), thread.to_owned(), 0))
            .collect();
        while let Some((run, thread, depth)) = runs.pop() {
            let record = self.store.get_run(&thread, &run).await;
            let checkpoint = self.store.load_thread(&thread).await;
            let status = match &record {
                Ok(Some(record)) => format!("{:?} after {} steps", record.status, record.steps),
                other => format!("{other:?}"),
            };
            match checkpoint {
                Ok(checkpoint) => {
                    out.push(format!(
                        "{}run {run}: {status}, thread at step {} (published {})",
                        "  ".repeat(depth as usize),
                        checkpoint.step,
                        checkpoint.published
                    ));
                    for child in checkpoint.pending.iter().flat_map(|p| &p.children) {
                        runs.push((child.run_id.clone(), child.thread_id.clone(), depth + 1));
                    }
                }
                Err(e) => out.push(format!("run {run}: {status}, thread: {e}")),
            }
        }
        out.join("; ")
    }
}

/// SIGKILLs a worker process every `every` (round robin), once all of
/// them consume, while a batch runs; does nothing without an interval.
struct Killer {
    every: Option<Duration>,
    last: Instant,
    kills: usize,
}

impl Killer {
    fn new(every: Option<Duration>) -> Self {
        Killer {
            every,
            last: Instant::now(),
            kills: 0,
        }
    }

    async fn tick(&mut self, fleet: &mut Fleet) -> anyhow::Result<()> {
        if let Some(every) = self.every
            && self.last.elapsed() >= every
            && fleet.consumers_at_least(fleet.worker_pids().len()).await
        {
            fleet.kill_worker(self.kills).await?;
            self.kills += 1;
            self.last = Instant::now();
        }
        Ok(())
    }
}

/// A task with no seed files, context or state.
pub fn task(id: &str, input: &str) -> TaskLine {
    TaskLine {
        id: id.into(),
        input: input.into(),
        context: None,
        files: None,
        state: None,
        timeout_secs: None,
    }
}
