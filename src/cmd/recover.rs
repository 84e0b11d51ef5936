//! Picking up a persisted embedded store that another process left: its
//! in-memory queue went with it, so the steps of the runs it left queued
//! or executing are published again. A step that had been taken already
//! is fenced by the worker.

use deepfleet_fleet::publish_step;
use deepfleet_proto::{RunRecord, StepJob};
use deepfleet_queue::Queue;
use deepfleet_store::embedded::EmbeddedStore;

/// Publishes the next step of every run `store` holds queued or
/// executing; returns those runs.
pub async fn republish_steps(
    store: &EmbeddedStore,
    queue: &dyn Queue,
) -> anyhow::Result<Vec<RunRecord>> {
    let mut runs = Vec::new();
    for (run, step) in store.runs_to_recover() {
        let job = StepJob {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            step,
            priority: run.priority,
        };
        publish_step(queue, job, None).await?;
        runs.push(run);
    }
    Ok(runs)
}
