//! Ending a run outside a step's own commit (cancelled, past its
//! deadline, over budget, failed) and publishing what its end implies.

use chrono::Utc;
use deepfleet_fleet::publish_step;
use deepfleet_proto::{ErrorCode, RunError, RunRecord, RunStatus, StepJob};
use deepfleet_store::{CommitOutcome, StepCommit};

use crate::error::StepError;
use crate::events::EventScope;
use crate::step::announce::announce;
use crate::step::committed::{self, Committed};
use crate::step::io::Io;

/// Ends `run`, its thread at `step`, with `status` and publishes what its
/// end implies; nothing when the run has moved on or ended already.
pub(super) async fn end(
    io: &Io,
    mut run: RunRecord,
    step: u64,
    status: RunStatus,
    error: RunError,
) -> Result<(), StepError> {
    let checkpoint = io.store.load_thread(&run.thread_id).await?;
    if checkpoint.step != step || run.status.is_terminal() {
        return Ok(());
    }
    if let Some(pending) = &checkpoint.pending {
        // Cancel and failure cascade to the subagents still running.
        for child in &pending.children {
            io.store
                .request_cancel(&child.thread_id, &child.run_id)
                .await?;
            wake_if_interrupted(io, &child.thread_id, &child.run_id).await?;
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
    if let CommitOutcome::Committed = io.store.commit_step(&commit).await? {
        committed::finished(&*io.events, &EventScope::of(&run), &run);
        let log = checkpoint.messages.len() as u64;
        announce(&*io.store, &run, step, log, log).await;
        let committed = Committed {
            run: &run,
            step: step + 1,
            pending: None,
            spawned: Vec::new(),
            files: &checkpoint.files,
            child_state: &Default::default(),
        };
        committed::publish_follow_ups(io, committed).await?;
    }
    Ok(())
}

/// Ends the run of `job` `error`, recording `code` and `error`; a run
/// that is gone needs nothing.
pub(super) async fn fail(
    io: &Io,
    job: &StepJob,
    code: ErrorCode,
    error: &StepError,
) -> Result<(), StepError> {
    let Some(run) = io.store.get_run(&job.thread_id, &job.run_id).await? else {
        return Ok(());
    };
    let error = RunError {
        code,
        message: error.to_string(),
    };
    end(io, run, job.step, RunStatus::Error, error).await
}

/// Publishes a step for a cancelled subagent that waits for a human:
/// it has no step message out to see its cancel flag, and would stay
/// `interrupted` until its thread expired. Its step ends it
/// `cancelled` (a waiting run's only halt, see `decide`); a running
/// one has its message out already and gets none, so no step runs
/// twice at once.
async fn wake_if_interrupted(io: &Io, thread_id: &str, run_id: &str) -> Result<(), StepError> {
    let Some(child) = io.store.get_run(thread_id, run_id).await? else {
        return Ok(());
    };
    if child.status != RunStatus::AwaitingHuman {
        return Ok(());
    }
    let step = io.store.load_thread(thread_id).await?.step;
    let job = StepJob {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        step,
        priority: child.priority,
    };
    publish_step(&*io.queue, job, child.traceparent).await?;
    Ok(())
}
