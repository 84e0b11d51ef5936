//! Deferring a step that must wait: for the rate limiter's capacity, or
//! for a place in its run's concurrency pool (`slots`).
//!
//! A wait the model transport may await in place (up to the limiter's
//! `max_wait_ms`) is awaited there. A longer one comes back from the
//! model call as [`ErrorKind::AwaitingCapacity`], its slot kept under
//! the step's claim (`thread:step`); the step then gives its worker slot
//! up: the same message is published again, delayed, and the delivery
//! acked. Nothing was committed, so the step runs again from its
//! checkpoint when the message comes back (the fencing of `decide.rs`
//! makes the repeat safe, as after a crash), and its model call finds its
//! claimed slot instead of queueing anew. The attempt count does not
//! move: waiting for capacity is not a failure.
//!
//! The delay is a third of the wait, so that whatever delay bucket the
//! queue rounds it up to (the broker's buckets grow at most threefold)
//! the message comes back no later than its slot; each return awaits or
//! defers again what is left.
//!
//! A full concurrency pool says nothing of when a place frees, so such a
//! step comes back after [`SLOT_RECHECK`] and tries again; it holds
//! nothing meanwhile.
//!
//! Only the decision is here (which failures defer, and for how long);
//! `settle` publishes the message again.

use std::time::Duration;

use deepfleet_model::{ErrorKind, ModelError};
use deepfleet_proto::SlotPool;

use crate::error::StepError;

/// The shortest deferral: below it the step awaits in place.
const MIN_DELAY: Duration = Duration::from_millis(100);

/// How often a step waiting for a place in a full concurrency pool looks
/// again: one of the broker's delay buckets, short beside a run's time.
const SLOT_RECHECK: Duration = Duration::from_millis(500);

/// Why a step is deferred, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Deferral {
    /// The rate limiter has capacity for its model call this far away.
    Capacity(Duration),
    /// Its run's pool is full.
    Slot(SlotPool),
}

impl Deferral {
    /// How long the message waits on the queue before the step tries
    /// again.
    pub(super) fn delay(&self) -> Duration {
        match self {
            Deferral::Capacity(wait) => delay_for(*wait),
            Deferral::Slot(_) => SLOT_RECHECK,
        }
    }
}

/// Why a step failing with `error` must be deferred, if it must: the rate
/// limiter deferred its model call, or its run found a pool full.
pub(super) fn deferral(error: &StepError) -> Option<Deferral> {
    match error {
        StepError::Model(ModelError {
            kind: ErrorKind::AwaitingCapacity,
            retry_after,
            ..
        }) => Some(Deferral::Capacity(retry_after.unwrap_or(MIN_DELAY))),
        StepError::AwaitingSlot(pool) => Some(Deferral::Slot(pool.clone())),
        _ => None,
    }
}

/// How long the message waits on the queue for a slot `wait` away.
fn delay_for(wait: Duration) -> Duration {
    (wait / 3).max(MIN_DELAY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn only_a_capacity_or_slot_wait_defers() {
        let waiting = ModelError {
            retry_after: Some(Duration::from_secs(30)),
            ..ModelError::new(ErrorKind::AwaitingCapacity, "later")
        };
        assert_eq!(
            deferral(&StepError::Model(waiting)),
            Some(Deferral::Capacity(Duration::from_secs(30)))
        );
        let pool = deepfleet_proto::SlotPool::parse("acme/research").unwrap();
        assert_eq!(
            deferral(&StepError::AwaitingSlot(pool.clone())),
            Some(Deferral::Slot(pool))
        );
        let limited = ModelError {
            retry_after: Some(Duration::from_secs(30)),
            ..ModelError::new(ErrorKind::RateLimited, "429")
        };
        assert_eq!(deferral(&StepError::Model(limited)), None);
        assert_eq!(deferral(&StepError::LastDelivery), None);
    }

    #[test]
    fn a_full_pool_looks_again_after_the_recheck() {
        let pool = deepfleet_proto::SlotPool::parse("acme/research").unwrap();
        assert_eq!(Deferral::Slot(pool).delay(), SLOT_RECHECK);
        assert_eq!(
            Deferral::Capacity(Duration::from_secs(3)).delay(),
            Duration::from_secs(1)
        );
        assert_eq!(Deferral::Capacity(Duration::ZERO).delay(), MIN_DELAY);
    }

    #[test]
    fn the_delay_never_passes_the_slot_after_the_queue_rounds_it_up() {
        // The broker's delay buckets (queue/src/amqp/topology.rs).
        let buckets = [
            100, 250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000,
            1_800_000, 3_600_000,
        ];
        for wait_ms in (300..3_000_000).step_by(997) {
            let delay = delay_for(Duration::from_millis(wait_ms)).as_millis() as u64;
            let rounded = buckets
                .iter()
                .copied()
                .find(|&b| b >= delay)
                .unwrap_or(3_600_000);
            assert!(
                rounded <= wait_ms,
                "{wait_ms} ms: {delay} rounds to {rounded}"
            );
        }
    }
}
