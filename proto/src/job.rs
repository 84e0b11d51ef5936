//! Queue messages: a versioned envelope around a job.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The envelope version this build writes and accepts.
pub const ENVELOPE_VERSION: u32 = 1;

/// What travels on the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Envelope {
    /// Envelope version; a worker rejects versions it does not know.
    pub v: u32,
    /// Unique message id (for logs and dead-letter reasons).
    pub id: String,
    /// Delivery attempt, 0 for the first; raised on each delayed retry.
    #[serde(default)]
    pub attempt: u32,
    /// W3C trace context of the publisher, so spans join across workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// When the message was published (or, for a delayed retry, when it
    /// is due): the start of its queue wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_at: Option<DateTime<Utc>>,
    /// The job itself.
    pub job: Job,
}

/// A unit of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Job {
    /// Execute step `step` of a run.
    Step(StepJob),
    /// Look at a run parked on its subagents at thread step `step` when
    /// its deadline may have passed: end it `timeout` if it did, else look
    /// again nearer to it. Fenced like a step: once the run has moved on,
    /// the check is dropped. Without it, a parked run whose subagents sit
    /// in a long queue (or wait for a human) would outlive its deadline.
    DeadlineCheck(StepJob),
}

/// Execute one step: a model call plus the tool calls it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepJob {
    /// The run.
    pub run_id: String,
    /// The run's thread.
    pub thread_id: String,
    /// The thread step this message asks for; fencing compares it with the
    /// checkpoint so a redelivered message never runs a step twice.
    pub step: u64,
    /// The lane the message goes to (the run's priority), so a retry
    /// goes back to the same one.
    #[serde(default, skip_serializing_if = "crate::Priority::is_batch")]
    pub priority: crate::Priority,
}

impl Envelope {
    /// Wraps a job for its first delivery, published now.
    pub fn new(id: impl Into<String>, job: Job) -> Self {
        Envelope {
            v: ENVELOPE_VERSION,
            id: id.into(),
            attempt: 0,
            traceparent: None,
            published_at: Some(Utc::now()),
            job,
        }
    }
}
