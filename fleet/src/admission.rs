//! Starting the runs a batch's admission window let in
//! ([`deepfleet_store::Admission`]): the worker does it for the run an
//! ended run admits, the intake for the runs a new batch admits at once,
//! the sweep for the rest.

use deepfleet_proto::{RunStatus, StepJob};
use deepfleet_queue::Queue;
use deepfleet_store::{Store, StoreError};

use crate::error::PublishError;
use crate::publish::publish_step;

/// Publishes the first step of each of `runs`, admitted in batch
/// `batch_id`, then marks them started. A run that is no longer pending
/// (it ended meanwhile, or a step of it ran) gets no step; one that is
/// gone is skipped. Publishing twice is harmless: the worker fences the
/// second step message.
pub async fn start_admitted<E>(
    queue: &dyn Queue,
    store: &dyn Store,
    batch_id: &str,
    runs: &[String],
) -> Result<(), E>
where
    E: From<StoreError> + From<PublishError>,
{
    for run_id in runs {
        let Some(run) = store.find_run(run_id).await? else {
            continue;
        };
        if run.status != RunStatus::Pending {
            continue;
        }
        let step = store.load_thread(&run.thread_id).await?.step;
        let job = StepJob {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            step,
            priority: run.priority,
        };
        publish_step(queue, job, run.traceparent.clone()).await?;
    }
    store.admission_started(batch_id, runs).await?;
    Ok(())
}
