//! Consuming from the main queue, and settling deliveries.
//!
//! A consumer outlives the channel it reads from. While lapin recovers a
//! lost connection it recovers the consumer too, on the same stream; a
//! channel the broker closes under a live connection (a delivery held past
//! the broker's `consumer_timeout`) is not recovered by lapin, so the
//! consumer subscribes again on a new channel. The deliveries of the lost
//! channel go back to the queue, and their late settles fail harmlessly.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deepfleet_proto::tenant::CREDENTIAL_HEADER;
use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicQosOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Acker, Channel};
use uuid::Uuid;

use super::dead_letters::REASON_HEADER;
use super::recovery::{Backoff, Health};
use super::{PUBLISH_PATIENCE, Route, Shared, connection_error, recovery};
use crate::{Consumer, Delivery, QueueError, ReplyAddress};

/// How often a consumer waiting for deliveries checks that its channel is
/// still open: a channel the broker closed does not always end the stream.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// How long a channel may stay in recovery while its connection is back
/// before the consumer gives up on it and subscribes on a new one. lapin
/// recovers a connection's channels one after the other and stops at the
/// first that fails (a quorum queue not yet back after a broker restart
/// refuses the consume), which can leave a channel recovering for good
/// under a live connection: a worker that looks alive and takes nothing.
const CHANNEL_RECOVERY_PATIENCE: Duration = Duration::from_secs(15);

/// A consumer on its own channel, with manual acks.
pub(super) struct AmqpConsumer {
    shared: Arc<Shared>,
    prefetch: u16,
    channel: Channel,
    consumer: lapin::Consumer,
    /// Since when the channel has been recovering under a connection that
    /// is up.
    recovering_since: Option<tokio::time::Instant>,
}

/// Opens a channel with QoS `prefetch` and consumes the main queue on it.
async fn open(shared: &Shared, prefetch: u16) -> Result<(Channel, lapin::Consumer), QueueError> {
    // Its own channel: QoS is per channel, and a channel error while
    // settling must not take the publisher down with it.
    let channel = shared.open_channel().await?;
    // A prefetch of 0 means "unlimited" in AMQP; the contract is at
    // least one, as in MemoryQueue.
    channel
        .basic_qos(prefetch.max(1), BasicQosOptions::default())
        .await
        .map_err(connection_error)?;
    let consumer = channel
        .basic_consume(
            shared.names.main.as_str().into(),
            format!("deepfleet-{}", Uuid::new_v4()).into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(connection_error)?;
    Ok((channel, consumer))
}

impl AmqpConsumer {
    /// Subscribes to the main queue, waiting up to [`PUBLISH_PATIENCE`]
    /// for a connection being recovered (the broker restarting just as a
    /// worker starts); fails at once for anything else.
    pub(super) async fn subscribe(
        shared: Arc<Shared>,
        prefetch: u16,
    ) -> Result<AmqpConsumer, QueueError> {
        let deadline = tokio::time::Instant::now() + PUBLISH_PATIENCE;
        let mut backoff = Backoff::new();
        let (channel, consumer) = loop {
            match open(&shared, prefetch).await {
                Ok(opened) => break opened,
                Err(e)
                    if recovery::reconnecting(&shared.connection)
                        && tokio::time::Instant::now() < deadline =>
                {
                    tracing::warn!(error = %e, "subscribing waits for the broker connection");
                    backoff.wait().await;
                }
                Err(e) => return Err(e),
            }
        };
        Ok(AmqpConsumer {
            shared,
            prefetch,
            channel,
            consumer,
            recovering_since: None,
        })
    }

    /// How the consumer's channel stands.
    fn health(&self) -> Health {
        recovery::health(&self.shared.connection, &self.channel)
    }

    /// Whether the channel's recovery stalled: it has been recovering for
    /// [`CHANNEL_RECOVERY_PATIENCE`] while its connection is up. The clock
    /// starts at the first look that finds it so.
    fn recovery_stalled(&mut self) -> bool {
        if !recovery::connected(&self.shared.connection) {
            self.recovering_since = None;
            return false;
        }
        let since = *self
            .recovering_since
            .get_or_insert_with(tokio::time::Instant::now);
        since.elapsed() >= CHANNEL_RECOVERY_PATIENCE
    }

    /// Subscribes again on a new channel when the broker closed this one,
    /// or its recovery stalled (or, with `ended`, whenever lapin is not
    /// recovering it: the stream ended), backing off while that fails.
    /// Fails only once the connection is gone for good.
    async fn resubscribe(&mut self, ended: bool) -> Result<(), QueueError> {
        let mut backoff = Backoff::new();
        loop {
            let stalled = match self.health() {
                Health::Gone => return Err(QueueError::Closed),
                Health::Recovering if self.recovery_stalled() => true,
                // lapin reopens the channel, and the same stream goes on.
                Health::Recovering if !ended => return Ok(()),
                Health::Open if !ended => {
                    self.recovering_since = None;
                    return Ok(());
                }
                Health::Recovering => {
                    backoff.wait().await;
                    continue;
                }
                Health::Open | Health::ChannelClosed => false,
            };
            match open(&self.shared, self.prefetch).await {
                Ok((channel, consumer)) => {
                    let old = std::mem::replace(&mut self.channel, channel);
                    self.consumer = consumer;
                    self.recovering_since = None;
                    if stalled {
                        tracing::warn!(
                            "the consumer's channel stayed in recovery under a live connection; subscribed again on a new one"
                        );
                        // Its deliveries, should it ever come back, go
                        // back to the queue when it closes.
                        tokio::spawn(async move {
                            let closing =
                                old.close(200, "replaced after a stalled recovery".into());
                            let _ = tokio::time::timeout(WATCH_EVERY, closing).await;
                        });
                    } else {
                        tracing::info!("the consumer's channel was closed; subscribed again");
                    }
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!(error = %e, "subscribing again failed; retrying");
                    backoff.wait().await;
                }
            }
        }
    }

    fn delivery(&self, delivery: lapin::message::Delivery) -> Box<dyn Delivery> {
        let deliveries_left = self
            .shared
            .delivery_limit
            .saturating_sub(delivery_count(delivery.properties.headers().as_ref()));
        Box::new(AmqpDelivery {
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
                tenant: None,
            },
            payload: delivery.data,
            redelivered: delivery.redelivered,
            acker: delivery.acker,
            settled: false,
        })
    }
}

#[async_trait]
impl Consumer for AmqpConsumer {
    /// The next delivery. An error says the subscription was interrupted
    /// (a connection being recovered, a channel the broker closed, which is
    /// replaced before the error is returned): call again. `None` once the
    /// connection is gone for good.
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
        loop {
            let next = tokio::time::timeout(WATCH_EVERY, StreamExt::next(&mut self.consumer));
            let resubscribed = match next.await {
                Ok(Some(Ok(delivery))) => return Some(Ok(self.delivery(delivery))),
                Ok(Some(Err(err))) => {
                    return match self.resubscribe(false).await {
                        Ok(()) => Some(Err(connection_error(err))),
                        Err(_) => None,
                    };
                }
                // The broker cancelled the consumer, or closed its channel.
                Ok(None) => self.resubscribe(true).await,
                // Quiet: a channel the broker closed may not have said so.
                Err(_) => self.resubscribe(false).await,
            };
            if resubscribed.is_err() {
                return None;
            }
        }
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

    fn header(&self, name: &str) -> Option<String> {
        match self.headers.as_ref()?.inner().get(name)? {
            AMQPValue::LongString(text) => {
                Some(String::from_utf8_lossy(text.as_bytes()).into_owned())
            }
            AMQPValue::ShortString(text) => Some(text.as_str().to_owned()),
            _ => None,
        }
    }

    async fn ack(mut self: Box<Self>) -> Result<(), QueueError> {
        self.settled = true;
        settle_result(self.acker.ack(BasicAckOptions::default()).await)
    }

    async fn requeue(mut self: Box<Self>) -> Result<(), QueueError> {
        self.settled = true;
        settle_result(self.acker.nack(REQUEUE).await)
    }

    /// Publishes a copy, with the original headers plus the reason and
    /// less the sender's credential (an operator reading dead letters must
    /// not read keys), to the dead-letter exchange (confirmed), then acks
    /// the original. If the
    /// publish fails the original is requeued (by drop); if the ack fails
    /// after the publish, the message is redelivered and may be
    /// dead-lettered twice.
    async fn dead_letter(mut self: Box<Self>, reason: &str) -> Result<(), QueueError> {
        // Only the broker's copy of the body matters from here on: a
        // failed publish requeues the original, which it still holds.
        let payload = std::mem::take(&mut self.payload);
        self.bury(reason, &payload, &[]).await
    }

    /// As [`AmqpDelivery::dead_letter`], the copy carrying `payload` and
    /// `headers` too.
    async fn dead_letter_amended(
        self: Box<Self>,
        reason: &str,
        payload: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Result<(), QueueError> {
        self.bury(reason, &payload, headers).await
    }
}

impl AmqpDelivery {
    /// Dead-letters a copy of the message with body `payload`, its
    /// headers less the credential plus `extra` and the reason, then acks
    /// the original.
    async fn bury(
        mut self: Box<Self>,
        reason: &str,
        payload: &[u8],
        extra: &[(&str, &str)],
    ) -> Result<(), QueueError> {
        let mut kept = self.headers.clone().unwrap_or_default().inner().clone();
        kept.retain(|name, _| name.as_str() != CREDENTIAL_HEADER);
        let mut headers = FieldTable::from(kept);
        for (name, text) in extra {
            headers.insert((*name).into(), AMQPValue::LongString((*text).into()));
        }
        headers.insert(REASON_HEADER.into(), AMQPValue::LongString(reason.into()));
        self.shared
            .publish(Route::DeadLetter, payload, Some(headers))
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
