//! One step message carried out: loaded, decided, then skipped,
//! rejected, republished, halted, or executed and committed.

use std::sync::Arc;

use chrono::Utc;
use deepfleet_proto::StepJob;
use tracing::{Instrument, debug, info};

use crate::error::StepError;
use crate::step::committed::{self, Kept};
use crate::step::decide::Decision;
use crate::step::execute::execute;
use crate::step::failure::Failure;
use crate::step::halt::Halt;
use crate::step::hold::Hold;
use crate::step::io::Io;
use crate::step::load::{Fetched, load};
use crate::step::prepare::{Preparer, Ready};
use crate::step::run_end;

/// Handles `job`. On the `last_delivery` the queue allows, a step that
/// still has to execute is not run: if this worker died too, the queue
/// would drop the message and the run would hang. It fails with
/// [`StepError::LastDelivery`] instead, which goes out again as a fresh
/// message (one attempt more, after a backoff), or ends the run once
/// no attempt is left.
///
/// Returns the run's next step when the delivery keeps it.
pub(super) async fn step(
    io: &Io,
    prep: &Preparer,
    job: &StepJob,
    traceparent: Option<&str>,
    last_delivery: bool,
    hold: &Hold<'_>,
) -> Result<Option<Kept>, Failure> {
    let (decision, fetched) = load(&*io.store, job).await?;
    match decision {
        Decision::Skip(reason) => {
            debug!(run = %job.run_id, step = job.step, reason, "skipping step message");
            Ok(None)
        }
        Decision::Reject(reason) => Err(Failure::Reject(reason)),
        Decision::Republish => {
            info!(run = %job.run_id, step = job.step, "republishing follow-ups of a redelivered step");
            let spec = prep.spec_of(&*io.store, &fetched.run).await?;
            committed::republish(io, spec.as_deref(), &fetched.run, &fetched.checkpoint).await?;
            Ok(None)
        }
        Decision::Halt(halt) => {
            info!(run = %job.run_id, step = job.step, ?halt, "stopping the run");
            let (status, error) = halt.ending(&fetched.run);
            let Fetched {
                run, checkpoint, ..
            } = *fetched;
            Box::pin(run_end::end(io, run, checkpoint.step, status, error)).await?;
            Ok(None)
        }
        Decision::Execute if last_delivery => Err(Failure::Step(StepError::LastDelivery)),
        Decision::Execute => execute_step(io, prep, job, fetched, traceparent, hold).await,
    }
}

/// Executes the step of `fetched` and commits the result; returns the
/// run's next step when `hold` keeps it.
///
/// This future is what every step waiting on its model call holds, so
/// it keeps little across that wait: the preparation and the commit
/// are futures of their own, alive only before and after it.
async fn execute_step(
    io: &Io,
    prep: &Preparer,
    job: &StepJob,
    fetched: Box<Fetched>,
    traceparent: Option<&str>,
    hold: &Hold<'_>,
) -> Result<Option<Kept>, Failure> {
    let Some(ready) = prep.prepare(&*io.store, job, fetched, traceparent).await? else {
        debug!(run = %job.run_id, "step message before all subagents finished");
        return Ok(None);
    };
    let Ready {
        agent,
        spec,
        input,
        stopped,
        span,
        started,
        limit,
        step,
        log_before,
    } = ready;
    let executing =
        execute(&agent, spec, input, Arc::clone(&io.events), &io.store).instrument(span.clone());
    let executed = match limit {
        Some(limit) => match tokio::time::timeout(limit, executing).await {
            Ok(executed) => executed?,
            Err(_) if stopped.past_deadline(Utc::now()) => {
                info!(run = %job.run_id, step, "the run's deadline passed during its step");
                let (status, error) = Halt::Timeout.ending(&stopped);
                Box::pin(run_end::end(io, *stopped, step, status, error)).await?;
                return Ok(None);
            }
            Err(_) => return Err(Failure::Step(StepError::TimedOut(limit))),
        },
        None => executing.await?,
    };
    let committing = committed::commit(io, job, executed, &span, started, log_before, hold);
    Ok(Box::pin(committing).await?)
}
