//! Configuration: defaults, then an optional TOML file, then
//! `DEEPFLEET__...` environment variables, then command-line flags.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use deepfleet_model::ProviderConfig;
use serde::Deserialize;

/// Everything configurable.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// RabbitMQ URL of the distributed mode.
    pub queue: Option<String>,
    /// Redis URL of the distributed mode.
    pub store: Option<String>,
    /// Name of the step queue.
    pub queue_name: String,
    /// Prefix of every Redis key.
    pub key_prefix: String,
    /// Worker tuning.
    pub worker: WorkerSettings,
    /// Model providers by name (`[providers.openai]`).
    #[serde(default)]
    pub providers: HashMap<String, ProviderConfig>,
}

/// Worker tuning.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    /// Steps one worker runs at once (its prefetch).
    pub concurrency: u16,
    /// Deliveries of a failing step before its run fails.
    pub max_attempts: u32,
    /// Seconds to let steps in flight finish on shutdown.
    pub grace_secs: u64,
}

impl Settings {
    /// Loads settings from `file` (if any) and the environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut builder = config::Config::builder()
            .set_default("queue_name", "deepfleet.steps")?
            .set_default("key_prefix", "deepfleet")?
            .set_default("worker.concurrency", 64)?
            .set_default("worker.max_attempts", 5)?
            .set_default("worker.grace_secs", 30)?;
        if let Some(file) = file {
            builder = builder.add_source(config::File::from(file).required(true));
        }
        builder
            .add_source(
                config::Environment::with_prefix("DEEPFLEET")
                    .prefix_separator("__")
                    .separator("__")
                    .try_parsing(true),
            )
            .build()
            .and_then(config::Config::try_deserialize)
            .context("reading configuration")
    }
}
