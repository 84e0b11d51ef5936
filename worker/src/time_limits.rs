//! How long one step, and one tool call in it, may take.
//!
//! A tool call past its limit is dropped and becomes an error result the
//! model reads, so the run goes on and the model can try another way. A
//! step past its limit (a model call that retries for too long, a store
//! that stops answering) is abandoned as a crashed one would be, and
//! published again with a backoff (fencing makes repeating what it had
//! done harmless); after `worker.max_attempts` the run ends
//! `attempts_exhausted` naming the limit. Either way no step holds a
//! worker's slot forever.
//!
//! A delivery that runs its run's next steps itself (`step::hold::Hold`)
//! hands the run back to the queue once it has been held for
//! [`TimeLimits::keep_run`], so it is held at most that plus one step.
//!
//! Agents take their tool-call limit's default from here and the step
//! runner its limits, so this lies below both.

use std::time::Duration;

/// Default limit of one tool call: file tools take milliseconds; this
/// leaves room for slow remote tools.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// Default limit of one step: above a long model call (the provider
/// timeout is 600 s) with a summary before it, and below RabbitMQ's
/// default `consumer_timeout` (30 minutes), past which the broker would
/// close the worker's channel over the unacknowledged delivery.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(1_200);

/// Default time one delivery may keep running its run's steps: long
/// against a fleet step's millisecond of overhead, short against the
/// queue's turns and the broker's `consumer_timeout`.
pub const DEFAULT_KEEP_RUN: Duration = Duration::from_secs(10);

/// The time limits a worker runs its steps under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLimits {
    /// One step, from loading the thread to publishing its follow-ups.
    pub step: Duration,
    /// One tool call, through the middleware that wraps it.
    pub tool_call: Duration,
    /// How long one delivery may keep running its run's next steps
    /// before it publishes the next one; zero publishes every step.
    pub keep_run: Duration,
}

impl Default for TimeLimits {
    fn default() -> Self {
        TimeLimits {
            step: DEFAULT_STEP_TIMEOUT,
            tool_call: DEFAULT_TOOL_TIMEOUT,
            keep_run: DEFAULT_KEEP_RUN,
        }
    }
}
