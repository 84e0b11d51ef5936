//! An in-process queue for embedded mode.
//!
//! Same contract as RabbitMQ: a delivery dropped without being settled goes
//! back to the front of the queue marked redelivered, and a consumer never
//! holds more than its prefetch.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::{Consumer, DeadLetter, DeadLetters, Delivery, Queue, QueueError};

/// An in-process queue; clones share the same messages.
#[derive(Clone, Default)]
pub struct MemoryQueue {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    ready: Mutex<VecDeque<Message>>,
    dead: Mutex<Vec<DeadLetter>>,
    notify: Notify,
    /// Consumers open now.
    consumers: AtomicU32,
}

struct Message {
    payload: Vec<u8>,
    redelivered: bool,
}

impl Inner {
    fn ready(&self) -> MutexGuard<'_, VecDeque<Message>> {
        // A poisoned lock only means a panic elsewhere; the queue is still
        // consistent (every operation is a single push or pop).
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, message: Message, front: bool) {
        let mut ready = self.ready();
        if front {
            ready.push_front(message);
        } else {
            ready.push_back(message);
        }
        drop(ready);
        self.notify.notify_one();
    }

    /// Keeps `payload` as a dead letter with `reason`.
    fn bury(&self, payload: Vec<u8>, reason: &str) {
        self.dead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(DeadLetter {
                payload,
                reason: reason.to_owned(),
            });
    }
}

impl MemoryQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Queue for MemoryQueue {
    async fn publish(&self, payload: Vec<u8>, delay: Option<Duration>) -> Result<(), QueueError> {
        let message = Message {
            payload,
            redelivered: false,
        };
        match delay {
            Some(delay) if !delay.is_zero() => {
                let inner = Arc::clone(&self.inner);
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    inner.push(message, false);
                });
            }
            _ => self.inner.push(message, false),
        }
        Ok(())
    }

    async fn consume(&self, prefetch: u16) -> Result<Box<dyn Consumer>, QueueError> {
        self.inner.consumers.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(MemoryConsumer {
            inner: Arc::clone(&self.inner),
            permits: Arc::new(Semaphore::new(usize::from(prefetch.max(1)))),
        }))
    }

    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        Ok(Some(self.inner.ready().len() as u64))
    }

    async fn consumers(&self) -> Result<Option<u32>, QueueError> {
        Ok(Some(self.inner.consumers.load(Ordering::SeqCst)))
    }
}

#[async_trait]
impl DeadLetters for MemoryQueue {
    async fn drain_dead_letters(&self, max: usize) -> Result<Vec<DeadLetter>, QueueError> {
        let mut dead = self.inner.dead.lock().unwrap_or_else(|e| e.into_inner());
        let n = max.min(dead.len());
        Ok(dead.drain(..n).collect())
    }
}

struct MemoryConsumer {
    inner: Arc<Inner>,
    permits: Arc<Semaphore>,
}

impl Drop for MemoryConsumer {
    fn drop(&mut self) {
        self.inner.consumers.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Consumer for MemoryConsumer {
    async fn next(&mut self) -> Option<Result<Box<dyn Delivery>, QueueError>> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.ok()?;
        loop {
            // Register interest before checking, so a push between the
            // check and the wait is not missed.
            let notified = self.inner.notify.notified();
            if let Some(message) = self.inner.ready().pop_front() {
                return Some(Ok(Box::new(MemoryDelivery {
                    inner: Arc::clone(&self.inner),
                    message: Some(message),
                    _permit: permit,
                })));
            }
            notified.await;
        }
    }
}

struct MemoryDelivery {
    inner: Arc<Inner>,
    /// `None` once settled; an unsettled delivery requeues itself on drop.
    message: Option<Message>,
    _permit: OwnedSemaphorePermit,
}

impl MemoryDelivery {
    fn settle(&mut self) -> Result<Message, QueueError> {
        self.message
            .take()
            .ok_or_else(|| QueueError::Settle("delivery already settled".into()))
    }
}

impl Drop for MemoryDelivery {
    fn drop(&mut self) {
        if let Some(mut message) = self.message.take() {
            message.redelivered = true;
            self.inner.push(message, true);
        }
    }
}

#[async_trait]
impl Delivery for MemoryDelivery {
    fn payload(&self) -> &[u8] {
        self.message.as_ref().map_or(&[], |m| m.payload.as_slice())
    }

    fn redelivered(&self) -> bool {
        self.message.as_ref().is_some_and(|m| m.redelivered)
    }

    async fn ack(mut self: Box<Self>) -> Result<(), QueueError> {
        self.settle().map(drop)
    }

    async fn requeue(mut self: Box<Self>) -> Result<(), QueueError> {
        let mut message = self.settle()?;
        message.redelivered = true;
        self.inner.push(message, false);
        Ok(())
    }

    async fn dead_letter(mut self: Box<Self>, reason: &str) -> Result<(), QueueError> {
        let message = self.settle()?;
        self.inner.bury(message.payload, reason);
        Ok(())
    }

    /// Keeps `payload`; the headers have nowhere to go (in-process
    /// messages carry none).
    async fn dead_letter_amended(
        mut self: Box<Self>,
        reason: &str,
        payload: Vec<u8>,
        _headers: &[(&str, &str)],
    ) -> Result<(), QueueError> {
        self.settle()?;
        self.inner.bury(payload, reason);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropped_delivery_is_redelivered_first() {
        let q = MemoryQueue::new();
        q.publish(b"a".to_vec(), None).await.unwrap();
        q.publish(b"b".to_vec(), None).await.unwrap();
        let mut c = q.consume(4).await.unwrap();
        let a = c.next().await.unwrap().unwrap();
        assert!(!a.redelivered());
        drop(a);
        let again = c.next().await.unwrap().unwrap();
        assert_eq!(again.payload(), b"a");
        assert!(again.redelivered());
        again.ack().await.unwrap();
        let b = c.next().await.unwrap().unwrap();
        assert_eq!(b.payload(), b"b");
        b.dead_letter("bad").await.unwrap();
        let dead = q.drain_dead_letters(10).await.unwrap();
        assert_eq!(
            dead,
            vec![DeadLetter {
                payload: b"b".to_vec(),
                reason: "bad".into()
            }]
        );
        assert_eq!(q.depth().await.unwrap(), Some(0));
    }

    #[tokio::test]
    async fn an_amended_dead_letter_keeps_the_new_body() {
        let q = MemoryQueue::new();
        q.publish(b"secret".to_vec(), None).await.unwrap();
        let mut c = q.consume(1).await.unwrap();
        let delivery = c.next().await.unwrap().unwrap();
        delivery
            .dead_letter_amended("bad", b"redacted".to_vec(), &[("x-note", "why")])
            .await
            .unwrap();
        assert_eq!(
            q.drain_dead_letters(10).await.unwrap(),
            vec![DeadLetter {
                payload: b"redacted".to_vec(),
                reason: "bad".into()
            }]
        );
        assert_eq!(q.depth().await.unwrap(), Some(0));
    }

    #[tokio::test]
    async fn prefetch_bounds_unsettled_deliveries() {
        let q = MemoryQueue::new();
        for i in 0..3u8 {
            q.publish(vec![i], None).await.unwrap();
        }
        let mut c = q.consume(2).await.unwrap();
        let first = c.next().await.unwrap().unwrap();
        let _second = c.next().await.unwrap().unwrap();
        let blocked = tokio::time::timeout(Duration::from_millis(50), c.next()).await;
        assert!(blocked.is_err(), "a third delivery exceeded prefetch 2");
        first.ack().await.unwrap();
        let third = c.next().await.unwrap().unwrap();
        assert_eq!(third.payload(), &[2]);
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_publish_waits() {
        let q = MemoryQueue::new();
        q.publish(b"later".to_vec(), Some(Duration::from_secs(5)))
            .await
            .unwrap();
        tokio::task::yield_now().await;
        assert_eq!(q.depth().await.unwrap(), Some(0));
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(q.depth().await.unwrap(), Some(1));
    }
}
