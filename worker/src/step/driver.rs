//! The IO side of the step protocol: one queue delivery in, a fenced
//! commit, follow-ups out, and the ack last.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use deepfleet_fleet::{publish_deadline_check, step_message};
use deepfleet_model::Providers;
use deepfleet_proto::{
    AgentSpec, ChildResult, ChildRun, ENVELOPE_VERSION, Envelope, ErrorCode, FileData, Job,
    PendingTools, RunRecord, RunStatus, StepJob,
};
use deepfleet_queue::{Delivery, Queue};
use deepfleet_store::sealed::ContextKey;
use deepfleet_store::{Checkpoint, CommitOutcome, Store, StoreError};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::agent::{Agent, AgentCache, AgentOptions};
use crate::error::StepError;
use crate::events::{DeadLetterReason, Event, EventScope, EventSink, NoopSink};
use crate::step::announce::Announcement;
use crate::step::background::started_at;
use crate::step::commit::Executed;
use crate::step::decide::{Decision, FollowUp, decide, follow_ups, kept_step};
use crate::step::deltas;
use crate::step::execute::{StepInput, execute};
use crate::step::follow_up::inherited_state;
use crate::step::follow_up::{self, Outgoing};
use crate::step::halt::{self, Halt};
use crate::step::hold::Hold;
use crate::step::retry::RetryConfig;
use crate::step::slots;
use crate::step::spec_versions::SpecVersions;
use crate::step::spend;
use crate::step::time_limits::TimeLimits;

/// How long after a failed deadline check it is tried again.
const RECHECK_AFTER: Duration = Duration::from_secs(1);

/// Executes step messages. Holds no run state: every message is handled
/// from what the store says.
pub struct StepRunner {
    pub(super) queue: Arc<dyn Queue>,
    pub(super) store: Arc<dyn Store>,
    pub(super) providers: Arc<Providers>,
    pub(super) agents: AgentCache,
    /// The spec versions this worker's steps have read.
    specs: SpecVersions,
    pub(super) retry: RetryConfig,
    /// How long one step may run.
    step_timeout: std::time::Duration,
    /// How long one delivery may keep running its run's next steps.
    keep_run: std::time::Duration,
    pub(super) events: Arc<dyn EventSink>,
    /// Opens runs' sealed runtime context; `None` fails runs that have one.
    pub(super) context_key: Option<ContextKey>,
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
            specs: SpecVersions::default(),
            retry,
            step_timeout: TimeLimits::default().step,
            keep_run: TimeLimits::default().keep_run,
            events: Arc::new(NoopSink),
            context_key: None,
        }
    }

    /// Runs steps and their tool calls under `limits` (see
    /// [`crate::step::time_limits`]).
    pub fn with_time_limits(mut self, limits: TimeLimits) -> Self {
        self.step_timeout = limits.step;
        self.keep_run = limits.keep_run;
        let options = AgentOptions {
            tool_timeout: limits.tool_call,
            ..self.agents.options().clone()
        };
        self.agents = AgentCache::new(options);
        self
    }

    /// Keeps the files agents' tools write within `limits` (`[limits]`).
    pub fn with_file_limits(mut self, limits: deepfleet_proto::InputLimits) -> Self {
        let options = AgentOptions {
            file_limits: limits,
            ..self.agents.options().clone()
        };
        self.agents = AgentCache::new(options);
        self
    }

    /// Prices model calls with `prices` (`[costs]`; the built-in list
    /// prices without it).
    pub fn with_prices(mut self, prices: deepfleet_proto::Prices) -> Self {
        let options = AgentOptions {
            prices,
            ..self.agents.options().clone()
        };
        self.agents = AgentCache::new(options);
        self
    }

    /// Opens runs' runtime context with the fleet's `key`.
    pub fn with_context_key(mut self, key: ContextKey) -> Self {
        self.context_key = Some(key);
        self
    }

    /// The clear runtime context of `run` for one step. Nothing of it
    /// reaches the logs, at any level: not even redacted, as a value
    /// under an unlisted key may be a secret too.
    fn open_context(&self, run: &RunRecord) -> Result<Option<serde_json::Value>, StepError> {
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
        debug!(run = %run.run_id, "opened runtime context");
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

    /// Runs `execute` commands on `host` instead of the process's own (a
    /// test's host without `bwrap`).
    pub fn with_sandbox(mut self, host: Arc<crate::sandbox::SandboxHost>) -> Self {
        let options = AgentOptions {
            sandbox: host,
            ..self.agents.options().clone()
        };
        self.agents = AgentCache::new(options);
        self
    }

    /// Where this runner's `execute` commands run.
    pub fn sandbox(&self) -> &Arc<crate::sandbox::SandboxHost> {
        &self.agents.options().sandbox
    }

    /// Reports harness events to `events`.
    pub fn with_events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// Handles one delivery and settles it. Never panics on bad input: a
    /// malformed message is dead-lettered with its reason.
    ///
    /// A run's next step stays with the delivery (see [`Hold`]) until it
    /// has been held for [`TimeLimits::keep_run`], a higher lane's message
    /// waits for its slot, or `draining` fires; then it goes out to the
    /// queue as always.
    pub async fn handle(&self, delivery: Box<dyn Delivery>, draining: &CancellationToken) {
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
        let mut job = match envelope.job.clone() {
            Job::Step(job) => job,
            // Boxed, as every rare branch here: each step's task is as large
            // as this future's largest state.
            Job::DeadlineCheck(job) => {
                return Box::pin(self.settle_deadline_check(delivery, &job)).await;
            }
        };
        let mut envelope = envelope;
        let mut last_delivery = delivery.deliveries_left() == Some(0);
        let hold = Hold::new(&*delivery, self.keep_run, draining);
        // The event of the commit before a kept step.
        let mut announcing: Option<Announcement> = None;
        let stepped = loop {
            let scope = EventScope::of_job(&job.run_id, &job.thread_id);
            let queue_wait = envelope
                .published_at
                .and_then(|at| (Utc::now() - at).to_std().ok());
            self.events.emit(&scope, &Event::StepStarted { queue_wait });
            let _in_flight = InFlight {
                events: &*self.events,
                scope: &scope,
            };
            // Abandoning a step is as safe as a crash: fencing makes a
            // repeat of whatever it had done harmless.
            let stepping = tokio::time::timeout(
                self.step_timeout,
                self.step(&job, envelope.traceparent.as_deref(), last_delivery, &hold),
            );
            // A kept step's load goes out beside the event of the commit
            // before it: one round trip for both.
            let announced = async {
                if let Some(announcement) = announcing.take() {
                    announcement.send(&*self.store).await;
                }
            };
            let ((), stepped) = tokio::join!(announced, stepping);
            let stepped =
                stepped.unwrap_or(Err(Failure::Step(StepError::TimedOut(self.step_timeout))));
            match stepped {
                Ok(Some(Kept {
                    next,
                    traceparent,
                    announcement,
                })) => {
                    debug!(run = %next.run_id, step = next.step, "keeping the next step");
                    envelope = step_message(next.clone(), traceparent);
                    job = next;
                    last_delivery = false;
                    announcing = announcement;
                }
                Ok(None) => break Ok(()),
                Err(failure) => break Err(failure),
            }
        };
        let settled = match stepped {
            Ok(()) => delivery.ack().await,
            Err(Failure::Reject(reason)) => {
                let scope = EventScope::of_job(&job.run_id, &job.thread_id);
                return self
                    .dead_letter(delivery, &scope, DeadLetterReason::Rejected, &reason)
                    .await;
            }
            Err(Failure::Step(error)) => {
                return Box::pin(self.defer_or_fail(delivery, envelope, job, error)).await;
            }
        };
        if let Err(e) = settled {
            // The message comes back and fencing makes the repeat harmless.
            warn!(run = %job.run_id, error = %e, "ack failed");
        }
    }

    /// Handles a deadline check and settles it: acked once handled; after
    /// a failure (the store away), checked again a second later.
    async fn settle_deadline_check(&self, delivery: Box<dyn Delivery>, job: &StepJob) {
        let settled = match self.check_deadline(job).await {
            Ok(()) => delivery.ack().await,
            Err(e) => {
                warn!(run = %job.run_id, error = %e, "a deadline check failed; checking again");
                let again = publish_deadline_check(&*self.queue, job.clone(), RECHECK_AFTER).await;
                match again {
                    Ok(()) => delivery.ack().await,
                    Err(_) => delivery.requeue().await,
                }
            }
        };
        if let Err(e) = settled {
            warn!(run = %job.run_id, error = %e, "settling a deadline check failed");
        }
    }

    /// Handles `job`. On the `last_delivery` the queue allows, a step that
    /// still has to execute is not run: if this worker died too, the queue
    /// would drop the message and the run would hang. It fails with
    /// [`StepError::LastDelivery`] instead, which goes out again as a fresh
    /// message (one attempt more, after a backoff), or ends the run once
    /// no attempt is left.
    ///
    /// Returns the run's next step when the delivery keeps it.
    async fn step(
        &self,
        job: &StepJob,
        traceparent: Option<&str>,
        last_delivery: bool,
        hold: &Hold<'_>,
    ) -> Result<Option<Kept>, Failure> {
        let (decision, fetched) = self.load(job).await?;
        match decision {
            Decision::Skip(reason) => {
                debug!(run = %job.run_id, step = job.step, reason, "skipping step message");
                Ok(None)
            }
            Decision::Reject(reason) => Err(Failure::Reject(reason)),
            Decision::Republish => {
                info!(run = %job.run_id, step = job.step, "republishing follow-ups of a redelivered step");
                self.republish(&fetched.run, &fetched.checkpoint).await?;
                Ok(None)
            }
            Decision::Halt(halt) => {
                info!(run = %job.run_id, step = job.step, ?halt, "stopping the run");
                let (status, error) = halt.ending(&fetched.run);
                let Fetched {
                    run, checkpoint, ..
                } = *fetched;
                Box::pin(self.end_run(run, checkpoint.step, status, error)).await?;
                Ok(None)
            }
            Decision::Execute if last_delivery => Err(Failure::Step(StepError::LastDelivery)),
            Decision::Execute => self.execute(job, fetched, traceparent, hold).await,
        }
    }

    /// Loads the run and thread `job` steps and decides what to do.
    async fn load(&self, job: &StepJob) -> Result<(Decision, Box<Fetched>), Failure> {
        // Four reads that do not depend on each other, sent together: on
        // Redis they share one round trip instead of taking four.
        let (run, checkpoint, cancel, followed) = tokio::try_join!(
            self.store.get_run(&job.thread_id, &job.run_id),
            self.store.load_thread(&job.thread_id),
            self.store.cancel_requested(&job.thread_id, &job.run_id),
            async { Ok(deltas::followed(&*self.store, &job.run_id).await) },
        )?;
        let Some(run) = run else {
            return Err(Failure::Reject(format!(
                "{}: run {}",
                ErrorCode::UnknownRun,
                job.run_id
            )));
        };
        let halt = if run.status.is_terminal() || checkpoint.step != job.step {
            None
        } else {
            halt::check(self.store.as_ref(), &run, cancel, Utc::now()).await?
        };
        let decision = decide(job, &run, checkpoint.step, checkpoint.published, halt);
        let fetched = Fetched {
            run,
            checkpoint,
            followed,
        };
        Ok((decision, Box::new(fetched)))
    }

    /// Publishes again what the committed step before `checkpoint` had to:
    /// the background tasks it started, then the run's own follow-ups.
    async fn republish(&self, run: &RunRecord, checkpoint: &Checkpoint) -> Result<(), Failure> {
        let spawned = started_at(&checkpoint.state, checkpoint.step.saturating_sub(1));
        let child_state = match self.spec_of(run).await? {
            Some(spec) if run.status == RunStatus::Waiting || !spawned.is_empty() => {
                inherited_state(&spec, &checkpoint.state)
            }
            _ => Default::default(),
        };
        let committed = Committed {
            run,
            step: checkpoint.step,
            pending: checkpoint.pending.as_ref(),
            spawned,
            files: &checkpoint.files,
            child_state: &child_state,
        };
        Ok(self.publish_follow_ups(committed).await?)
    }

    /// The spec `run` was started with: its pinned version (read once per
    /// worker), or (a record from before versions) the one served under its
    /// agent's name.
    async fn spec_of(&self, run: &RunRecord) -> Result<Option<Arc<AgentSpec>>, StoreError> {
        match &run.spec_version {
            Some(version) => {
                let store = self.store.as_ref();
                self.specs.get(store, &run.agent, version).await
            }
            None => Ok(self.store.get_spec(&run.agent).await?.map(Arc::new)),
        }
    }

    /// Executes the step of `fetched` and commits the result; returns the
    /// run's next step when `hold` keeps it.
    ///
    /// This future is what every step waiting on its model call holds, so
    /// it keeps little across that wait: the preparation and the commit
    /// are futures of their own, alive only before and after it.
    async fn execute(
        &self,
        job: &StepJob,
        fetched: Box<Fetched>,
        traceparent: Option<&str>,
        hold: &Hold<'_>,
    ) -> Result<Option<Kept>, Failure> {
        let Some(ready) = self.prepare(job, fetched, traceparent).await? else {
            debug!(run = %job.run_id, "step message before all subagents finished");
            return Ok(None);
        };
        let Ready {
            agent,
            spec,
            input,
            stopped,
            span,
            started,
            limit,
            step,
            log_before,
        } = ready;
        let executing = execute(&agent, spec, input, Arc::clone(&self.events), &self.store)
            .instrument(span.clone());
        let executed = match limit {
            Some(limit) => match tokio::time::timeout(limit, executing).await {
                Ok(executed) => executed?,
                Err(_) if stopped.past_deadline(Utc::now()) => {
                    info!(run = %job.run_id, step, "the run's deadline passed during its step");
                    let (status, error) = Halt::Timeout.ending(&stopped);
                    Box::pin(self.end_run(*stopped, step, status, error)).await?;
                    return Ok(None);
                }
                Err(_) => return Err(Failure::Step(StepError::TimedOut(limit))),
            },
            None => executing.await?,
        };
        Box::pin(self.commit(job, executed, &span, started, log_before, hold)).await
    }

    /// Everything the step needs before its model call: its subagents'
    /// results (`None` while some are missing), its spec and agent, its
    /// concurrency slots, and its clock and span.
    async fn prepare(
        &self,
        job: &StepJob,
        fetched: Box<Fetched>,
        traceparent: Option<&str>,
    ) -> Result<Option<Ready>, Failure> {
        let Fetched {
            mut run,
            checkpoint,
            followed,
        } = *fetched;
        let Some(children) = self.children(job, &checkpoint).await? else {
            return Ok(None);
        };
        let spec = self.spec_of(&run).await?.ok_or_else(|| {
            Failure::Step(StepError::Agent {
                agent: run.agent.clone(),
                message: match &run.spec_version {
                    Some(version) => {
                        format!("no version {version} of this agent spec in the store")
                    }
                    None => "no such agent spec in the store".to_owned(),
                },
            })
        })?;
        let agent = self.agents.get(&spec, &run, &self.providers)?;
        let context = self.open_context(&run)?;
        // Before its clock starts: a run waiting for a place has not begun.
        slots::take(self.store.as_ref(), &run).await?;
        run.start_clock(Utc::now());
        let started = Instant::now();
        let span = step_span(&mut run, &checkpoint, traceparent);
        let log_before = checkpoint.messages.len() as u64;
        let step = checkpoint.step;
        // The step may take what is left of the run's time, so a slow
        // model call cannot carry the run past its deadline, and no more
        // than its spec's `limits.step_timeout_secs` (then it is retried,
        // as a step the worker's own limit stops).
        let deadline_left = run
            .deadline
            .map(|deadline| (deadline - Utc::now()).to_std().unwrap_or_default());
        let step_limit = spec.limits.step_timeout_secs.map(Duration::from_secs);
        Ok(Some(Ready {
            agent,
            spec,
            stopped: Box::new(run.clone()),
            input: Box::new(StepInput {
                run,
                checkpoint,
                children,
                context,
                followed,
            }),
            span,
            started,
            limit: [deadline_left, step_limit].into_iter().flatten().min(),
            step,
            log_before,
        }))
    }

    /// Commits an executed step; once committed, reports it, announces it
    /// and publishes its follow-ups, or returns the next step `hold` keeps.
    async fn commit(
        &self,
        job: &StepJob,
        executed: Executed,
        span: &tracing::Span,
        started: Instant,
        log_before: u64,
        hold: &Hold<'_>,
    ) -> Result<Option<Kept>, Failure> {
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
                self.committed(executed, log_before, hold.may_keep()).await
            }
            CommitOutcome::Conflict { current } => {
                debug!(run = %job.run_id, step = job.step, current, "another delivery committed this step");
                Ok(None)
            }
            CommitOutcome::Gone => {
                debug!(run = %job.run_id, step = job.step, "the run's thread was deleted or expired");
                Ok(None)
            }
        }
    }

    /// The results of the subagents a parked run waits on (none when it
    /// waits on none), or `None` while some are still missing.
    async fn children(
        &self,
        job: &StepJob,
        checkpoint: &Checkpoint,
    ) -> Result<Option<Vec<ChildResult>>, Failure> {
        let Some(pending) = checkpoint
            .pending
            .as_ref()
            .filter(|p| !p.children.is_empty())
        else {
            return Ok(Some(Vec::new()));
        };
        let children = self
            .store
            .child_results(&job.thread_id, &job.run_id)
            .await?;
        Ok((children.len() >= pending.children.len()).then_some(children))
    }

    /// After the commit: the run event, then the follow-ups.
    ///
    /// When the only follow-up is the run's next step and the delivery may
    /// `keep` it, that step is returned instead, unpublished and unmarked,
    /// with the event still to send: should the worker die while running
    /// it, the redelivered message finds the thread ahead of it with
    /// nothing published since, and publishes the step the thread is at
    /// (see [`decide`]). Likewise, when the follow-ups call for exactly one
    /// step message (a subagent's first step, or the parent its end
    /// wakes), the delivery keeps that one (see [`follow_up::publish`]).
    async fn committed(
        &self,
        executed: Executed,
        log_before: u64,
        keep: bool,
    ) -> Result<Option<Kept>, Failure> {
        let Executed {
            commit,
            files,
            child_state,
            spawned,
        } = executed;
        let run = &commit.run;
        let log_after = log_before + commit.messages.len() as u64;
        let announcement = Announcement::of(run, commit.step, log_before, log_after);
        let step = commit.step + 1;
        let follow = match kept_step(all_follow_ups(spawned, run, step, commit.pending.as_ref())) {
            Ok(next) if keep => {
                // Before the step runs, so that it sees what this one spent.
                spend::report(self.store.as_ref(), run).await?;
                return Ok(Some(Kept {
                    next,
                    traceparent: None,
                    announcement: Some(announcement),
                }));
            }
            Ok(next) => vec![FollowUp::Step(next)],
            Err(follow) => follow,
        };
        // The event goes out beside the follow-ups, not before them: it is
        // a notice (sent first all the same), the follow-ups the record.
        let ((), published) = tokio::join!(
            announcement.send(&*self.store),
            self.publish(run, step, follow, (&files, &child_state), keep)
        );
        Ok(published?.map(|out| Kept {
            next: out.job,
            traceparent: out.traceparent,
            announcement: None,
        }))
    }

    /// Publishes a committed step's follow-ups (see [`Committed`]).
    pub(super) async fn publish_follow_ups(
        &self,
        committed: Committed<'_>,
    ) -> Result<(), StepError> {
        let Committed {
            run,
            step,
            pending,
            spawned,
            files,
            child_state,
        } = committed;
        let follow = all_follow_ups(spawned, run, step, pending);
        self.publish(run, step, follow, (files, child_state), false)
            .await
            .map(drop)
    }

    /// Publishes `follow`, the follow-ups of `run`'s thread now at `step`
    /// (with the thread's files and the state its subagents inherit), then
    /// marks them published; or, when the delivery may `keep` the one step
    /// message they call for, carries out the rest and returns that one,
    /// marking nothing.
    async fn publish(
        &self,
        run: &RunRecord,
        step: u64,
        follow: Vec<FollowUp>,
        (files, child_state): (&BTreeMap<String, FileData>, &Map<String, Value>),
        keep: bool,
    ) -> Result<Option<Outgoing>, StepError> {
        // Before the next step goes out, so that step sees what this one
        // spent.
        spend::report(self.store.as_ref(), run).await?;
        let store = &*self.store;
        let kept =
            follow_up::publish(&*self.queue, store, run, follow, files, child_state, keep).await?;
        if kept.is_none() {
            store.mark_published(&run.thread_id, step).await?;
        }
        Ok(kept)
    }
}

/// Everything a committed step of `run` (its thread now at `step`) must
/// publish: the background tasks it started first (the parent's next step
/// may check them), then the run's own follow-ups.
fn all_follow_ups(
    spawned: Vec<ChildRun>,
    run: &RunRecord,
    step: u64,
    pending: Option<&PendingTools>,
) -> Vec<FollowUp> {
    let mut follow: Vec<FollowUp> = spawned.into_iter().map(FollowUp::StartChild).collect();
    follow.extend(follow_ups(run, step, pending));
    follow
}

/// The next step a delivery keeps: the run's own, or that of the
/// subagent it started or the parent it woke; and, when it is the run's
/// own, the commit event of the step before, still to send.
struct Kept {
    next: StepJob,
    /// The trace context its message would have carried.
    traceparent: Option<String>,
    announcement: Option<Announcement>,
}

/// A run and its thread as a step loaded them. Handed down boxed: an
/// `async fn` holds its by-value arguments for as long as it runs, beside
/// what it moves them into, so a step waiting on its model call would
/// otherwise hold them twice at every level.
struct Fetched {
    run: RunRecord,
    checkpoint: Checkpoint,
    /// Whether someone streams the run (`deltas::followed`).
    followed: bool,
}

/// A step ready to execute, and what its end needs.
struct Ready {
    agent: Arc<Agent>,
    spec: Arc<AgentSpec>,
    input: Box<StepInput>,
    /// The run as it started, to end it with should its deadline pass
    /// during the step.
    stopped: Box<RunRecord>,
    span: tracing::Span,
    started: Instant,
    /// How long the step may take, if anything limits it.
    limit: Option<Duration>,
    /// The thread's step it executes.
    step: u64,
    /// The thread's log length before the step.
    log_before: u64,
}

/// A committed step, as its follow-ups need it.
pub(super) struct Committed<'a> {
    /// The run as committed.
    pub(super) run: &'a RunRecord,
    /// The thread's step after the commit.
    pub(super) step: u64,
    /// The parked turn, if the run parked.
    pub(super) pending: Option<&'a PendingTools>,
    /// Background tasks the step started.
    pub(super) spawned: Vec<ChildRun>,
    /// The thread's files after the step (subagents' seed).
    pub(super) files: &'a BTreeMap<String, FileData>,
    /// The custom state subagents inherit.
    pub(super) child_state: &'a Map<String, Value>,
}

/// Reports the end of a step however it returns, so the in-flight gauge
/// cannot drift.
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
    checkpoint: &Checkpoint,
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
