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
use deepfleet_store::sealed::{ContextKey, redact};
use deepfleet_store::{CommitOutcome, StepCommit, Store};
use rand::Rng;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::agent::{AgentCache, AgentOptions};
use crate::error::StepError;
use crate::events::{DeadLetterReason, Event, EventScope, EventSink, NoopSink};
use crate::step::announce::announce;
use crate::step::decide::{Decision, decide, follow_ups};
use crate::step::execute::execute;
use crate::step::follow_up;
use crate::step::follow_up::inherited_state;

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
    /// Opens runs' sealed runtime context; `None` fails runs that have one.
    context_key: Option<ContextKey>,
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
            context_key: None,
        }
    }

    /// Opens runs' runtime context with the fleet's `key`.
    pub fn with_context_key(mut self, key: ContextKey) -> Self {
        self.context_key = Some(key);
        self
    }

    /// The clear runtime context of `run` for one step. The log line gets
    /// it with the spec's secret fields redacted, never in full.
    fn open_context(
        &self,
        run: &RunRecord,
        spec: &deepfleet_proto::AgentSpec,
    ) -> Result<Option<serde_json::Value>, StepError> {
        let Some(sealed) = &run.context else {
            return Ok(None);
        };
        let key = self.context_key.as_ref().ok_or_else(|| {
            StepError::Inconsistent(
                "the run's runtime context is sealed, but this worker has no context_key"
                    .to_owned(),
            )
        })?;
        let context = key
            .open(sealed)
            .map_err(|e| StepError::Inconsistent(format!("runtime context: {e}")))?;
        debug!(
            run = %run.run_id,
            context = %redact(&context, &spec.context_secrets),
            "opened runtime context"
        );
        Ok(Some(context))
    }

    /// Builds agents under the worker's harness profiles (by
    /// `provider:model` or `provider`; a spec's own profiles lie on top).
    pub fn with_profiles(
        mut self,
        profiles: std::collections::BTreeMap<String, deepfleet_proto::harness::HarnessProfile>,
    ) -> Self {
        let options = AgentOptions {
            profiles,
            ..self.agents.options().clone()
        };
        self.agents = AgentCache::new(options);
        self
    }

    /// Adds a middleware of the worker's own to every agent's stack, after
    /// the built-in layers (see `docs/middleware.md`, "Writing one").
    pub fn with_middleware(mut self, middleware: Arc<dyn crate::middleware::Middleware>) -> Self {
        let mut options = self.agents.options().clone();
        options.middleware.push(middleware);
        self.agents = AgentCache::new(options);
        self
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
                let reason = format!("unsupported envelope version {}", e.v);
                return self
                    .dead_letter(
                        delivery,
                        &EventScope::of_job("", ""),
                        DeadLetterReason::Malformed,
                        &reason,
                    )
                    .await;
            }
            Err(e) => {
                let reason = format!("malformed job: {e}");
                return self
                    .dead_letter(
                        delivery,
                        &EventScope::of_job("", ""),
                        DeadLetterReason::Malformed,
                        &reason,
                    )
                    .await;
            }
        };
        let Job::Step(job) = envelope.job.clone();
        let scope = EventScope::of_job(&job.run_id, &job.thread_id);
        let queue_wait = envelope
            .published_at
            .and_then(|at| (Utc::now() - at).to_std().ok());
        self.events.emit(&scope, &Event::StepStarted { queue_wait });
        let _in_flight = InFlight {
            events: &*self.events,
            scope: &scope,
        };
        let settled = match self.step(&job, envelope.traceparent.as_deref()).await {
            Ok(()) => delivery.ack().await,
            Err(Failure::Reject(reason)) => {
                return self
                    .dead_letter(delivery, &scope, DeadLetterReason::Rejected, &reason)
                    .await;
            }
            Err(Failure::Step(error)) => return self.failed(delivery, envelope, job, error).await,
        };
        if let Err(e) = settled {
            // The message comes back and fencing makes the repeat harmless.
            warn!(run = %job.run_id, error = %e, "ack failed");
        }
    }

    async fn step(&self, job: &StepJob, traceparent: Option<&str>) -> Result<(), Failure> {
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
                let child_state = match self.store.get_spec(&run.agent).await? {
                    Some(spec) if run.status == RunStatus::Waiting => {
                        inherited_state(&spec, &checkpoint.state)
                    }
                    _ => Default::default(),
                };
                follow_up::publish(
                    &*self.queue,
                    &*self.store,
                    &run,
                    follow,
                    &checkpoint.files,
                    &child_state,
                )
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
            Decision::Execute => self.execute(job, run, checkpoint, traceparent).await,
        }
    }

    async fn execute(
        &self,
        job: &StepJob,
        mut run: RunRecord,
        checkpoint: deepfleet_store::Checkpoint,
        traceparent: Option<&str>,
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
        let context = self.open_context(&run, &spec)?;
        let started = Instant::now();
        let span = step_span(&mut run, &checkpoint, traceparent);
        let log_before = checkpoint.messages.len() as u64;
        let executed = execute(
            &agent,
            Arc::new(spec),
            run,
            checkpoint,
            children,
            Arc::clone(&self.events),
            context,
            &self.store,
        )
        .instrument(span.clone())
        .await?;
        match self.store.commit_step(&executed.commit).await? {
            CommitOutcome::Committed => {
                let run = &executed.commit.run;
                let scope = EventScope::of(run);
                self.events.emit(
                    &scope,
                    &Event::StepCommitted {
                        status: run.status,
                        latency: started.elapsed(),
                    },
                );
                span.in_scope(|| self.finished(&scope, run));
                let log_after = log_before + executed.commit.messages.len() as u64;
                let committed = executed.commit.step;
                announce(&*self.store, run, committed, log_before, log_after).await;
                let step = executed.commit.step + 1;
                let follow = follow_ups(run, step, executed.commit.pending.as_ref());
                follow_up::publish(
                    &*self.queue,
                    &*self.store,
                    run,
                    follow,
                    &executed.files,
                    &executed.child_state,
                )
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
        run.context = None;
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
            context: None,
        };
        if let CommitOutcome::Committed = self.store.commit_step(&commit).await? {
            self.finished(&EventScope::of(&run), &run);
            let log = checkpoint.messages.len() as u64;
            announce(&*self.store, &run, step, log, log).await;
            let follow = follow_ups(&run, step + 1, None);
            follow_up::publish(
                &*self.queue,
                &*self.store,
                &run,
                follow,
                &checkpoint.files,
                &Default::default(),
            )
            .await?;
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
            self.events.emit(
                &EventScope::of_job(&job.run_id, &job.thread_id),
                &Event::Retried { code: error.code() },
            );
            // The queue wait of the retry starts when its backoff ends.
            let due = chrono::Duration::from_std(delay)
                .ok()
                .map(|d| Utc::now() + d);
            let retry = Envelope {
                attempt,
                published_at: due,
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
            self.events.emit(
                &EventScope::of_job(&job.run_id, &job.thread_id),
                &Event::DeadLettered {
                    reason: DeadLetterReason::AttemptsExhausted,
                },
            );
            delivery.dead_letter(&reason).await
        } else {
            delivery.ack().await
        };
        if let Err(e) = settled {
            warn!(run = %job.run_id, error = %e, "settling a failed step failed");
        }
    }

    /// Reports a run that reached its final status.
    fn finished(&self, scope: &EventScope, run: &RunRecord) {
        if !run.status.is_terminal() {
            return;
        }
        let latency = (Utc::now() - run.created_at).to_std().unwrap_or_default();
        info!(run = %run.run_id, status = ?run.status, steps = run.steps, latency_ms = latency.as_millis() as u64, "run finished");
        self.events.emit(
            scope,
            &Event::RunFinished {
                status: run.status,
                latency,
            },
        );
    }

    async fn dead_letter(
        &self,
        delivery: Box<dyn Delivery>,
        scope: &EventScope,
        class: DeadLetterReason,
        reason: &str,
    ) {
        self.events
            .emit(scope, &Event::DeadLettered { reason: class });
        warn!(reason, "dead-lettering a message");
        if let Err(e) = delivery.dead_letter(reason).await {
            warn!(error = %e, "dead-lettering failed");
        }
    }
}

/// Reports the end of a delivery however `handle` returns, so the
/// in-flight gauge cannot drift.
struct InFlight<'a> {
    events: &'a dyn EventSink,
    scope: &'a EventScope,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.events.emit(self.scope, &Event::StepEnded);
    }
}

/// The span of one executed step, under the run's span. A run's first
/// step opens the run's own span (`invoke_agent`) under whatever the run
/// was created under (a `task` call, or nothing) and records it in the run,
/// so the run's later steps, on any worker, join it.
fn step_span(
    run: &mut RunRecord,
    checkpoint: &deepfleet_store::Checkpoint,
    traceparent: Option<&str>,
) -> tracing::Span {
    let mut parent = traceparent
        .or(run.traceparent.as_deref())
        .map(str::to_owned);
    if run.steps == 0 && checkpoint.pending.is_none() {
        let run_span = info_span!(
            parent: None,
            "invoke_agent",
            otel.name = format!("invoke_agent {}", run.subagent.as_deref().unwrap_or(&run.agent)),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = run.subagent.as_deref().unwrap_or(&run.agent),
            gen_ai.conversation.id = run.thread_id.as_str(),
            deepfleet.run.id = run.run_id.as_str(),
        );
        crate::trace::set_parent(&run_span, parent.as_deref());
        if let Some(own) = crate::trace::traceparent_of(&run_span) {
            run.traceparent = Some(own.clone());
            parent = Some(own);
        }
    }
    let span = info_span!(
        parent: None,
        "step",
        run = run.run_id.as_str(),
        thread = run.thread_id.as_str(),
        step = checkpoint.step,
        trace_id = tracing::field::Empty,
    );
    crate::trace::set_parent(&span, parent.as_deref());
    if let Some(id) = crate::trace::trace_id_of(&span) {
        span.record("trace_id", id.as_str());
    }
    span
}
