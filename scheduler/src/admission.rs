//! The admission sweep: what keeps every batch's admission window full
//! when the usual path (an ended run's follow-up admits the next, see
//! [`deepfleet_store::Admission`]) did not happen, and the run that
//! closes a batch's admission once nothing is left in it.
//!
//! Each round, for every batch with an admission, it
//! - handles the end of each admitted run that ended without its
//!   follow-up (a run ended outside a worker, or whose record went):
//!   the same `admit_after` the worker calls, so both answer alike;
//! - publishes again the first step of an admitted run that stayed
//!   unstarted for [`UNSTARTED_GRACE`] (its publisher died between
//!   admitting and publishing; a duplicate is fenced by the worker);
//! - tops the window up from the waiting runs (a window that grew);
//!
//! and, once per round, gives back the concurrency slots of runs that
//! ended without their follow-up ([`crate::slot_sweep`]).
//!
//! Every scheduler instance, and embedded mode's batch, may run it: each
//! operation is atomic in the store and idempotent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deepfleet_fleet::admission::start_admitted;
use deepfleet_proto::RunStatus;
use deepfleet_queue::Queue;
use deepfleet_store::Store;
use tokio::sync::Mutex;
use tracing::warn;

use crate::error::SchedulerError;

/// How long an admitted run may stay unstarted before the sweep
/// publishes its first step itself: far longer than one publish takes.
pub const UNSTARTED_GRACE: Duration = Duration::from_secs(2);

/// The sweep over one store and queue.
#[derive(Clone)]
pub struct AdmissionSweep {
    store: Arc<dyn Store>,
    queue: Arc<dyn Queue>,
    /// When the sweep first saw each (batch, run) unstarted.
    unstarted_since: Arc<Mutex<HashMap<(String, String), Instant>>>,
}

impl AdmissionSweep {
    /// A sweep of `store`'s admissions, publishing to `queue`.
    pub fn new(store: Arc<dyn Store>, queue: Arc<dyn Queue>) -> Self {
        AdmissionSweep {
            store,
            queue,
            unstarted_since: Arc::default(),
        }
    }

    /// One round over every batch with an admission; returns how many
    /// runs it started.
    pub async fn sweep(&self) -> Result<usize, SchedulerError> {
        let mut started = 0;
        let mut seen = HashMap::new();
        for batch in self.store.admission_batches().await? {
            started += self.sweep_batch(&batch, &mut seen).await?;
        }
        crate::slot_sweep::release_ended(self.store.as_ref()).await?;
        *self.unstarted_since.lock().await = seen;
        Ok(started)
    }

    /// Runs [`AdmissionSweep::sweep`] every `every` until the task is
    /// dropped; errors are logged and retried on the next round.
    pub async fn run(self, every: Duration) {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(e) = self.sweep().await {
                warn!(error = %e, "sweeping batch admissions");
            }
        }
    }

    async fn sweep_batch(
        &self,
        batch: &str,
        seen: &mut HashMap<(String, String), Instant>,
    ) -> Result<usize, SchedulerError> {
        let store = self.store.as_ref();
        let queue = self.queue.as_ref();
        let state = store.admission_state(batch).await?;
        let mut start = Vec::new();
        for run_id in &state.admitted {
            let ended = store.find_run(run_id).await?.is_none_or(|run| {
                run.status.is_terminal() || run.status == RunStatus::AwaitingHuman
            });
            if ended && let Some(next) = store.admit_after(batch, run_id).await? {
                start.push(next);
            }
        }
        let now = Instant::now();
        let earlier = self.unstarted_since.lock().await.clone();
        for run_id in state.unstarted {
            let key = (batch.to_owned(), run_id);
            let since = earlier.get(&key).copied().unwrap_or(now);
            if now.duration_since(since) >= UNSTARTED_GRACE {
                start.push(key.1.clone());
            } else {
                seen.insert(key, since);
            }
        }
        start.extend(store.top_up(batch).await?);
        start.sort();
        start.dedup();
        start_admitted::<SchedulerError>(queue, store, batch, &start).await?;
        if state.waiting == 0 && state.admitted.is_empty() {
            store.close_admission(batch).await?;
        }
        Ok(start.len())
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_proto::{AgentSpec, TaskLine};
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::embedded::EmbeddedStore;

    use super::*;
    use crate::{Intake, submit_task};

    fn task(id: &str) -> TaskLine {
        TaskLine {
            id: id.into(),
            input: format!("do {id}"),
            context: None,
            files: None,
            state: None,
            timeout_secs: None,
        }
    }

    #[tokio::test]
    async fn a_batch_starts_its_window_and_the_sweep_replaces_runs_that_ended_unseen() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let queue = Arc::new(MemoryQueue::new());
        let intake = Intake::new(Arc::clone(&store), queue.clone()).with_admission_window(2);
        intake
            .register(&AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let mut runs = Vec::new();
        for id in ["t1", "t2", "t3", "t4"] {
            runs.push(
                submit_task(&intake, "a", &task(id), Some("b1"))
                    .await
                    .unwrap(),
            );
        }
        assert_eq!(
            queue.depth().await.unwrap(),
            Some(2),
            "the window's first steps"
        );
        let state = store.admission_state("b1").await.unwrap();
        assert_eq!((state.window, state.waiting), (2, 2));
        assert!(state.unstarted.is_empty(), "the intake marked them started");
        let sweep = AdmissionSweep::new(Arc::clone(&store), queue.clone());
        assert_eq!(sweep.sweep().await.unwrap(), 0, "the window is full");
        // A run ends without its follow-up (its worker died for good).
        let mut ended = runs[0].clone();
        ended.status = RunStatus::Cancelled;
        let commit = deepfleet_store::StepCommit {
            thread_id: ended.thread_id.clone(),
            step: 0,
            messages: Vec::new(),
            files: Default::default(),
            state: None,
            pending: None,
            run: ended,
            fan_in_expected: None,
            context: None,
        };
        store.commit_step(&commit).await.unwrap();
        assert_eq!(sweep.sweep().await.unwrap(), 1);
        assert_eq!(queue.depth().await.unwrap(), Some(3));
        assert_eq!(
            store.admit_after("b1", &runs[0].run_id).await.unwrap(),
            Some(runs[2].run_id.clone()),
            "the sweep's answer is the one a late follow-up gets"
        );
    }
}
