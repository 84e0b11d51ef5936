//! Step messages: the one place a [`Job::Step`] (or a
//! [`Job::DeadlineCheck`]) is wrapped and queued.
//!
//! Whoever asks for a step (intake, a resume, a committed step's
//! follow-ups, the CLI recovering a stopped batch) publishes it through
//! [`publish_step`], so every step message carries a fresh id, its
//! publication time (the start of its queue wait) and, when the publisher
//! has one, the trace context its step spans hang under.

use std::time::Duration;

use deepfleet_proto::{Envelope, Job, StepJob};
use deepfleet_queue::Queue;

use crate::error::PublishError;

/// The envelope of a first delivery of `job`, published now, carrying
/// `traceparent` (W3C trace context) when given. Without one, the worker
/// takes the trace context from the run record.
pub fn step_message(job: StepJob, traceparent: Option<String>) -> Envelope {
    let mut envelope = Envelope::new(uuid::Uuid::now_v7().to_string(), Job::Step(job));
    envelope.traceparent = traceparent;
    envelope
}

/// Publishes `job` as a step message (see [`step_message`]) on the lane of
/// its priority; returns once the queue holds it.
pub async fn publish_step(
    queue: &dyn Queue,
    job: StepJob,
    traceparent: Option<String>,
) -> Result<(), PublishError> {
    let run_id = job.run_id.clone();
    let priority = job.priority;
    let envelope = step_message(job, traceparent);
    let payload =
        serde_json::to_vec(&envelope).map_err(|source| PublishError::Encode { run_id, source })?;
    queue.publish_to(priority, payload, None).await?;
    Ok(())
}

/// Publishes a [`Job::DeadlineCheck`] of the run parked at `job`, due
/// after `delay`; returns once the queue holds it.
pub async fn publish_deadline_check(
    queue: &dyn Queue,
    job: StepJob,
    delay: Duration,
) -> Result<(), PublishError> {
    let run_id = job.run_id.clone();
    let priority = job.priority;
    let mut envelope = Envelope::new(uuid::Uuid::now_v7().to_string(), Job::DeadlineCheck(job));
    envelope.published_at = chrono::Duration::from_std(delay)
        .ok()
        .and_then(|d| envelope.published_at.map(|at| at + d));
    let payload =
        serde_json::to_vec(&envelope).map_err(|source| PublishError::Encode { run_id, source })?;
    queue.publish_to(priority, payload, Some(delay)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use deepfleet_proto::ENVELOPE_VERSION;
    use deepfleet_queue::memory::MemoryQueue;
    use pretty_assertions::assert_eq;

    use super::*;

    fn job() -> StepJob {
        StepJob {
            run_id: "r".into(),
            thread_id: "t".into(),
            step: 3,
            priority: Default::default(),
        }
    }

    #[test]
    fn a_step_message_is_a_fresh_first_delivery() {
        let a = step_message(job(), Some("00-trace".into()));
        let b = step_message(job(), None);
        assert_ne!(a.id, b.id, "each message has its own id");
        assert_eq!(
            (a.v, a.attempt, a.traceparent.as_deref(), a.job),
            (ENVELOPE_VERSION, 0, Some("00-trace"), Job::Step(job()))
        );
        assert!(a.published_at.is_some(), "the queue wait starts now");
        assert_eq!(b.traceparent, None);
    }

    #[tokio::test]
    async fn publishing_queues_the_encoded_envelope() {
        let queue = MemoryQueue::new();
        publish_step(&queue, job(), Some("00-trace".into()))
            .await
            .unwrap();
        let mut consumer = queue.consume(1).await.unwrap();
        let delivery = consumer.next().await.unwrap().unwrap();
        let envelope: Envelope = serde_json::from_slice(delivery.payload()).unwrap();
        assert_eq!(envelope.job, Job::Step(job()));
        assert_eq!(envelope.traceparent.as_deref(), Some("00-trace"));
    }
}
