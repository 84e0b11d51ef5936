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
mod broker;
mod builder;
mod handle;
pub mod services;
mod workers;

pub use batch::{Batch, task};
pub use broker::delete_queues;
pub use builder::FleetBuilder;
pub use handle::Fleet;
pub use services::{AMQP_URL, REDIS_URL, Service, ServiceMissing};
pub use workers::{API_KEY, FAST_RETRY_BASE, FAST_RETRY_MAX};

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
