//! Making a run: the one function every new run goes through, whichever
//! entry brought it. The API's entries (HTTP, A2A, MCP, the submissions
//! queue and crons) reach it through the lifecycle's start, once their
//! run is admitted on its thread; the CLI's `run` and `submit` through
//! [`crate::runs::tasks`], one task line at a time. Each entry checks its
//! own input and hands over a [`RunDraft`]; what every run gets (its
//! spec's version, deadline, budgets, concurrency limits and retention,
//! an input stored with its token count, its first step) is decided here
//! and only here.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_fleet::admission::start_admitted;
use deepfleet_fleet::publish_step;
use deepfleet_fleet::tokens::logged;
use deepfleet_proto::{
    Budget, FileData, Message, Priority, RunRecord, SealedContext, ServedSpec, StepJob, TenantId,
};
use deepfleet_store::{Entered, ThreadSeed};
use serde_json::{Map, Value};

use crate::error::SchedulerError;
use crate::intake::Intake;
use crate::retention::TEMPORARY_THREAD_SECS;

/// A new run as its entry checked it, before it has a record.
#[derive(Debug, Clone)]
pub struct RunDraft {
    /// The run's id.
    pub run_id: String,
    /// The thread it runs on.
    pub thread_id: String,
    /// The tenant it belongs to.
    pub tenant: TenantId,
    /// The spec it runs (the agent's name and the version it keeps).
    pub spec: ServedSpec,
    /// The lane its steps take.
    pub priority: Priority,
    /// When its entry took it.
    pub created_at: DateTime<Utc>,
    /// Its runtime context, sealed.
    pub context: Option<SealedContext>,
    /// The batch it belongs to.
    pub batch: BatchLink,
    /// The task line it runs, for runs from task lines.
    pub task_id: Option<String>,
    /// The timeout its request asked for, in seconds.
    pub timeout_secs: Option<u64>,
    /// Whether its thread is a stateless request's temporary one.
    pub temporary_thread: bool,
    /// What it brings to its thread: the input messages, seed files and
    /// custom state.
    pub input: Vec<Message>,
    /// Seed files by normalised path.
    pub files: BTreeMap<String, FileData>,
    /// Seed values of the spec's custom state.
    pub state: Map<String, Value>,
}

/// The batch a run belongs to, by kind: each kind is followed through
/// its own records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchLink {
    /// A single run.
    None,
    /// A batch made over the API (`POST /runs/batch`), followed through
    /// its API records.
    Api(String),
    /// A batch of task lines (`deepfleet run`/`submit`), followed through
    /// its done list; its runs may wait in its admission window and share
    /// its budget.
    Tasks(String),
}

/// Makes `draft`'s run: records it with its thread's seed and starts it,
/// its first step published or, in a task batch with an admission window,
/// entered there. Idempotent: a run that exists already is neither seeded
/// nor started again (a duplicate first step would be fenced by the
/// worker anyway), and `None` says so; otherwise the new record.
pub async fn make_run(
    intake: &Intake,
    draft: RunDraft,
) -> Result<Option<RunRecord>, SchedulerError> {
    let RunDraft {
        run_id,
        thread_id,
        tenant,
        spec: ServedSpec { version, spec },
        priority,
        created_at,
        context,
        batch,
        task_id,
        timeout_secs,
        temporary_thread,
        input,
        files,
        state,
    } = draft;
    let now = Utc::now();
    // A stateless run's thread goes with it (a follower that waits for
    // the run removes it sooner); a batch's runs hold its results, so
    // they live as long as the tenant keeps ended runs.
    let expire_after_secs = if temporary_thread && batch == BatchLink::None {
        Some(TEMPORARY_THREAD_SECS)
    } else {
        intake.retention().expire_after_secs(&tenant)
    };
    let (batch_id, api_batch_id) = match batch {
        BatchLink::None => (None, None),
        BatchLink::Api(id) => (None, Some(id)),
        BatchLink::Tasks(id) => (Some(id), None),
    };
    let batch_budget = batch_id
        .as_deref()
        .zip(intake.batch_budget())
        .map(|(batch, limit)| Budget::batch(batch, limit));
    let mut run = RunRecord {
        batch_id,
        api_batch_id,
        task_id,
        context,
        tenant,
        expire_after_secs,
        spec_version: Some(version),
        priority,
        updated_at: now,
        ..RunRecord::new(run_id, thread_id, spec.name.clone(), created_at)
    };
    intake
        .bounds()
        .apply(&mut run, &spec, timeout_secs, batch_budget, now);
    let seed = ThreadSeed {
        messages: input.into_iter().map(logged).collect(),
        files,
        state,
    };
    let Some(step) = intake.store().create_run(&run, &seed).await? else {
        return Ok(None);
    };
    match (&run.batch_id, intake.admission_window()) {
        (Some(batch_id), Some(_)) => enter_admission(intake, &run, batch_id).await?,
        _ => {
            let job = StepJob {
                run_id: run.run_id.clone(),
                thread_id: run.thread_id.clone(),
                step,
                priority: run.priority,
            };
            publish_step(intake.queue().as_ref(), job, None).await?;
        }
    }
    Ok(Some(run))
}

/// Enters a created `run` into task batch `batch_id`'s admission window
/// and publishes its first step if it is admitted; without a window,
/// does nothing.
pub(crate) async fn enter_admission(
    intake: &Intake,
    run: &RunRecord,
    batch_id: &str,
) -> Result<(), SchedulerError> {
    let Some(window) = intake.admission_window() else {
        return Ok(());
    };
    let entered = intake
        .store()
        .enter_admission(batch_id, &run.run_id, window)
        .await?;
    if entered == Entered::Start {
        let runs = [run.run_id.clone()];
        start_admitted::<SchedulerError>(
            intake.queue().as_ref(),
            intake.store().as_ref(),
            batch_id,
            &runs,
        )
        .await?;
    }
    Ok(())
}
