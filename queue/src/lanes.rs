//! Two queues as one, the interactive lane served first: what lets a run
//! someone waits on start within about one step's time while a large
//! batch fills the main queue.
//!
//! RabbitMQ's quorum queues (3.10) have no message priorities, so each
//! lane is a queue of its own with the same topology (the main one, and
//! `{base}.interactive`; [`crate::memory::MemoryQueue`]s in embedded
//! mode). A consumer of [`Lanes`] consumes both and hands out at most its
//! prefetch of deliveries in all, taking a ready interactive delivery
//! before a batch one whenever a slot frees, except that after
//! [`INTERACTIVE_WEIGHT`] interactive deliveries in a row a ready batch
//! one goes next: a flood of interactive runs slows batches down to a
//! share of the workers, never to a stop.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deepfleet_proto::Priority;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::{Consumer, Delivery, Queue, QueueError, ReplyAddress};

/// How many interactive deliveries a consumer hands out in a row while a
/// batch delivery is ready: the lanes share the workers 8:1 when both are
/// full, and an interactive run still starts within about one step.
pub const INTERACTIVE_WEIGHT: u32 = 8;

/// The name of the interactive lane's queue beside main queue `base`.
pub fn interactive_name(base: &str) -> String {
    format!("{base}.interactive")
}

/// The batch lane and the interactive lane.
#[derive(Clone)]
pub struct Lanes {
    batch: Arc<dyn Queue>,
    interactive: Arc<dyn Queue>,
}

impl Lanes {
    /// `batch` (the main queue, which plain [`Queue::publish`] uses) and
    /// `interactive`.
    pub fn new(batch: Arc<dyn Queue>, interactive: Arc<dyn Queue>) -> Self {
        Lanes { batch, interactive }
    }

    fn lane(&self, priority: Priority) -> &Arc<dyn Queue> {
        match priority {
            Priority::Batch => &self.batch,
            Priority::Interactive => &self.interactive,
        }
    }
}

#[async_trait]
impl Queue for Lanes {
    async fn publish(&self, payload: Vec<u8>, delay: Option<Duration>) -> Result<(), QueueError> {
        self.batch.publish(payload, delay).await
    }

    async fn publish_to(
        &self,
        priority: Priority,
        payload: Vec<u8>,
        delay: Option<Duration>,
    ) -> Result<(), QueueError> {
        self.lane(priority).publish(payload, delay).await
    }

    async fn consume(&self, prefetch: u16) -> Result<Box<dyn Consumer>, QueueError> {
        let interactive = self.interactive.consume(prefetch).await?;
        let batch = self.batch.consume(prefetch).await?;
        Ok(Box::new(LanesConsumer::new(interactive, batch, prefetch)))
    }

    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        let batch = self.batch.depth().await?;
        let interactive = self.interactive.depth().await?;
        Ok(batch.zip(interactive).map(|(b, i)| b + i))
    }

    async fn consumers(&self) -> Result<Option<u32>, QueueError> {
        self.batch.consumers().await
    }
}

/// Deliveries of one lane, as its forwarding task hands them over.
type Feed = mpsc::Receiver<Result<Box<dyn Delivery>, QueueError>>;

/// The sending side of a lane's [`Feed`], held weakly so that it does not
/// keep the feed open once its forwarding task ends: full means one of
/// the lane's deliveries is ready and waits for a slot.
type Waiting = mpsc::WeakSender<Result<Box<dyn Delivery>, QueueError>>;

/// Both lanes' consumers, each drained by a task of its own into a
/// channel of one (so dropping a `next` call never loses a delivery), and
/// a semaphore of `prefetch` permits that each handed-out delivery holds
/// until it is settled or dropped.
///
/// It ends as soon as either lane's consumer ends (its connection gone
/// for good): a worker serving one lane only would look alive while half
/// the work waited, so it stops and is restarted instead.
struct LanesConsumer {
    interactive: Feed,
    batch: Feed,
    /// Tells whether an interactive delivery waits ([`Delivery::outranked`]).
    interactive_waiting: Waiting,
    permits: Arc<Semaphore>,
    /// The lanes' forwarding tasks, aborted when the consumer is dropped.
    _tasks: JoinSet<()>,
    /// Interactive deliveries handed out since the last batch one.
    streak: u32,
}

impl LanesConsumer {
    fn new(interactive: Box<dyn Consumer>, batch: Box<dyn Consumer>, prefetch: u16) -> Self {
        let mut tasks = JoinSet::new();
        let (interactive_feed, interactive_waiting) = forward(&mut tasks, interactive);
        let (batch_feed, _) = forward(&mut tasks, batch);
        LanesConsumer {
            interactive: interactive_feed,
            batch: batch_feed,
            interactive_waiting,
            permits: Arc::new(Semaphore::new(usize::from(prefetch.max(1)))),
            _tasks: tasks,
            streak: 0,
        }
    }
}

/// A task taking `consumer`'s deliveries into a channel of one.
fn forward(tasks: &mut JoinSet<()>, mut consumer: Box<dyn Consumer>) -> (Feed, Waiting) {
    let (tx, rx) = mpsc::channel(1);
    let waiting = tx.downgrade();
    tasks.spawn(async move {
        while let Some(delivery) = consumer.next().await {
            if tx.send(delivery).await.is_err() {
                // The consumer of both lanes is gone; an unsettled
                // delivery dropped here goes back to its queue.
                break;
            }
        }
    });
    (rx, waiting)
}

#[async_trait]
impl Consumer for LanesConsumer {
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.ok()?;
        // `biased`: a ready interactive delivery goes first, unless the
        // batch lane's turn has come.
        let (item, interactive) = if self.streak >= INTERACTIVE_WEIGHT {
            tokio::select! {
                biased;
                item = self.batch.recv() => (item, false),
                item = self.interactive.recv() => (item, true),
            }
        } else {
            tokio::select! {
                biased;
                item = self.interactive.recv() => (item, true),
                item = self.batch.recv() => (item, false),
            }
        };
        match item? {
            Ok(delivery) => {
                self.streak = if interactive { self.streak + 1 } else { 0 };
                Some(Ok(Box::new(Permitted {
                    inner: delivery,
                    _permit: permit,
                    outranked_by: (!interactive).then(|| self.interactive_waiting.clone()),
                })))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

/// A delivery holding one of its consumer's permits until settled.
struct Permitted {
    inner: Box<dyn Delivery>,
    _permit: OwnedSemaphorePermit,
    /// The interactive lane, for a batch delivery.
    outranked_by: Option<Waiting>,
}

#[async_trait]
impl Delivery for Permitted {
    fn payload(&self) -> &[u8] {
        self.inner.payload()
    }

    fn redelivered(&self) -> bool {
        self.inner.redelivered()
    }

    fn deliveries_left(&self) -> Option<u32> {
        self.inner.deliveries_left()
    }

    fn reply_address(&self) -> ReplyAddress {
        self.inner.reply_address()
    }

    fn header(&self, name: &str) -> Option<String> {
        self.inner.header(name)
    }

    fn outranked(&self) -> bool {
        self.outranked_by
            .as_ref()
            .and_then(mpsc::WeakSender::upgrade)
            .is_some_and(|feed| feed.capacity() == 0)
    }

    async fn ack(self: Box<Self>) -> Result<(), QueueError> {
        self.inner.ack().await
    }

    async fn requeue(self: Box<Self>) -> Result<(), QueueError> {
        self.inner.requeue().await
    }

    async fn dead_letter(self: Box<Self>, reason: &str) -> Result<(), QueueError> {
        self.inner.dead_letter(reason).await
    }

    async fn dead_letter_amended(
        self: Box<Self>,
        reason: &str,
        payload: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Result<(), QueueError> {
        self.inner
            .dead_letter_amended(reason, payload, headers)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryQueue;
    use pretty_assertions::assert_eq;

    fn lanes() -> Lanes {
        Lanes::new(Arc::new(MemoryQueue::new()), Arc::new(MemoryQueue::new()))
    }

    #[tokio::test]
    async fn an_interactive_message_is_served_before_queued_batch_ones() {
        let q = lanes();
        for i in 0..5_u8 {
            q.publish(vec![i], None).await.unwrap();
        }
        q.publish_to(Priority::Interactive, b"now".to_vec(), None)
            .await
            .unwrap();
        assert_eq!(q.depth().await.unwrap(), Some(6));
        let mut consumer = q.consume(1).await.unwrap();
        // Let both forwarders take their first message.
        tokio::task::yield_now().await;
        let mut order = Vec::new();
        for _ in 0..6 {
            let d = consumer.next().await.unwrap().unwrap();
            order.push(d.payload().to_vec());
            d.ack().await.unwrap();
        }
        assert_eq!(order[0], b"now".to_vec(), "{order:?}");
        assert_eq!(&order[1..], &[vec![0], vec![1], vec![2], vec![3], vec![4]]);
    }

    #[tokio::test]
    async fn an_amended_dead_letter_reaches_the_lane_with_its_new_body() {
        use crate::{DeadLetter, DeadLetters};
        let batch = Arc::new(MemoryQueue::new());
        let q = Lanes::new(batch.clone(), Arc::new(MemoryQueue::new()));
        q.publish(b"secret".to_vec(), None).await.unwrap();
        let mut consumer = q.consume(1).await.unwrap();
        let d = consumer.next().await.unwrap().unwrap();
        d.dead_letter_amended("bad", b"kept".to_vec(), &[])
            .await
            .unwrap();
        assert_eq!(
            batch.drain_dead_letters(10).await.unwrap(),
            vec![DeadLetter {
                payload: b"kept".to_vec(),
                reason: "bad".into()
            }]
        );
    }

    #[tokio::test]
    async fn a_flood_of_interactive_messages_leaves_batch_ones_their_share() {
        let q = lanes();
        for i in 0..3_u8 {
            q.publish(vec![i], None).await.unwrap();
        }
        for _ in 0..30 {
            q.publish_to(Priority::Interactive, b"i".to_vec(), None)
                .await
                .unwrap();
        }
        let mut consumer = q.consume(1).await.unwrap();
        tokio::task::yield_now().await;
        let mut order = Vec::new();
        for _ in 0..33 {
            let d = consumer.next().await.unwrap().unwrap();
            order.push(d.payload().to_vec());
            d.ack().await.unwrap();
            // Both forwarders refill before the next slot frees, as a
            // busy worker's lanes are.
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
        }
        let batch_at: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, p)| p.as_slice() != b"i")
            .map(|(at, _)| at)
            .collect();
        let weight = INTERACTIVE_WEIGHT as usize;
        assert_eq!(
            batch_at,
            [weight, 2 * weight + 1, 3 * weight + 2],
            "{order:?}"
        );
    }

    #[tokio::test]
    async fn a_consumer_holds_at_most_its_prefetch_over_both_lanes() {
        let q = lanes();
        q.publish(b"b".to_vec(), None).await.unwrap();
        q.publish_to(Priority::Interactive, b"i".to_vec(), None)
            .await
            .unwrap();
        let mut consumer = q.consume(1).await.unwrap();
        let first = consumer.next().await.unwrap().unwrap();
        let second = tokio::time::timeout(Duration::from_millis(50), consumer.next()).await;
        assert!(second.is_err(), "a second delivery while one is unsettled");
        drop(first);
        let again = consumer.next().await.unwrap().unwrap();
        assert!(!again.payload().is_empty());
    }

    #[tokio::test]
    async fn a_batch_delivery_is_outranked_while_an_interactive_one_waits() {
        let q = lanes();
        q.publish(b"b".to_vec(), None).await.unwrap();
        let mut consumer = q.consume(1).await.unwrap();
        let batch = consumer.next().await.unwrap().unwrap();
        assert!(!batch.outranked(), "nothing waits yet");
        q.publish_to(Priority::Interactive, b"i".to_vec(), None)
            .await
            .unwrap();
        // Let the interactive forwarder take the message.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        assert!(batch.outranked());
        batch.ack().await.unwrap();
        let interactive = consumer.next().await.unwrap().unwrap();
        assert_eq!(interactive.payload(), b"i");
        assert!(!interactive.outranked(), "nothing ranks above interactive");
    }

    /// A queue whose consumers end at once, as one does whose connection
    /// is gone for good.
    struct Gone;

    struct Ended;

    #[async_trait]
    impl Consumer for Ended {
        async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
            None
        }
    }

    #[async_trait]
    impl Queue for Gone {
        async fn publish(&self, _: Vec<u8>, _: Option<Duration>) -> Result<(), QueueError> {
            Err(QueueError::Closed)
        }

        async fn consume(&self, _: u16) -> Result<Box<dyn Consumer>, QueueError> {
            Ok(Box::new(Ended))
        }

        async fn depth(&self) -> Result<Option<u64>, QueueError> {
            Err(QueueError::Closed)
        }

        async fn consumers(&self) -> Result<Option<u32>, QueueError> {
            Err(QueueError::Closed)
        }
    }

    #[tokio::test]
    async fn the_consumer_ends_when_either_lane_ends_even_with_work_on_the_other() {
        for gone_lane in [Priority::Batch, Priority::Interactive] {
            let live = Arc::new(MemoryQueue::new());
            let q = match gone_lane {
                Priority::Batch => Lanes::new(Arc::new(Gone), live.clone()),
                Priority::Interactive => Lanes::new(live.clone(), Arc::new(Gone)),
            };
            let mut consumer = q.consume(1).await.unwrap();
            let mut served = 0;
            loop {
                live.publish(b"w".to_vec(), None).await.unwrap();
                match consumer.next().await {
                    Some(Ok(d)) => {
                        d.ack().await.unwrap();
                        served += 1;
                        assert!(served < 100, "{gone_lane:?} gone, the consumer went on");
                    }
                    Some(Err(e)) => panic!("{e}"),
                    None => break,
                }
            }
        }
    }
}
