//! What a step that could not complete settles as: a bad message is
//! dead-lettered, a step that must wait is deferred (`throttle`), one
//! that may pass later is retried with a backoff, and the run ends once
//! retrying cannot help or the attempts are used up. Pure: `settle`
//! carries the answer out.

use deepfleet_proto::{Envelope, ErrorCode, StepJob};

use crate::error::StepError;
use crate::events::DeadLetterReason;
use crate::step::retry::RetryConfig;
use crate::step::settle::Settlement;
use crate::step::throttle;

/// Why a message could not be handled now.
pub(super) enum Failure {
    /// Retry the step later (or fail the run once attempts run out).
    Step(StepError),
    /// The message itself is bad: dead-letter it.
    Reject(String),
}

impl From<StepError> for Failure {
    fn from(e: StepError) -> Self {
        Failure::Step(e)
    }
}

impl From<deepfleet_store::StoreError> for Failure {
    fn from(e: deepfleet_store::StoreError) -> Self {
        Failure::Step(e.into())
    }
}

impl Failure {
    /// How the delivery of `envelope`, which stepped `job`, settles after
    /// this failure, under `retry`.
    pub(super) fn settlement(
        self,
        envelope: Envelope,
        job: StepJob,
        retry: &RetryConfig,
    ) -> Settlement {
        let error = match self {
            Failure::Reject(detail) => {
                return Settlement::DeadLetter {
                    reason: DeadLetterReason::Rejected,
                    detail,
                };
            }
            Failure::Step(error) => error,
        };
        if let Some(deferral) = throttle::deferral(&error) {
            return Settlement::Defer { envelope, deferral };
        }
        if error.is_retryable() && envelope.attempt + 1 < retry.max_attempts {
            let attempt = envelope.attempt + 1;
            // The provider's `Retry-After` when it sent one.
            let after = match &error {
                StepError::Model(e) => e.retry_after.unwrap_or_else(|| retry.delay(attempt)),
                _ => retry.delay(attempt),
            };
            return Settlement::Retry {
                envelope: Envelope {
                    attempt,
                    ..envelope
                },
                after,
                error,
            };
        }
        let code = if error.is_retryable() {
            ErrorCode::AttemptsExhausted
        } else {
            error.code()
        };
        Settlement::FailRun { job, code, error }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use deepfleet_fleet::step_message;
    use deepfleet_model::{ErrorKind, ModelError};
    use deepfleet_proto::SlotPool;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::step::throttle::Deferral;

    const RETRY: RetryConfig = RetryConfig {
        max_attempts: 3,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(400),
    };

    fn job() -> StepJob {
        StepJob {
            run_id: "r".into(),
            thread_id: "t".into(),
            step: 4,
            priority: Default::default(),
        }
    }

    /// The settlement of `failure` on the message's `attempt`.
    fn settled(failure: Failure, attempt: u32) -> Settlement {
        let envelope = Envelope {
            attempt,
            ..step_message(job(), None)
        };
        failure.settlement(envelope, job(), &RETRY)
    }

    fn model(kind: ErrorKind, retry_after: Option<Duration>) -> Failure {
        Failure::Step(StepError::Model(ModelError {
            retry_after,
            ..ModelError::new(kind, "no")
        }))
    }

    #[test]
    fn a_rejected_message_is_dead_lettered_with_its_reason() {
        let Settlement::DeadLetter { reason, detail } =
            settled(Failure::Reject("unknown_run: run r".into()), 0)
        else {
            panic!("not dead-lettered");
        };
        assert_eq!(reason, DeadLetterReason::Rejected);
        assert_eq!(detail, "unknown_run: run r");
    }

    #[test]
    fn a_wait_defers_the_step_even_on_its_last_attempt() {
        let waiting = model(ErrorKind::AwaitingCapacity, Some(Duration::from_secs(3)));
        let Settlement::Defer { envelope, deferral } = settled(waiting, 2) else {
            panic!("not deferred");
        };
        assert_eq!(envelope.attempt, 2, "waiting is not a failure");
        assert_eq!(deferral, Deferral::Capacity(Duration::from_secs(3)));

        let pool = SlotPool::parse("acme/research").unwrap();
        let full = Failure::Step(StepError::AwaitingSlot(pool.clone()));
        assert!(matches!(
            settled(full, 0),
            Settlement::Defer { deferral: Deferral::Slot(p), .. } if p == pool
        ));
    }

    #[test]
    fn a_retryable_failure_with_attempts_left_is_retried_one_attempt_on() {
        let limited = model(ErrorKind::RateLimited, Some(Duration::from_secs(30)));
        let Settlement::Retry {
            envelope, after, ..
        } = settled(limited, 0)
        else {
            panic!("not retried");
        };
        assert_eq!(envelope.attempt, 1);
        assert_eq!(after, Duration::from_secs(30), "the provider's Retry-After");

        // Without one, the backoff of the next attempt (400 ms, jittered).
        let Settlement::Retry {
            envelope, after, ..
        } = settled(Failure::Step(StepError::LastDelivery), 1)
        else {
            panic!("not retried");
        };
        assert_eq!(envelope.attempt, 2);
        assert!(
            (Duration::from_millis(200)..=Duration::from_millis(400)).contains(&after),
            "{after:?}"
        );
    }

    #[test]
    fn the_last_attempt_fails_the_run_as_attempts_exhausted() {
        let Settlement::FailRun {
            job: failed, code, ..
        } = settled(
            Failure::Step(StepError::TimedOut(Duration::from_secs(1))),
            2,
        )
        else {
            panic!("the run goes on");
        };
        assert_eq!(code, ErrorCode::AttemptsExhausted);
        assert_eq!(failed, job());
    }

    #[test]
    fn a_failure_retrying_cannot_help_fails_the_run_with_its_own_code() {
        let bad = model(ErrorKind::Auth, None);
        let Settlement::FailRun { code, .. } = settled(bad, 0) else {
            panic!("the run goes on");
        };
        assert_eq!(code, ErrorCode::ModelAuth);
    }
}
