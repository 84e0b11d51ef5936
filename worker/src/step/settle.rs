//! Settling a delivery (`docs/step-protocol.md`, step 9): the one answer
//! each queue message gets, and the only place a delivery is acked,
//! requeued or dead-lettered.
//!
//! Handling a message comes to one [`Settlement`]: `driver` decides it
//! for a handled or malformed message, `failure` (pure, with `throttle`)
//! for a step that failed, `deadline_check` for a deadline check.
//! [`settle`] carries it out, with the events that report it. A settlement that publishes
//! the message again acks the delivery only once the queue holds the new
//! one, and hands the delivery back otherwise, so no step is lost.

use std::time::Duration;

use chrono::Utc;
use deepfleet_fleet::publish_deadline_check;
use deepfleet_proto::{Envelope, ErrorCode, Job, StepJob};
use deepfleet_queue::Delivery;
use tracing::{debug, warn};

use crate::error::StepError;
use crate::events::{DeadLetterReason, Event, EventScope};
use crate::step::io::Io;
use crate::step::run_end;
use crate::step::throttle::Deferral;

/// How a handled message's delivery is settled.
#[derive(Debug)]
pub(super) enum Settlement {
    /// Handled (or nothing to do): ack it.
    Ack,
    /// The message is bad: dead-letter it for an operator.
    DeadLetter {
        reason: DeadLetterReason,
        detail: String,
    },
    /// The step must wait (`throttle`): publish `envelope` again, its
    /// attempt unchanged, after the deferral's delay.
    Defer {
        envelope: Envelope,
        deferral: Deferral,
    },
    /// The step failed and may pass later: publish `envelope` (its attempt
    /// already raised) again after `after`.
    Retry {
        envelope: Envelope,
        after: Duration,
        error: StepError,
    },
    /// The run cannot go on: end it with `code`, then dead-letter the
    /// message when its attempts ran out, or ack it.
    FailRun {
        job: StepJob,
        code: ErrorCode,
        error: StepError,
    },
    /// A deadline check could not be made: publish it again, due after
    /// `after`.
    Recheck { job: StepJob, after: Duration },
}

/// The step `envelope` carries (a deadline check's names its step too).
fn job_of(envelope: &Envelope) -> &StepJob {
    match &envelope.job {
        Job::Step(job) | Job::DeadlineCheck(job) => job,
    }
}

/// Settles `delivery` as `settlement` says, reporting it under `scope`.
/// A settle that fails is logged: the message comes back, and fencing
/// makes the repeat harmless.
pub(super) async fn settle(
    io: &Io,
    delivery: Box<dyn Delivery>,
    scope: &EventScope,
    settlement: Settlement,
) {
    match settlement {
        Settlement::Ack => {
            if let Err(e) = delivery.ack().await {
                warn!(run = %scope.run_id, error = %e, "ack failed");
            }
        }
        Settlement::DeadLetter { reason, detail } => {
            io.events.emit(scope, &Event::DeadLettered { reason });
            warn!(reason = detail.as_str(), "dead-lettering a message");
            if let Err(e) = delivery.dead_letter(&detail).await {
                warn!(error = %e, "dead-lettering failed");
            }
        }
        Settlement::Defer { envelope, deferral } => {
            let job = job_of(&envelope);
            let delay = deferral.delay();
            match deferral {
                Deferral::Capacity(wait) => {
                    debug!(run = %job.run_id, step = job.step, ?wait, ?delay, "no model capacity yet; deferring the step");
                    io.events.emit(scope, &Event::RateLimitWait { wait: delay });
                }
                Deferral::Slot(pool) => {
                    debug!(run = %job.run_id, step = job.step, pool = %pool.name(), "concurrency pool full; deferring the step");
                    io.events.emit(scope, &Event::SlotWait { pool });
                }
            }
            // Back on the run's own lane: an interactive step stays ahead
            // of batch steps when it returns.
            publish_again(io, delivery, envelope, delay, "deferred").await;
        }
        Settlement::Retry {
            envelope,
            after,
            error,
        } => {
            let job = job_of(&envelope);
            let attempt = envelope.attempt;
            warn!(run = %job.run_id, step = job.step, attempt, delay = ?after, error = %error, "step failed; retrying");
            io.events
                .emit(scope, &Event::Retried { code: error.code() });
            publish_again(io, delivery, envelope, after, "retried").await;
        }
        Settlement::FailRun { job, code, error } => {
            // Boxed: ending a run is a large future, and rare.
            Box::pin(fail_run(io, delivery, scope, job, code, error)).await;
        }
        Settlement::Recheck { job, after } => {
            let settled = match publish_deadline_check(&*io.queue, job.clone(), after).await {
                Ok(()) => delivery.ack().await,
                Err(_) => delivery.requeue().await,
            };
            if let Err(e) = settled {
                warn!(run = %job.run_id, error = %e, "settling a deadline check failed");
            }
        }
    }
}

/// Ends the run of `job` with `code`, then dead-letters the message when
/// its attempts ran out (ours or the queue's: an operator looks at it)
/// or acks it (the failure was handled); hands it back when recording
/// the failure failed too.
async fn fail_run(
    io: &Io,
    delivery: Box<dyn Delivery>,
    scope: &EventScope,
    job: StepJob,
    code: ErrorCode,
    error: StepError,
) {
    let reason = format!("{code}: {error}");
    warn!(run = %job.run_id, step = job.step, %reason, "run failed");
    if let Err(e) = run_end::fail(io, &job, code, &error).await {
        warn!(run = %job.run_id, error = %e, "recording a run failure failed");
        if let Err(e) = delivery.requeue().await {
            warn!(run = %job.run_id, error = %e, "requeue failed");
        }
        return;
    }
    let settled = if code == ErrorCode::AttemptsExhausted {
        io.events.emit(
            scope,
            &Event::DeadLettered {
                reason: DeadLetterReason::AttemptsExhausted,
            },
        );
        delivery.dead_letter(&reason).await
    } else {
        delivery.ack().await
    };
    if let Err(e) = settled {
        warn!(run = %job.run_id, error = %e, "settling a failed step failed");
    }
}

/// Publishes `envelope` again on its run's lane, due after `delay` (its
/// queue wait starting then), and acks `delivery`; hands the delivery
/// back when the publish failed, so the step is never lost.
async fn publish_again(
    io: &Io,
    delivery: Box<dyn Delivery>,
    envelope: Envelope,
    delay: Duration,
    what: &str,
) {
    let due = chrono::Duration::from_std(delay)
        .ok()
        .map(|d| Utc::now() + d);
    let again = Envelope {
        published_at: due,
        ..envelope
    };
    let job = job_of(&again);
    let republished = match serde_json::to_vec(&again) {
        Ok(payload) => io
            .queue
            .publish_to(job.priority, payload, Some(delay))
            .await
            .is_ok(),
        Err(_) => false,
    };
    let settled = if republished {
        delivery.ack().await
    } else {
        delivery.requeue().await
    };
    if let Err(e) = settled {
        warn!(run = %job.run_id, error = %e, "settling a {what} step failed");
    }
}
