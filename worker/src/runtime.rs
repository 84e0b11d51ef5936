//! The worker process loop: consume step messages with bounded
//! concurrency, and stop gracefully.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_queue::{Queue, QueueError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::step::StepRunner;

/// Consumes a queue and runs steps.
pub struct Worker {
    queue: Arc<dyn Queue>,
    runner: Arc<StepRunner>,
    concurrency: u16,
    grace: Duration,
}

impl Worker {
    /// A worker running up to `concurrency` steps at once; on shutdown it
    /// waits up to `grace` for steps in flight.
    pub fn new(
        queue: Arc<dyn Queue>,
        runner: Arc<StepRunner>,
        concurrency: u16,
        grace: Duration,
    ) -> Self {
        Worker {
            queue,
            runner,
            concurrency: concurrency.max(1),
            grace,
        }
    }

    /// Runs until `shutdown` fires. Steps still running after the grace
    /// period are dropped unacked, so the queue redelivers them elsewhere.
    ///
    /// A consumer that reports an interruption (a connection being
    /// recovered) is read again; one that ends, its connection gone for
    /// good, stops the worker the same way and fails it with
    /// [`QueueError::Closed`], so its process exits with an error and is
    /// restarted.
    pub async fn run(&self, shutdown: CancellationToken) -> Result<(), QueueError> {
        self.runner.sandbox().announce().await;
        let mut consumer = self.queue.consume(self.concurrency).await?;
        let mut in_flight = JoinSet::new();
        let mut ended = Ok(());
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                next = consumer.next() => match next {
                    Some(Ok(delivery)) => {
                        let runner = Arc::clone(&self.runner);
                        let draining = shutdown.clone();
                        in_flight.spawn(async move { runner.handle(delivery, &draining).await });
                    }
                    Some(Err(e)) => {
                        warn!(error = %e, "consuming was interrupted; going on");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    None => {
                        warn!("the consumer ended: the queue connection is gone for good");
                        ended = Err(QueueError::Closed);
                        break;
                    }
                },
                Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => {
                    if let Err(e) = joined {
                        warn!(error = %e, "a step task panicked; its message will be redelivered");
                    }
                }
            }
        }
        drop(consumer);
        info!(in_flight = in_flight.len(), "worker stopping");
        let drained = tokio::time::timeout(self.grace, async {
            while in_flight.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            warn!(
                aborted = in_flight.len(),
                "grace period over; unfinished steps will be redelivered"
            );
            in_flight.abort_all();
        }
        ended
    }
}
