//! Consuming from the main queue, and settling deliveries.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicNackOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Acker, Channel};

use super::dead_letters::REASON_HEADER;
use super::{Route, Shared, connection_error};
use crate::{Consumer, Delivery, QueueError, ReplyAddress};

/// A consumer on its own channel, with manual acks.
pub(super) struct AmqpConsumer {
    shared: Arc<Shared>,
    channel: Channel,
    consumer: lapin::Consumer,
}

impl AmqpConsumer {
    pub(super) fn new(shared: Arc<Shared>, channel: Channel, consumer: lapin::Consumer) -> Self {
        Self {
            shared,
            channel,
            consumer,
        }
    }
}

#[async_trait]
impl Consumer for AmqpConsumer {
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
        let delivery = match StreamExt::next(&mut self.consumer).await? {
            Ok(delivery) => delivery,
            Err(err) => return Some(Err(connection_error(err))),
        };
        let deliveries_left = self
            .shared
            .delivery_limit
            .saturating_sub(delivery_count(delivery.properties.headers().as_ref()));
        Some(Ok(Box::new(AmqpDelivery {
            deliveries_left,
            shared: Arc::clone(&self.shared),
            channel: self.channel.clone(),
            headers: delivery.properties.headers().clone(),
            reply: ReplyAddress {
                reply_to: delivery
                    .properties
                    .reply_to()
                    .as_ref()
                    .map(|q| q.to_string()),
                correlation_id: delivery
                    .properties
                    .correlation_id()
                    .as_ref()
                    .map(|c| c.to_string()),
            },
            payload: delivery.data,
            redelivered: delivery.redelivered,
            acker: delivery.acker,
            settled: false,
        })))
    }
}

/// One message from the main queue.
///
/// Dropped unsettled, it is nacked with requeue (as [`crate::memory`] puts
/// it back), which also counts towards the delivery limit.
struct AmqpDelivery {
    shared: Arc<Shared>,
    /// Keeps the consumer's channel open until this delivery is settled,
    /// even if the consumer is dropped first: closing the channel would
    /// requeue the message and make the ack fail.
    channel: Channel,
    payload: Vec<u8>,
    headers: Option<FieldTable>,
    reply: ReplyAddress,
    redelivered: bool,
    /// Deliveries the broker still allows after this one.
    deliveries_left: u32,
    acker: Acker,
    settled: bool,
}

/// How often the broker delivered a message before and got it back: quorum
/// queues (RabbitMQ 3.10 too) stamp redeliveries with `x-delivery-count`.
fn delivery_count(headers: Option<&FieldTable>) -> u32 {
    let value = headers.and_then(|h| h.inner().get("x-delivery-count"));
    let count = match value {
        Some(AMQPValue::LongLongInt(n)) => *n,
        Some(AMQPValue::LongInt(n)) => i64::from(*n),
        Some(AMQPValue::ShortInt(n)) => i64::from(*n),
        Some(AMQPValue::LongUInt(n)) => i64::from(*n),
        _ => 0,
    };
    u32::try_from(count).unwrap_or(0)
}

/// Maps lapin's settle outcome: `Ok(false)` means the channel this delivery
/// came on is gone (closed, or replaced by a connection recovery), so the
/// broker has already put the message back.
fn settle_result(result: lapin::Result<bool>) -> Result<(), QueueError> {
    match result {
        Ok(true) => Ok(()),
        Ok(false) => Err(QueueError::Settle(
            "the delivery's channel closed or was recovered; the broker will redeliver it".into(),
        )),
        Err(err) => Err(QueueError::Settle(err.to_string())),
    }
}

const REQUEUE: BasicNackOptions = BasicNackOptions {
    multiple: false,
    requeue: true,
};

#[async_trait]
impl Delivery for AmqpDelivery {
    fn payload(&self) -> &[u8] {
        &self.payload
    }

    fn deliveries_left(&self) -> Option<u32> {
        Some(self.deliveries_left)
    }

    fn redelivered(&self) -> bool {
        self.redelivered
    }

    fn reply_address(&self) -> ReplyAddress {
        self.reply.clone()
    }

    async fn ack(mut self: Box<Self>) -> Result<(), QueueError> {
        self.settled = true;
        settle_result(self.acker.ack(BasicAckOptions::default()).await)
    }

    async fn requeue(mut self: Box<Self>) -> Result<(), QueueError> {
        self.settled = true;
        settle_result(self.acker.nack(REQUEUE).await)
    }

    /// Publishes a copy, with the original headers plus the reason, to the
    /// dead-letter exchange (confirmed), then acks the original. If the
    /// publish fails the original is requeued (by drop); if the ack fails
    /// after the publish, the message is redelivered and may be
    /// dead-lettered twice.
    async fn dead_letter(mut self: Box<Self>, reason: &str) -> Result<(), QueueError> {
        let mut headers = self.headers.clone().unwrap_or_default();
        headers.insert(REASON_HEADER.into(), AMQPValue::LongString(reason.into()));
        self.shared
            .publish(Route::DeadLetter, &self.payload, Some(headers))
            .await?;
        self.settled = true;
        settle_result(self.acker.ack(BasicAckOptions::default()).await)
    }
}

impl Drop for AmqpDelivery {
    fn drop(&mut self) {
        if self.settled || !self.acker.usable() {
            return;
        }
        // Outside a runtime there is nothing to send the nack with; the
        // message then comes back when the channel closes.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let acker = self.acker.clone();
        let channel = self.channel.clone();
        runtime.spawn(async move {
            if let Err(err) = acker.nack(REQUEUE).await {
                tracing::debug!(%err, "requeueing a dropped delivery failed; the broker will redeliver it");
            }
            // Only now may the channel close.
            drop(channel);
        });
    }
}
