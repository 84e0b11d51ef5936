//! What the settings configure: the connections to the fleet's RabbitMQ
//! and Redis, the model providers, and the step runner a worker runs. The
//! binary's commands and a team's own worker build them here, so they
//! cannot drift apart.

use std::sync::Arc;

use deepfleet_model::Providers;
use deepfleet_model::ratelimit::{InProcessLimiter, RateGate, RateLimiter, RateLimits};
use deepfleet_queue::Queue;
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_queue::lanes::{Lanes, interactive_name};
use deepfleet_store::Store;
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::agent::AgentOptions;
use deepfleet_worker::events::EventSink;
use deepfleet_worker::{StepRunner, StepRunnerBuilder};

use crate::redacted_url::redacted;
use crate::{Settings, SettingsError};

/// Connects to the fleet's RabbitMQ and Redis: `queue_url` and
/// `store_url` (flags) win over the settings' `queue` and `store`; the
/// queue is `queue_name`, the keys start with `key_prefix`, and each
/// connection may take `connect_timeout_secs`. With `[encryption]` keys
/// the store seals its values under them.
pub async fn connect_fleet(
    queue_url: Option<String>,
    store_url: Option<String>,
    settings: &Settings,
) -> Result<(Arc<dyn Queue>, Arc<dyn Store>), SettingsError> {
    let queue_url = queue_url
        .or_else(|| settings.queue.clone())
        .ok_or(SettingsError::NoQueue)?;
    let store_url = store_url
        .or_else(|| settings.store.clone())
        .ok_or(SettingsError::NoStore)?;
    let connect = |name: String| {
        let config = amqp_config(&queue_url, &name, settings);
        async {
            AmqpQueue::connect(config)
                .await
                .map_err(|source| SettingsError::Queue {
                    url: redacted(&queue_url),
                    source,
                })
        }
    };
    let batch = connect(settings.queue_name.clone()).await?;
    let interactive = connect(interactive_name(&settings.queue_name)).await?;
    let store = connect_store(&store_url, settings).await?;
    let queue = Lanes::new(Arc::new(batch), Arc::new(interactive));
    Ok((Arc::new(queue), Arc::new(store)))
}

/// The fleet's Redis at `url`, under the settings' key prefix, connect
/// timeout, thread cache and encryption keys.
pub async fn connect_store(url: &str, settings: &Settings) -> Result<RedisStore, SettingsError> {
    let keyring = settings.encryption.keyring()?;
    let store = RedisStore::connect_within(url, &settings.key_prefix, settings.connect_timeout())
        .await
        .map_err(|source| SettingsError::Store {
            url: redacted(url),
            source,
        })?
        .with_thread_cache(settings.thread_cache_mib.saturating_mul(1024 * 1024));
    Ok(match keyring {
        Some(keyring) => store.with_keyring(keyring),
        None => store,
    })
}

/// The broker configuration for queue `name` at `url`, with the
/// settings' connect timeout.
pub fn amqp_config(url: &str, name: &str, settings: &Settings) -> AmqpConfig {
    AmqpConfig {
        connect_timeout: settings.connect_timeout(),
        ..AmqpConfig::new(url, name)
    }
}

/// A step runner as the settings configure it (providers, retries, time
/// limits, harness profiles), opening runs' context with `key` and
/// reporting to `events`; a worker with middleware of its own starts from
/// [`step_runner_builder`] instead.
pub fn step_runner(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    settings: &Settings,
    key: ContextKey,
    events: Option<Arc<dyn EventSink>>,
) -> StepRunner {
    step_runner_builder(queue, store, settings, key, events, None).build()
}

/// [`step_runner`] whose model calls pass `gate` (the fleet-wide rate
/// limiter, [`rate_gate`]); `None` = an in-process limiter of the
/// settings' `[rate_limits]`, which is the whole fleet's only when this
/// process is (embedded).
pub fn limited_step_runner(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    settings: &Settings,
    key: ContextKey,
    events: Option<Arc<dyn EventSink>>,
    gate: Option<RateGate>,
) -> StepRunner {
    step_runner_builder(queue, store, settings, key, events, gate).build()
}

/// The builder of [`limited_step_runner`], for a worker to add its own
/// middleware to before building it.
pub fn step_runner_builder(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    settings: &Settings,
    key: ContextKey,
    events: Option<Arc<dyn EventSink>>,
    gate: Option<RateGate>,
) -> StepRunnerBuilder {
    let gate = gate.unwrap_or_else(|| rate_gate(settings, Arc::new(InProcessLimiter::new())));
    let providers = Arc::new(providers(settings).with_rate_gate(gate));
    let builder = StepRunner::builder(queue, store, providers)
        .retry(settings.worker.retry())
        .time_limits(settings.worker.time_limits())
        .file_limits(settings.limits.input())
        .context_key(key)
        .profiles(settings.profiles.clone())
        .prices(settings.costs.prices());
    match events {
        Some(events) => builder.events(events),
        None => builder,
    }
}

/// The settings' `[rate_limits]` over `limiter` (the Redis one of
/// [`RedisStore::rate_limiter`] for a distributed fleet).
pub fn rate_gate(settings: &Settings, limiter: Arc<dyn RateLimiter>) -> RateGate {
    RateGate::new(limiter, RateLimits::from(settings.rate_limits.clone()))
}

/// The model providers the settings configure. `replay:PATH` models
/// (examples, trying the fleet without a key) are served in process by
/// the replay provider.
pub fn providers(settings: &Settings) -> Providers {
    deepfleet_replay::register(Providers::with_env(
        settings.providers.clone(),
        settings.var_lookup(),
    ))
}

/// What a worker of these settings adds to every agent: its harness
/// profiles, tool-call time limit, file limits and prices.
pub fn agent_options(settings: &Settings) -> AgentOptions {
    AgentOptions {
        profiles: settings.profiles.clone(),
        tool_timeout: settings.worker.time_limits().tool_call,
        file_limits: settings.limits.input(),
        prices: settings.costs.prices(),
        ..AgentOptions::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_url_names_its_flag_and_variable() {
        let settings = Settings::default();
        let err = connect_fleet(None, Some("redis://x".into()), &settings)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("--queue") && err.contains("DEEPFLEET__QUEUE"),
            "{err}"
        );
        let err = connect_fleet(Some("amqp://x".into()), None, &settings)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("--store") && err.contains("DEEPFLEET__STORE"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_unreachable_broker_is_named_without_its_password() {
        let settings = Settings {
            connect_timeout_secs: 1,
            ..Settings::default()
        };
        let err = connect_fleet(
            Some("amqp://guest:secret@127.0.0.1:1/%2f".into()),
            Some("redis://127.0.0.1:1".into()),
            &settings,
        )
        .await
        .err()
        .unwrap()
        .to_string();
        assert_eq!(
            err,
            "connecting to RabbitMQ at amqp://guest:***@127.0.0.1:1/%2f"
        );
    }
}
