//! The IO side of the step protocol: one queue delivery in, a fenced
//! commit, follow-ups out, and the ack last.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use deepfleet_model::Providers;
use deepfleet_proto::{
    ENVELOPE_VERSION, Envelope, ErrorCode, Job, RunError, RunRecord, RunStatus, StepJob,
};
use deepfleet_queue::{Delivery, Queue};
use deepfleet_store::{CommitOutcome, StepCommit, Store};
use rand::Rng;
use tracing::{debug, info, warn};

use crate::agent::AgentCache;
use crate::error::StepError;
use crate::events::{Event, EventScope, EventSink, NoopSink};
use crate::step::decide::{Decision, decide, follow_ups};
use crate::step::execute::execute;
use crate::step::follow_up;

/// How often a failing step is retried, and how long to wait.
#[derive(Debug, Clone, Copy)]
pub struct RetryConfig {
    /// Deliveries of one step before its run fails.
    pub max_attempts: u32,
    /// First backoff.
    pub base_delay: Duration,
    /// Longest backoff.
    pub max_delay: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryConfig {
    /// Exponential backoff with full jitter for the retry after `attempt`.
    fn delay(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_delay);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::rng().random_range(millis / 2..=millis.max(1)))
    }
}

/// Executes step messages. Holds no run state: every message is handled
/// from what the store says.
pub struct StepRunner {
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    providers: Arc<Providers>,
    agents: AgentCache,
    retry: RetryConfig,
    events: Arc<dyn EventSink>,
}

/// Why a message could not be handled now.
enum Failure {
    /// Retry the step later (or fail the run once attempts run out).
    Step(StepError),
    /// The message itself is bad: dead-letter it.
    Reject(String),
}

impl From<StepError> for Failure {
    fn from(e: StepError) -> Self {
        Failure::Step(e)
    }
}

impl From<deepfleet_store::StoreError> for Failure {
    fn from(e: deepfleet_store::StoreError) -> Self {
        Failure::Step(e.into())
    }
}

impl StepRunner {
    /// A runner over a queue, a store and model providers.
    pub fn new(
        queue: Arc<dyn Queue>,
        store: Arc<dyn Store>,
        providers: Arc<Providers>,
        retry: RetryConfig,
    ) -> Self {
        StepRunner {
            queue,
            store,
            providers,
            agents: AgentCache::default(),
            retry,
            events: Arc::new(NoopSink),
        }
    }

    /// Reports harness events to `events`.
    pub fn with_events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// Handles one delivery and settles it. Never panics on bad input: a
    /// malformed message is dead-lettered with its reason.
    pub async fn handle(&self, delivery: Box<dyn Delivery>) {
        let envelope = match serde_json::from_slice::<Envelope>(delivery.payload()) {
            Ok(e) if e.v == ENVELOPE_VERSION => e,
            Ok(e) => {
                return self
                    .dead_letter(delivery, &format!("unsupported envelope version {}", e.v))
                    .await;
            }
            Err(e) => {
                return self
                    .dead_letter(delivery, &format!("malformed job: {e}"))
                    .await;
            }
        };
        let Job::Step(job) = envelope.job.clone();
        let settled = match self.step(&job).await {
            Ok(()) => delivery.ack().await,
            Err(Failure::Reject(reason)) => return self.dead_letter(delivery, &reason).await,
            Err(Failure::Step(error)) => return self.failed(delivery, envelope, job, error).await,
        };
        if let Err(e) = settled {
            // The message comes back and fencing makes the repeat harmless.
            warn!(run = %job.run_id, error = %e, "ack failed");
        }
    }

    async fn step(&self, job: &StepJob) -> Result<(), Failure> {
        let Some(run) = self.store.get_run(&job.thread_id, &job.run_id).await? else {
            return Err(Failure::Reject(format!(
                "{}: run {}",
                ErrorCode::UnknownRun,
                job.run_id
            )));
        };
        let checkpoint = self.store.load_thread(&job.thread_id).await?;
        let cancel = self
            .store
            .cancel_requested(&job.thread_id, &job.run_id)
            .await?;
        match decide(job, &run, checkpoint.step, checkpoint.published, cancel) {
            Decision::Skip(reason) => {
                debug!(run = %job.run_id, step = job.step, reason, "skipping step message");
                Ok(())
            }
            Decision::Reject(reason) => Err(Failure::Reject(reason)),
            Decision::Republish => {
                info!(run = %job.run_id, step = job.step, "republishing follow-ups of a redelivered step");
                let follow = follow_ups(&run, checkpoint.step, checkpoint.pending.as_ref());
                follow_up::publish(&*self.queue, &*self.store, &run, follow, &checkpoint.files)
                    .await?;
                self.store
                    .mark_published(&job.thread_id, checkpoint.step)
                    .await?;
                Ok(())
            }
            Decision::Cancel => {
                let error = RunError {
                    code: ErrorCode::Cancelled,
                    message: "the run was cancelled".to_owned(),
                };
                self.end_run(run, checkpoint.step, RunStatus::Cancelled, error)
                    .await?;
                Ok(())
            }
            Decision::Execute => self.execute(job, run, checkpoint).await,
        }
    }

    async fn execute(
        &self,
        job: &StepJob,
        run: RunRecord,
        checkpoint: deepfleet_store::Checkpoint,
    ) -> Result<(), Failure> {
        let mut children = Vec::new();
        if let Some(pending) = checkpoint
            .pending
            .as_ref()
            .filter(|p| !p.children.is_empty())
        {
            children = self
                .store
                .child_results(&job.thread_id, &job.run_id)
                .await?;
            if children.len() < pending.children.len() {
                debug!(run = %job.run_id, "step message before all subagents finished");
                return Ok(());
            }
        }
        let spec = self.store.get_spec(&run.agent).await?.ok_or_else(|| {
            Failure::Step(StepError::Agent {
                agent: run.agent.clone(),
                message: "no such agent spec in the store".to_owned(),
            })
        })?;
        let agent = self.agents.get(&spec, &run, &self.providers)?;
        let started = Instant::now();
        let executed = execute(
            &agent,
            Arc::new(spec),
            run,
            checkpoint,
            children,
            Arc::clone(&self.events),
        )
        .await?;
        match self.store.commit_step(&executed.commit).await? {
            CommitOutcome::Committed => {
                let run = &executed.commit.run;
                self.events.emit(
                    &EventScope::of(run),
                    &Event::StepCommitted {
                        status: run.status,
                        latency: started.elapsed(),
                    },
                );
                let step = executed.commit.step + 1;
                let follow = follow_ups(run, step, executed.commit.pending.as_ref());
                follow_up::publish(&*self.queue, &*self.store, run, follow, &executed.files)
                    .await?;
                self.store.mark_published(&run.thread_id, step).await?;
                Ok(())
            }
            CommitOutcome::Conflict { current } => {
                debug!(run = %job.run_id, step = job.step, current, "another delivery committed this step");
                Ok(())
            }
        }
    }

    /// Ends a run with `status` and publishes what its end implies.
    async fn end_run(
        &self,
        mut run: RunRecord,
        step: u64,
        status: RunStatus,
        error: RunError,
    ) -> Result<(), StepError> {
        let checkpoint = self.store.load_thread(&run.thread_id).await?;
        if checkpoint.step != step || run.status.is_terminal() {
            return Ok(());
        }
        if let Some(pending) = &checkpoint.pending {
            // Cancel and failure cascade to the subagents still running.
            for child in &pending.children {
                self.store
                    .request_cancel(&child.thread_id, &child.run_id)
                    .await?;
            }
        }
        run.status = status;
        run.error = Some(error);
        run.updated_at = Utc::now();
        let commit = StepCommit {
            thread_id: run.thread_id.clone(),
            step,
            messages: Vec::new(),
            files: Default::default(),
            state: None,
            pending: None,
            run: run.clone(),
            fan_in_expected: None,
        };
        if let CommitOutcome::Committed = self.store.commit_step(&commit).await? {
            let follow = follow_ups(&run, step + 1, None);
            follow_up::publish(&*self.queue, &*self.store, &run, follow, &checkpoint.files).await?;
            self.store.mark_published(&run.thread_id, step + 1).await?;
        }
        Ok(())
    }

    /// A step failed: retry it later, or end the run once retrying cannot
    /// help or the attempts are used up.
    async fn failed(
        &self,
        delivery: Box<dyn Delivery>,
        envelope: Envelope,
        job: StepJob,
        error: StepError,
    ) {
        let attempt = envelope.attempt + 1;
        if error.is_retryable() && attempt < self.retry.max_attempts {
            let delay = match &error {
                StepError::Model(e) => e.retry_after.unwrap_or_else(|| self.retry.delay(attempt)),
                _ => self.retry.delay(attempt),
            };
            warn!(run = %job.run_id, step = job.step, attempt, ?delay, error = %error, "step failed; retrying");
            let retry = Envelope {
                attempt,
                ..envelope
            };
            let republished = match serde_json::to_vec(&retry) {
                Ok(payload) => self.queue.publish(payload, Some(delay)).await.is_ok(),
                Err(_) => false,
            };
            let settled = if republished {
                delivery.ack().await
            } else {
                delivery.requeue().await
            };
            if let Err(e) = settled {
                warn!(run = %job.run_id, error = %e, "settling a retried step failed");
            }
            return;
        }
        let code = if error.is_retryable() {
            ErrorCode::AttemptsExhausted
        } else {
            error.code()
        };
        let reason = format!("{code}: {error}");
        warn!(run = %job.run_id, step = job.step, %reason, "run failed");
        let ended = match self.store.get_run(&job.thread_id, &job.run_id).await {
            Ok(Some(run)) => {
                let error = RunError {
                    code,
                    message: error.to_string(),
                };
                self.end_run(run, job.step, RunStatus::Error, error).await
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = ended {
            // Recording the failure failed too: hand the message back.
            warn!(run = %job.run_id, error = %e, "recording a run failure failed");
            if let Err(e) = delivery.requeue().await {
                warn!(run = %job.run_id, error = %e, "requeue failed");
            }
            return;
        }
        let settled = if code == ErrorCode::AttemptsExhausted {
            delivery.dead_letter(&reason).await
        } else {
            delivery.ack().await
        };
        if let Err(e) = settled {
            warn!(run = %job.run_id, error = %e, "settling a failed step failed");
        }
    }

    async fn dead_letter(&self, delivery: Box<dyn Delivery>, reason: &str) {
        warn!(reason, "dead-lettering a message");
        if let Err(e) = delivery.dead_letter(reason).await {
            warn!(error = %e, "dead-lettering failed");
        }
    }
}
