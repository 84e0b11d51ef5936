//! Loading what a step message names, and deciding what it does
//! (`docs/step-protocol.md`, steps 2-3).

use chrono::Utc;
use deepfleet_proto::{ErrorCode, RunRecord, StepJob};
use deepfleet_store::{Checkpoint, Store};

use crate::step::decide::{Decision, decide};
use crate::step::deltas;
use crate::step::failure::Failure;
use crate::step::halt;

/// A run and its thread as a step loaded them. Handed down boxed: an
/// `async fn` holds its by-value arguments for as long as it runs, beside
/// what it moves them into, so a step waiting on its model call would
/// otherwise hold them twice at every level.
pub(super) struct Fetched {
    pub(super) run: RunRecord,
    pub(super) checkpoint: Checkpoint,
    /// Whether someone streams the run (`deltas::followed`).
    pub(super) followed: bool,
}

/// Loads the run and thread `job` steps and decides what to do; a run
/// the store does not know rejects the message.
pub(super) async fn load(
    store: &dyn Store,
    job: &StepJob,
) -> Result<(Decision, Box<Fetched>), Failure> {
    // Four reads that do not depend on each other, sent together: on
    // Redis they share one round trip instead of taking four.
    let (run, checkpoint, cancel, followed) = tokio::try_join!(
        store.get_run(&job.thread_id, &job.run_id),
        store.load_thread(&job.thread_id),
        store.cancel_requested(&job.thread_id, &job.run_id),
        async { Ok(deltas::followed(store, &job.run_id).await) },
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
        halt::check(store, &run, cancel, Utc::now()).await?
    };
    let decision = decide(job, &run, checkpoint.step, checkpoint.published, halt);
    let fetched = Fetched {
        run,
        checkpoint,
        followed,
    };
    Ok((decision, Box::new(fetched)))
}
