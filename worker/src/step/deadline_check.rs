//! Deadline checks of parked runs ([`Job::DeadlineCheck`]): a run parked
//! on its subagents takes no step of its own until they report, so when
//! it parks with a deadline, a check goes out that ends it `timeout` once
//! the deadline passed (cancelling the subagents still out), or looks
//! again nearer to it.
//!
//! When the next check is due: [`follow_up::next_deadline_check`].
//!
//! [`Job::DeadlineCheck`]: deepfleet_proto::Job::DeadlineCheck

use std::time::Duration;

use chrono::Utc;
use deepfleet_proto::{RunStatus, StepJob};
use tracing::{debug, info, warn};

use crate::error::StepError;
use crate::step::follow_up;
use crate::step::halt::Halt;
use crate::step::io::Io;
use crate::step::run_end;
use crate::step::settle::Settlement;

/// How long after a failed deadline check it is tried again.
const RECHECK_AFTER: Duration = Duration::from_secs(1);

/// Handles a deadline check of the run parked at `job`: acked once
/// handled; after a failure (the store away), checked again a second
/// later.
pub(super) async fn settlement(io: &Io, job: &StepJob) -> Settlement {
    match check(io, job).await {
        Ok(()) => Settlement::Ack,
        Err(e) => {
            warn!(run = %job.run_id, error = %e, "a deadline check failed; checking again");
            Settlement::Recheck {
                job: job.clone(),
                after: RECHECK_AFTER,
            }
        }
    }
}

/// Ends the run parked at `job` if its deadline passed, or schedules the
/// next check.
async fn check(io: &Io, job: &StepJob) -> Result<(), StepError> {
    // A run that is gone (deleted, expired) needs no check.
    let Some(run) = io.store.get_run(&job.thread_id, &job.run_id).await? else {
        return Ok(());
    };
    let checkpoint = io.store.load_thread(&job.thread_id).await?;
    if checkpoint.step != job.step || run.status != RunStatus::Waiting {
        debug!(run = %job.run_id, step = job.step, "the run moved on; dropping its deadline check");
        return Ok(());
    }
    let now = Utc::now();
    if !run.past_deadline(now) {
        return follow_up::schedule_deadline_check(io.queue.as_ref(), &run, job.step, now).await;
    }
    info!(run = %job.run_id, step = job.step, "a parked run passed its deadline");
    let (status, error) = Halt::Timeout.ending(&run);
    run_end::end(io, run, checkpoint.step, status, error).await
}
