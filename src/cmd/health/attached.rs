//! Counting the consumers a process holds on a queue, for readiness: a
//! [`Queue`] wrapper whose consumers count themselves while they are open.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use deepfleet_queue::{Consumer, Delivery, Queue, QueueError};

/// How many consumers of a [`WatchedQueue`] are open. Clones share the
/// count.
#[derive(Clone, Default, Debug)]
pub struct Attached(Arc<AtomicUsize>);

impl Attached {
    /// Consumers open now.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn hold(&self) -> Hold {
        self.0.fetch_add(1, Ordering::SeqCst);
        Hold(self.clone())
    }
}

/// One open consumer; dropping it takes it off the count.
struct Hold(Attached);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A queue whose consumers are counted in an [`Attached`] from the moment
/// the broker accepted them until they close or are dropped. Publishing and
/// the broker's counts pass straight through.
pub struct WatchedQueue {
    inner: Arc<dyn Queue>,
    attached: Attached,
}

impl WatchedQueue {
    /// Wraps `inner`; its consumers count in the returned [`Attached`].
    pub fn wrap(inner: Arc<dyn Queue>) -> (Arc<dyn Queue>, Attached) {
        let attached = Attached::default();
        let queue = WatchedQueue {
            inner,
            attached: attached.clone(),
        };
        (Arc::new(queue), attached)
    }
}

#[async_trait]
impl Queue for WatchedQueue {
    async fn publish(&self, payload: Vec<u8>, delay: Option<Duration>) -> Result<(), QueueError> {
        self.inner.publish(payload, delay).await
    }

    async fn publish_to(
        &self,
        priority: deepfleet_proto::Priority,
        payload: Vec<u8>,
        delay: Option<Duration>,
    ) -> Result<(), QueueError> {
        self.inner.publish_to(priority, payload, delay).await
    }

    async fn consume(&self, prefetch: u16) -> Result<Box<dyn Consumer>, QueueError> {
        let inner = self.inner.consume(prefetch).await?;
        Ok(Box::new(WatchedConsumer {
            inner,
            hold: Some(self.attached.hold()),
        }))
    }

    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        self.inner.depth().await
    }

    async fn consumers(&self) -> Result<Option<u32>, QueueError> {
        self.inner.consumers().await
    }
}

struct WatchedConsumer {
    inner: Box<dyn Consumer>,
    hold: Option<Hold>,
}

#[async_trait]
impl Consumer for WatchedConsumer {
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
        let next = self.inner.next().await;
        if next.is_none() {
            // Closed for good: it no longer takes work.
            self.hold = None;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_queue::memory::MemoryQueue;

    use super::*;

    #[tokio::test]
    async fn consumers_count_while_open() {
        let (queue, attached) = WatchedQueue::wrap(Arc::new(MemoryQueue::new()));
        assert_eq!(attached.count(), 0);
        let first = queue.consume(1).await.unwrap();
        let second = queue.consume(1).await.unwrap();
        assert_eq!(attached.count(), 2);
        drop(first);
        assert_eq!(attached.count(), 1);
        drop(second);
        assert_eq!(attached.count(), 0);
    }

    #[tokio::test]
    async fn publishing_and_depth_pass_through() {
        let (queue, _) = WatchedQueue::wrap(Arc::new(MemoryQueue::new()));
        queue.publish(b"job".to_vec(), None).await.unwrap();
        assert_eq!(queue.depth().await.unwrap(), Some(1));
        let mut consumer = queue.consume(1).await.unwrap();
        let delivery = consumer.next().await.unwrap().unwrap();
        assert_eq!(delivery.payload(), b"job");
        delivery.ack().await.unwrap();
    }
}
