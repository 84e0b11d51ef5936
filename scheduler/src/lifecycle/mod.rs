//! The API's run lifecycle around the step protocol: the status the API
//! reports, the per-thread run queue that keeps one active run per
//! thread, and the multitask strategies that decide what a new run does
//! to the runs ahead of it. Handlers call these; they write nothing about
//! runs themselves.
//!
//! A run created while its thread is busy is recorded as *queued* (its
//! input is not applied to the thread yet); [`Lifecycle::start_queued`]
//! starts the oldest queued run of every thread whose active run has
//! ended. Every scheduler instance may run it: starting is idempotent
//! ([`make_run`](crate::make_run::make_run) creates a run once), and the queue lives in the
//! store, so a scheduler restart loses nothing.

pub mod cancel;
pub mod multitask;
pub mod new_run;
pub mod queue;
pub mod rewind;
pub mod status;
pub mod thread_lease;
pub mod thread_ttl;
pub mod threads;

use std::sync::Arc;
use std::time::Duration;

use deepfleet_store::Store;
use tracing::warn;

use crate::admission::AdmissionSweep;
use crate::intake::Intake;

/// The lifecycle operations the API needs, over one store and intake.
#[derive(Clone)]
pub struct Lifecycle {
    intake: Intake,
}

impl Lifecycle {
    /// A lifecycle over `intake`'s store and queue.
    pub fn new(intake: Intake) -> Self {
        Lifecycle { intake }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        self.intake.store()
    }

    /// The intake.
    pub fn intake(&self) -> &Intake {
        &self.intake
    }

    /// Runs the rollbacks of stopped runs, [`Lifecycle::start_queued`],
    /// the batch admission sweep ([`AdmissionSweep::sweep`]) and the
    /// thread ttl sweep ([`Lifecycle::sweep_thread_ttls`]) every `every`
    /// until the task is dropped; errors are logged and retried on the
    /// next round.
    pub async fn run_starter(self, every: Duration) {
        let admissions = AdmissionSweep::new(
            Arc::clone(self.intake.store()),
            Arc::clone(self.intake.queue()),
        );
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.settle_rollbacks().await {
                warn!(error = %e, "rolling back stopped runs");
            }
            if let Err(e) = self.start_queued().await {
                warn!(error = %e, "starting queued runs");
            }
            if let Err(e) = admissions.sweep().await {
                warn!(error = %e, "sweeping batch admissions");
            }
            if let Err(e) = self.sweep_thread_ttls().await {
                warn!(error = %e, "deleting threads whose ttl ran out");
            }
        }
    }
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
