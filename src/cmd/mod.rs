//! The subcommands.

pub mod batch;
pub mod metrics_server;
pub mod resume;
pub mod run;
pub mod scheduler;
pub mod scripted_server;
pub mod submit;
pub mod telemetry;
pub mod worker;

use std::sync::Arc;

use anyhow::Context;
use deepfleet_queue::Queue;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;

use crate::settings::Settings;

/// Connects to the fleet's RabbitMQ and Redis; flags win over settings.
pub async fn connect_fleet(
    queue_url: Option<String>,
    store_url: Option<String>,
    settings: &Settings,
) -> anyhow::Result<(Arc<dyn Queue>, Arc<dyn Store>)> {
    let queue_url = queue_url
        .or_else(|| settings.queue.clone())
        .context("no queue URL: pass --queue amqp://... or set DEEPFLEET__QUEUE")?;
    let store_url = store_url
        .or_else(|| settings.store.clone())
        .context("no store URL: pass --store redis://... or set DEEPFLEET__STORE")?;
    let queue = AmqpQueue::connect(AmqpConfig::new(queue_url, settings.queue_name.clone()))
        .await
        .context("connecting to RabbitMQ")?;
    let store = RedisStore::connect(&store_url, &settings.key_prefix)
        .await
        .context("connecting to Redis")?;
    Ok((Arc::new(queue), Arc::new(store)))
}
