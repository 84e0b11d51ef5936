//! A consumer whose prefetch is spread over several channels.
//!
//! RabbitMQ (3.10 here) keeps a channel's unacknowledged deliveries in a
//! queue and finds the delivery an ack names by walking that queue from
//! its oldest entry, rebuilding what it walked past: one ack costs as
//! many steps as there are older deliveries still unacked on the channel.
//! A worker holding tens of thousands of deliveries on one channel and
//! settling them out of order (steps of different lengths, a delivery
//! that keeps its run's next steps) keeps that channel's process busy for
//! minutes, and nothing is delivered meanwhile. So no channel holds more
//! than [`CHANNEL_PREFETCH`] deliveries: a larger prefetch consumes on
//! as many channels as it takes, drained into one feed.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::Shared;
use super::consumer::AmqpConsumer;
use crate::{Consumer, Delivery, QueueError};

/// The most deliveries one consumer channel holds unacknowledged.
pub(super) const CHANNEL_PREFETCH: u16 = 500;

/// Subscribes with `prefetch` deliveries in flight at most, on one channel
/// or, past [`CHANNEL_PREFETCH`], on several.
pub(super) async fn subscribe(
    shared: &Arc<Shared>,
    prefetch: u16,
) -> Result<Box<dyn Consumer>, QueueError> {
    let shares = shares(prefetch);
    if let [only] = shares[..] {
        return Ok(Box::new(
            AmqpConsumer::subscribe(Arc::clone(shared), only).await?,
        ));
    }
    let mut consumers = Vec::with_capacity(shares.len());
    for share in shares {
        // Those already open close with this function's error.
        consumers.push(AmqpConsumer::subscribe(Arc::clone(shared), share).await?);
    }
    Ok(Box::new(Spread::new(consumers)))
}

/// `prefetch` cut into shares of at most [`CHANNEL_PREFETCH`] (at least
/// one share, of at least one).
fn shares(prefetch: u16) -> Vec<u16> {
    let prefetch = prefetch.max(1);
    let channels = prefetch.div_ceil(CHANNEL_PREFETCH);
    let (each, extra) = (prefetch / channels, prefetch % channels);
    (0..channels).map(|i| each + u16::from(i < extra)).collect()
}

/// What a channel's task hands over: a delivery, or `None` once its
/// consumer ended (the connection is gone for good).
type Handed = Option<Box<dyn Delivery>>;

/// Several channels' consumers, each drained by a task of its own into
/// one feed. It ends as soon as one of them ends: they share the
/// connection whose loss ends them.
struct Spread {
    feed: mpsc::Receiver<Handed>,
    /// The channels' draining tasks, aborted when the consumer is dropped.
    _tasks: JoinSet<()>,
}

impl Spread {
    fn new(consumers: Vec<AmqpConsumer>) -> Self {
        // One place per channel: a task waiting to hand over holds at most
        // one delivery, counted in its channel's prefetch.
        let (tx, feed) = mpsc::channel(consumers.len());
        let mut tasks = JoinSet::new();
        for mut consumer in consumers {
            let tx = tx.clone();
            tasks.spawn(async move {
                loop {
                    match consumer.next().await {
                        Some(Ok(delivery)) => {
                            if tx.send(Some(delivery)).await.is_err() {
                                return;
                            }
                        }
                        // The consumer resubscribed already and backs off
                        // itself; the others go on meanwhile.
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "a consumer channel was interrupted; going on");
                        }
                        None => {
                            let _ = tx.send(None).await;
                            return;
                        }
                    }
                }
            });
        }
        Spread {
            feed,
            _tasks: tasks,
        }
    }
}

#[async_trait]
impl Consumer for Spread {
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
        self.feed.recv().await.flatten().map(Ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_is_cut_into_even_shares_no_larger_than_a_channel_holds() {
        assert_eq!(shares(0), vec![1]);
        assert_eq!(shares(64), vec![64]);
        assert_eq!(shares(CHANNEL_PREFETCH), vec![CHANNEL_PREFETCH]);
        assert_eq!(shares(CHANNEL_PREFETCH + 1), vec![251, 250]);
        let most = shares(u16::MAX);
        assert_eq!(
            most.iter().map(|&s| u32::from(s)).sum::<u32>(),
            u32::from(u16::MAX)
        );
        assert!(
            most.iter()
                .all(|&s| s <= CHANNEL_PREFETCH && s + 1 >= most[0])
        );
    }
}
