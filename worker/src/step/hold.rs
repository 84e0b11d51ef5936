//! Whether a delivery keeps the next step it calls for or hands it to the
//! queue (`docs/step-protocol.md`, step 8).
//!
//! Running a kept step at once saves the hop through the queue (a
//! publish confirmed by the broker's log, a delivery and an ack), the
//! largest part of a fleet step's overhead. The unsettled message stays
//! the durable record: a worker that dies has it redelivered, and fencing
//! turns it into the step the thread is at.

use std::time::{Duration, Instant};

use deepfleet_queue::Delivery;
use tokio_util::sync::CancellationToken;

/// The delivery a step runs under. It gives its runs back to the queue
/// once it has been held for `keep_run` ([`crate::time_limits`]:
/// runs queued behind take turns, and the broker's `consumer_timeout`
/// stays far), as soon as an interactive message waits for its slot
/// ([`Delivery::outranked`]), and when the worker drains.
pub(super) struct Hold<'a> {
    delivery: &'a dyn Delivery,
    until: Instant,
    draining: &'a CancellationToken,
}

impl<'a> Hold<'a> {
    /// `delivery`, held from now for at most `keep_run`, or until
    /// `draining` fires.
    pub(super) fn new(
        delivery: &'a dyn Delivery,
        keep_run: Duration,
        draining: &'a CancellationToken,
    ) -> Self {
        Hold {
            delivery,
            until: Instant::now() + keep_run,
            draining,
        }
    }

    /// Whether the delivery may keep the next step now.
    pub(super) fn may_keep(&self) -> bool {
        Instant::now() < self.until && !self.draining.is_cancelled() && !self.delivery.outranked()
    }
}
