//! Everything a step needs before its model call: its subagents'
//! results, its spec and agent, its runtime context, its concurrency
//! slots, and its clock and span.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use deepfleet_model::Providers;
use deepfleet_proto::{AgentSpec, ChildResult, RunRecord, StepJob};
use deepfleet_store::sealed::ContextKey;
use deepfleet_store::{Checkpoint, Store, StoreError};
use tracing::debug;

use crate::agent::{Agent, AgentCache};
use crate::error::StepError;
use crate::sandbox::SandboxHost;
use crate::step::execute::StepInput;
use crate::step::load::Fetched;
use crate::step::slots;
use crate::step::spans;
use crate::step::spec_versions::SpecVersions;

/// What a worker prepares its steps with: the agents it built, the
/// model providers, the spec versions it read, and the key that opens
/// runs' sealed context.
pub(super) struct Preparer {
    pub(super) agents: AgentCache,
    pub(super) providers: Arc<Providers>,
    /// The spec versions this worker's steps have read.
    pub(super) specs: SpecVersions,
    /// Opens runs' sealed runtime context; `None` fails runs that have one.
    pub(super) context_key: Option<ContextKey>,
}

/// A step ready to execute, and what its end needs.
pub(super) struct Ready {
    pub(super) agent: Arc<Agent>,
    pub(super) spec: Arc<AgentSpec>,
    pub(super) input: Box<StepInput>,
    /// The run as it started, to end it with should its deadline pass
    /// during the step.
    pub(super) stopped: Box<RunRecord>,
    pub(super) span: tracing::Span,
    pub(super) started: Instant,
    /// How long the step may take, if anything limits it.
    pub(super) limit: Option<Duration>,
    /// The thread's step it executes.
    pub(super) step: u64,
    /// The thread's log length before the step.
    pub(super) log_before: u64,
}

impl Preparer {
    /// Where the agents' `execute` commands run.
    pub(super) fn sandbox(&self) -> &Arc<SandboxHost> {
        &self.agents.options().sandbox
    }

    /// The spec `run` was started with: its pinned version (read once per
    /// worker), or (a record from before versions) the one served under
    /// its agent's name.
    pub(super) async fn spec_of(
        &self,
        store: &dyn Store,
        run: &RunRecord,
    ) -> Result<Option<Arc<AgentSpec>>, StoreError> {
        match &run.spec_version {
            Some(version) => self.specs.get(store, &run.agent, version).await,
            None => Ok(store.get_spec(&run.agent).await?.map(Arc::new)),
        }
    }

    /// Prepares the step of `fetched`, or `None` while some of its
    /// subagents' results are missing.
    pub(super) async fn prepare(
        &self,
        store: &dyn Store,
        job: &StepJob,
        fetched: Box<Fetched>,
        traceparent: Option<&str>,
    ) -> Result<Option<Ready>, StepError> {
        let Fetched {
            mut run,
            checkpoint,
            followed,
        } = *fetched;
        let Some(children) = children(store, job, &checkpoint).await? else {
            return Ok(None);
        };
        let spec = self
            .spec_of(store, &run)
            .await?
            .ok_or_else(|| StepError::Agent {
                agent: run.agent.clone(),
                message: match &run.spec_version {
                    Some(version) => {
                        format!("no version {version} of this agent spec in the store")
                    }
                    None => "no such agent spec in the store".to_owned(),
                },
            })?;
        let agent = self.agents.get(&spec, &run, &self.providers)?;
        let context = self.open_context(&run)?;
        // Before its clock starts: a run waiting for a place has not begun.
        slots::take(store, &run).await?;
        run.start_clock(Utc::now());
        let started = Instant::now();
        let span = spans::step(&mut run, &checkpoint, traceparent);
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
}

/// The results of the subagents a parked run waits on (none when it
/// waits on none), or `None` while some are still missing.
async fn children(
    store: &dyn Store,
    job: &StepJob,
    checkpoint: &Checkpoint,
) -> Result<Option<Vec<ChildResult>>, StoreError> {
    let Some(pending) = checkpoint
        .pending
        .as_ref()
        .filter(|p| !p.children.is_empty())
    else {
        return Ok(Some(Vec::new()));
    };
    let children = store.child_results(&job.thread_id, &job.run_id).await?;
    Ok((children.len() >= pending.children.len()).then_some(children))
}
