//! The IO side of the step protocol: one queue delivery in, its steps
//! run (the next one kept while `hold` allows), and one settlement out,
//! which `settle` carries out last.

use std::sync::Arc;

use chrono::Utc;
use deepfleet_fleet::step_message;
use deepfleet_proto::{ENVELOPE_VERSION, Envelope, Job, StepJob};
use deepfleet_queue::Delivery;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::error::StepError;
use crate::events::{DeadLetterReason, Event, EventScope, EventSink};
use crate::sandbox::SandboxHost;
use crate::step::announce::Announcement;
use crate::step::committed::Kept;
use crate::step::deadline_check;
use crate::step::failure::Failure;
use crate::step::hold::Hold;
use crate::step::io::Io;
use crate::step::prepare::Preparer;
use crate::step::retry::RetryConfig;
use crate::step::run_step;
use crate::step::settle::{Settlement, settle};
use crate::time_limits::TimeLimits;

/// Executes step messages. Holds no run state: every message is handled
/// from what the store says. Built once by [`StepRunner::builder`].
pub struct StepRunner {
    pub(super) io: Io,
    pub(super) prep: Preparer,
    pub(super) retry: RetryConfig,
    /// How long one step may run, and one delivery keep its run's steps
    /// (the tool calls' limit is the agents').
    pub(super) limits: TimeLimits,
}

impl StepRunner {
    /// Where this runner's `execute` commands run.
    pub fn sandbox(&self) -> &Arc<SandboxHost> {
        self.prep.sandbox()
    }

    /// Handles one delivery and settles it. Never panics on bad input: a
    /// malformed message is dead-lettered with its reason.
    ///
    /// A run's next step stays with the delivery (see [`Hold`]) until it
    /// has been held for [`TimeLimits::keep_run`], a higher lane's message
    /// waits for its slot, or `draining` fires; then it goes out to the
    /// queue as always.
    pub async fn handle(&self, delivery: Box<dyn Delivery>, draining: &CancellationToken) {
        let (scope, settlement) = match envelope_of(delivery.payload()) {
            Err(detail) => (
                EventScope::of_job("", ""),
                Settlement::DeadLetter {
                    reason: DeadLetterReason::Malformed,
                    detail,
                },
            ),
            Ok(envelope) => match envelope.job.clone() {
                Job::Step(job) => self.steps(&*delivery, envelope, job, draining).await,
                // Boxed, as every rare branch here: each step's task is as
                // large as this future's largest state.
                Job::DeadlineCheck(job) => {
                    let scope = EventScope::of_job(&job.run_id, &job.thread_id);
                    let checked = Box::pin(deadline_check::settlement(&self.io, &job)).await;
                    (scope, checked)
                }
            },
        };
        settle(&self.io, delivery, &scope, settlement).await;
    }

    /// Runs the step `envelope` carries, then the next steps the delivery
    /// keeps; returns how the delivery settles, and the scope of the last
    /// step's events.
    async fn steps(
        &self,
        delivery: &dyn Delivery,
        mut envelope: Envelope,
        mut job: StepJob,
        draining: &CancellationToken,
    ) -> (EventScope, Settlement) {
        let step_timeout = self.limits.step;
        let mut last_delivery = delivery.deliveries_left() == Some(0);
        let hold = Hold::new(delivery, self.limits.keep_run, draining);
        // The event of the commit before a kept step.
        let mut announcing: Option<Announcement> = None;
        let stepped = loop {
            let scope = EventScope::of_job(&job.run_id, &job.thread_id);
            let queue_wait = envelope
                .published_at
                .and_then(|at| (Utc::now() - at).to_std().ok());
            self.io
                .events
                .emit(&scope, &Event::StepStarted { queue_wait });
            let _in_flight = InFlight {
                events: &*self.io.events,
                scope: &scope,
            };
            // Abandoning a step is as safe as a crash: fencing makes a
            // repeat of whatever it had done harmless.
            let stepping = tokio::time::timeout(
                step_timeout,
                run_step::step(
                    &self.io,
                    &self.prep,
                    &job,
                    envelope.traceparent.as_deref(),
                    last_delivery,
                    &hold,
                ),
            );
            // A kept step's load goes out beside the event of the commit
            // before it: one round trip for both.
            let announced = async {
                if let Some(announcement) = announcing.take() {
                    announcement.send(&*self.io.store).await;
                }
            };
            let ((), stepped) = tokio::join!(announced, stepping);
            let stepped = stepped.unwrap_or(Err(Failure::Step(StepError::TimedOut(step_timeout))));
            match stepped {
                Ok(Some(Kept {
                    next,
                    traceparent,
                    announcement,
                })) => {
                    debug!(run = %next.run_id, step = next.step, "keeping the next step");
                    envelope = step_message(next.clone(), traceparent);
                    job = next;
                    last_delivery = false;
                    announcing = announcement;
                }
                Ok(None) => break Ok(()),
                Err(failure) => break Err(failure),
            }
        };
        let scope = EventScope::of_job(&job.run_id, &job.thread_id);
        let settlement = match stepped {
            Ok(()) => Settlement::Ack,
            Err(failure) => failure.settlement(envelope, job, &self.retry),
        };
        (scope, settlement)
    }
}

/// The envelope a delivery's `payload` holds, or why it is malformed.
fn envelope_of(payload: &[u8]) -> Result<Envelope, String> {
    match serde_json::from_slice::<Envelope>(payload) {
        Ok(e) if e.v == ENVELOPE_VERSION => Ok(e),
        Ok(e) => Err(format!("unsupported envelope version {}", e.v)),
        Err(e) => Err(format!("malformed job: {e}")),
    }
}

/// Reports the end of a step however it returns, so the in-flight gauge
/// cannot drift.
struct InFlight<'a> {
    events: &'a dyn EventSink,
    scope: &'a EventScope,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.events.emit(self.scope, &Event::StepEnded);
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn only_a_known_envelope_version_is_handled() {
        let job = StepJob {
            run_id: "r".into(),
            thread_id: "t".into(),
            step: 0,
            priority: Default::default(),
        };
        let current = step_message(job.clone(), None);
        let payload = serde_json::to_vec(&current).unwrap();
        assert_eq!(envelope_of(&payload).unwrap().job, Job::Step(job));

        let future = Envelope {
            v: ENVELOPE_VERSION + 1,
            ..current
        };
        let payload = serde_json::to_vec(&future).unwrap();
        assert_eq!(
            envelope_of(&payload).unwrap_err(),
            format!("unsupported envelope version {}", ENVELOPE_VERSION + 1)
        );
        assert!(
            envelope_of(b"{not json")
                .unwrap_err()
                .starts_with("malformed job: ")
        );
    }
}
