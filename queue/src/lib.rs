//! The job queue.
//!
//! [`Queue`] is deliberately small (publish, consume) with deliveries that
//! are acked, retried or dead-lettered explicitly: the step protocol acks
//! last, after its commit and follow-up publishes, so a crash anywhere
//! leads to a redelivery that fencing makes harmless.
//!
//! Two implementations: [`memory::MemoryQueue`] for embedded mode (one
//! process, no server) and [`amqp::AmqpQueue`] on RabbitMQ. Both honour the
//! same contract; the end-to-end tests run every scenario on both.
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod amqp;
mod error;
pub mod lanes;
pub mod memory;

use std::time::Duration;

use async_trait::async_trait;

pub use error::QueueError;

/// A durable job queue.
///
/// Implementations must:
/// - return from [`Queue::publish`] only once the message is safely stored
///   (publisher confirms on RabbitMQ);
/// - redeliver every delivery that was neither acked nor dead-lettered when
///   its consumer goes away (crash, dropped connection, dropped delivery);
/// - never hand one consumer more than `prefetch` unsettled deliveries.
#[async_trait]
pub trait Queue: Send + Sync + 'static {
    /// Publishes `payload`, visible to consumers after `delay` (retry
    /// backoff) or at once.
    async fn publish(&self, payload: Vec<u8>, delay: Option<Duration>) -> Result<(), QueueError>;

    /// Publishes `payload` on the lane of `priority`
    /// ([`lanes::Lanes`]); a queue of one lane publishes every message
    /// there.
    async fn publish_to(
        &self,
        priority: deepfleet_proto::Priority,
        payload: Vec<u8>,
        delay: Option<Duration>,
    ) -> Result<(), QueueError> {
        let _ = priority;
        self.publish(payload, delay).await
    }

    /// Starts a consumer holding at most `prefetch` unsettled deliveries.
    async fn consume(&self, prefetch: u16) -> Result<Box<dyn Consumer>, QueueError>;

    /// Messages ready for delivery (not counting unacked ones), if the
    /// backend can tell.
    async fn depth(&self) -> Result<Option<u64>, QueueError>;

    /// Consumers attached to the queue now, in every process, if the
    /// backend can tell: `Some(0)` means nothing takes the messages
    /// published here (`deepfleet submit` says so instead of waiting
    /// silently).
    async fn consumers(&self) -> Result<Option<u32>, QueueError> {
        Ok(None)
    }
}

/// A stream of deliveries.
#[async_trait]
pub trait Consumer: Send {
    /// The next delivery; `None` once the consumer is closed.
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>>;
}

/// One delivered message, to be settled exactly once.
#[async_trait]
pub trait Delivery: Send + Sync {
    /// The message body.
    fn payload(&self) -> &[u8];

    /// Whether the broker delivered this message before (to a consumer
    /// that did not settle it).
    fn redelivered(&self) -> bool;

    /// How many more times the broker will deliver this message if this
    /// delivery is not settled: `Some(0)` means this is the last one, and a
    /// consumer that dies now gets it dead-lettered. `None` means no limit.
    fn deliveries_left(&self) -> Option<u32> {
        None
    }

    /// Where the sender wants the answer to this message. Only backends
    /// whose messages carry properties have one (RabbitMQ's `reply_to` and
    /// `correlation_id`); the in-process queue carries payloads only.
    fn reply_address(&self) -> ReplyAddress {
        ReplyAddress::default()
    }

    /// The text of the message's header `name`, when it has one (RabbitMQ
    /// headers; the in-process queue carries none).
    fn header(&self, _name: &str) -> Option<String> {
        None
    }

    /// Whether a message of a higher lane waits for this delivery's slot
    /// ([`lanes::Lanes`]): a consumer holding the delivery for more work
    /// than the message asked (the step protocol keeping a run's next
    /// steps) settles it instead and lets that message in.
    fn outranked(&self) -> bool {
        false
    }

    /// Removes the message: it was handled.
    async fn ack(self: Box<Self>) -> Result<(), QueueError>;

    /// Hands the message back for another consumer, at once.
    async fn requeue(self: Box<Self>) -> Result<(), QueueError>;

    /// Moves the message to the dead-letter queue with `reason`, for an
    /// operator to inspect; it is never delivered again.
    async fn dead_letter(self: Box<Self>, reason: &str) -> Result<(), QueueError>;

    /// [`Delivery::dead_letter`], but the dead letter keeps `payload`
    /// instead of the message's body, and carries `headers` (name, text)
    /// besides the reason: for a body that must not be kept as it came,
    /// such as one holding secrets in clear. Backends whose messages carry
    /// no headers (the in-process queue) keep the payload only.
    ///
    /// Required, with no default: a wrapper that forgot to forward it
    /// would keep the body it was asked to drop.
    async fn dead_letter_amended(
        self: Box<Self>,
        reason: &str,
        payload: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Result<(), QueueError>;
}

/// Where the sender of a message asked for its answer: AMQP's `reply_to`
/// (a queue name) and `correlation_id` (echoed so the sender can match the
/// answer to its request).
///
/// `tenant` is not the sender's to choose: the answering side sets it, and
/// it decides which results queue takes an answer that cannot go to
/// `reply_to`, so one tenant's answers never reach a queue another tenant
/// may read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyAddress {
    /// The queue to answer on; `None` sends the answer to the results
    /// queue of `tenant`.
    pub reply_to: Option<String>,
    /// Echoed on the answer.
    pub correlation_id: Option<String>,
    /// Whose answer it is; `None` when no tenant can be told (a message
    /// without a known key), whose answers go to a results queue only the
    /// fleet reads.
    pub tenant: Option<deepfleet_proto::TenantId>,
}

/// Backends that can answer the sender of a message (request/reply over
/// the broker, as the submission intake does when a run ends).
///
/// Implementations must return only once the answer is safely stored
/// (publisher confirms), and must not drop an answer silently: when there
/// is no reply queue, or it no longer exists, the answer goes to a durable
/// results destination of [`ReplyAddress::tenant`]'s instead, which no
/// other tenant's answers reach.
#[async_trait]
pub trait Replies: Send + Sync {
    /// Publishes `payload` to `to.reply_to` with `to.correlation_id`.
    async fn reply(&self, to: &ReplyAddress, payload: Vec<u8>) -> Result<(), QueueError>;
}

/// A dead-lettered message and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The message body.
    pub payload: Vec<u8>,
    /// Why it was dead-lettered.
    pub reason: String,
}

/// Backends whose dead letters can be read back (tests, `deepfleet run`'s
/// summary).
#[async_trait]
pub trait DeadLetters: Send + Sync {
    /// Removes and returns up to `max` dead letters.
    async fn drain_dead_letters(&self, max: usize) -> Result<Vec<DeadLetter>, QueueError>;
}
