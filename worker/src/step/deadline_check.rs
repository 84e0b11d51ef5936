//! Deadline checks of parked runs ([`Job::DeadlineCheck`]): a run parked
//! on its subagents takes no step of its own until they report, so when
//! it parks with a deadline, a check goes out that ends it `timeout` once
//! the deadline passed (cancelling the subagents still out), or looks
//! again nearer to it.
//!
//! When the next check is due: [`follow_up::next_deadline_check`].
//!
//! [`Job::DeadlineCheck`]: deepfleet_proto::Job::DeadlineCheck

use chrono::Utc;
use deepfleet_proto::{RunStatus, StepJob};
use tracing::{debug, info};

use crate::error::StepError;
use crate::step::driver::StepRunner;
use crate::step::follow_up;
use crate::step::halt::Halt;

impl StepRunner {
    /// Handles a deadline check of the run parked at `job`.
    pub(super) async fn check_deadline(&self, job: &StepJob) -> Result<(), StepError> {
        // A run that is gone (deleted, expired) needs no check.
        let Some(run) = self.store.get_run(&job.thread_id, &job.run_id).await? else {
            return Ok(());
        };
        let checkpoint = self.store.load_thread(&job.thread_id).await?;
        if checkpoint.step != job.step || run.status != RunStatus::Waiting {
            debug!(run = %job.run_id, step = job.step, "the run moved on; dropping its deadline check");
            return Ok(());
        }
        let now = Utc::now();
        if !run.past_deadline(now) {
            return follow_up::schedule_deadline_check(self.queue.as_ref(), &run, job.step, now)
                .await;
        }
        info!(run = %job.run_id, step = job.step, "a parked run passed its deadline");
        let (status, error) = Halt::Timeout.ending(&run);
        self.end_run(run, checkpoint.step, status, error).await
    }
}
