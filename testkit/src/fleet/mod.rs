//! The fleet under test, embedded or distributed, for the e2e suite and
//! the benchmarks.
//!
//! An embedded fleet is one process: an in-memory queue and store and a
//! worker task. A distributed fleet runs worker processes of the
//! `deepfleet` binary (whose path the caller gives) on the local RabbitMQ
//! and Redis, under a queue name and key prefix of its own, so fleets
//! never see each other's data on the shared services. Everything a
//! distributed fleet created is removed when it shuts down, when a test
//! fails before that (on drop), and its worker processes die with it.

mod batch;
mod builder;
pub mod services;
mod workers;

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::TaskLine;
use deepfleet_queue::amqp::AmqpQueue;
use deepfleet_queue::{DeadLetters, Queue};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;

pub use batch::Batch;
pub use builder::{API_KEY, FleetBuilder};
pub use services::{AMQP_URL, REDIS_URL, Service, ServiceMissing};
pub use workers::{FAST_RETRY_BASE, FAST_RETRY_MAX};

use workers::{WorkerCommand, Workers};

/// How long cleaning up after a dropped fleet may take.
const CLEANUP_LIMIT: Duration = Duration::from_secs(10);

/// A fleet: where runs are submitted and where results are read. Built by
/// [`FleetBuilder`].
pub struct Fleet {
    /// Where step messages go.
    pub queue: Arc<dyn Queue>,
    /// Runs, threads and results.
    pub store: Arc<dyn Store>,
    dead: Arc<dyn DeadLetters>,
    /// The step queue's name (empty when embedded).
    pub queue_name: String,
    /// The store's key prefix (empty when embedded).
    pub prefix: String,
    workers: Workers,
    /// What to remove at the end (distributed only).
    remote: Option<Remote>,
    worker_command: WorkerCommand,
    poll_every: Duration,
    run_limit: Duration,
}

/// What a distributed fleet created on the shared services.
struct Remote {
    amqp: Arc<AmqpQueue>,
    redis: Arc<RedisStore>,
}

impl Remote {
    async fn delete(self) {
        let _ = self.amqp.delete_all().await;
        let _ = self.redis.delete_prefix().await;
    }
}

impl Fleet {
    /// Stops the workers and removes everything the fleet created; fails
    /// if the embedded worker failed while it ran.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        let workers = std::mem::replace(&mut self.workers, Workers::Processes(Vec::new()));
        let stopped = workers::stop(workers).await;
        if let Some(remote) = self.remote.take() {
            remote.delete().await;
        }
        stopped
    }
}

/// A test that fails never reaches [`Fleet::shutdown`]: remove its queues
/// and keys anyway, on a runtime of its own (the test's may be
/// unwinding). Worker processes die with their handles (`kill_on_drop`);
/// an embedded worker is told to stop.
impl Drop for Fleet {
    fn drop(&mut self) {
        if let Workers::InProcess { shutdown, .. } = &self.workers {
            shutdown.cancel();
        }
        let Some(remote) = self.remote.take() else {
            return;
        };
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Runtime::new() else {
                return;
            };
            // Bounded: the connections may depend on the test's runtime.
            let _ = runtime.block_on(tokio::time::timeout(CLEANUP_LIMIT, remote.delete()));
        });
        let _ = cleanup.join();
    }
}

/// A task with no seed files, context or state.
pub fn task(id: &str, input: &str) -> TaskLine {
    TaskLine {
        id: id.into(),
        input: input.into(),
        context: None,
        files: None,
        state: None,
    }
}
