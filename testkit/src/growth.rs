//! Checkpoint growth: the bytes each step of one long run writes to and
//! reads from Redis, for the e2e check that they do not grow with the
//! conversation and for the benchmark that reports them.
//!
//! The run's steps are driven one at a time off an in-memory queue (so
//! only the store is remote), reading [`RedisStore::bytes_written`] and
//! [`RedisStore::bytes_read`] around each: the runner publishes every
//! step (`keep_run` zero) instead of keeping the run's next ones.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use deepfleet_proto::{AgentSpec, TaskLine};
use deepfleet_queue::Queue;
use deepfleet_queue::memory::MemoryQueue;
use deepfleet_scheduler::{Intake, submit_task};
use deepfleet_store::redis::RedisStore;
use deepfleet_worker::TimeLimits;
use tokio_util::sync::CancellationToken;

use crate::fleet::REDIS_URL;
use crate::runner::replay_runner_builder;

/// What one step sent to and received from Redis, in payload bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepBytes {
    /// Keys and values sent by writes ([`RedisStore::bytes_written`]).
    pub written: u64,
    /// Replies received ([`RedisStore::bytes_read`]).
    pub read: u64,
}

/// Runs `task` of `spec` (a `replay:` model: no provider is configured)
/// on the local Redis under a fresh key prefix, removed afterwards;
/// returns the bytes each step wrote and read, steps `0..=last`.
pub async fn bytes_per_step(
    spec: &AgentSpec,
    task: &TaskLine,
    last: usize,
) -> anyhow::Result<Vec<StepBytes>> {
    let prefix = format!("dftest:{}", uuid::Uuid::new_v4().simple());
    let store = Arc::new(
        RedisStore::connect(REDIS_URL, &prefix)
            .await
            .context("connecting to Redis (run `scripts/services.sh`)")?,
    );
    let measured = drive(&store, spec, task, last).await;
    let _ = store.delete_prefix().await;
    measured
}

async fn drive(
    store: &Arc<RedisStore>,
    spec: &AgentSpec,
    task: &TaskLine,
    last: usize,
) -> anyhow::Result<Vec<StepBytes>> {
    let queue = Arc::new(MemoryQueue::new());
    let intake = Intake::new(store.clone(), queue.clone());
    intake.register(spec).await?;
    submit_task(&intake, &spec.name, task, None).await?;
    let one_step_each = TimeLimits {
        keep_run: Duration::ZERO,
        ..TimeLimits::default()
    };
    let runner = replay_runner_builder(queue.clone(), store.clone())
        .time_limits(one_step_each)
        .build();
    let draining = CancellationToken::new();
    let mut consumer = queue.consume(1).await?;
    let mut per_step = Vec::with_capacity(last + 1);
    for step in 0..=last {
        let delivery = consumer
            .next()
            .await
            .with_context(|| format!("no message for step {step}"))??;
        let (written, read) = (store.bytes_written(), store.bytes_read());
        runner.handle(delivery, &draining).await;
        per_step.push(StepBytes {
            written: store.bytes_written() - written,
            read: store.bytes_read() - read,
        });
    }
    Ok(per_step)
}
