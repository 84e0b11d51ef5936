//! A team's own worker binary: the stock harness plus one middleware of
//! its own, here usage tracking that counts each thread's model calls and
//! tokens in the thread's custom state (checkpointed with the thread, so
//! it survives worker crashes and shows in the thread's state).
//!
//! Run it beside (or instead of) `deepfleet worker`:
//!
//! ```sh
//! DEEPFLEET_QUEUE=amqp://guest:guest@127.0.0.1:5672/%2f \
//! DEEPFLEET_STORE=redis://127.0.0.1:6379 \
//! DEEPFLEET_CONTEXT_KEY=... \
//!   cargo run --example custom_worker
//! ```
//!
//! Every worker of a fleet should run the same stack: any of them may take
//! any step of a run.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use deepfleet_model::{ModelRequest, ModelResponse, Providers};
use deepfleet_queue::amqp::{AmqpConfig, AmqpQueue};
use deepfleet_store::redis::RedisStore;
use deepfleet_store::sealed::ContextKey;
use deepfleet_worker::StepContext;
use deepfleet_worker::middleware::{Middleware, ModelNext};
use deepfleet_worker::{RetryConfig, StepError, StepRunner, Worker};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The custom-state field the tracker writes.
const FIELD: &str = "usage_tracking";

/// Counts model calls and tokens per thread, in custom state.
struct UsageTracking;

#[async_trait]
impl Middleware for UsageTracking {
    fn name(&self) -> &'static str {
        "usage_tracking"
    }

    async fn wrap_model(
        &self,
        request: ModelRequest,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        let response = next.run(request, cx).await?;
        let mut state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
        let entry = state
            .entry(FIELD)
            .or_insert_with(|| json!({"model_calls": 0, "input_tokens": 0, "output_tokens": 0}));
        bump(entry, "model_calls", 1);
        bump(entry, "input_tokens", response.usage.input_tokens);
        bump(entry, "output_tokens", response.usage.output_tokens);
        Ok(response)
    }
}

fn bump(entry: &mut Value, counter: &str, by: u64) {
    let now = entry.get(counter).and_then(Value::as_u64).unwrap_or(0);
    entry[counter] = json!(now + by);
}

fn env(name: &str) -> anyhow::Result<String> {
    std::env::var(name).with_context(|| format!("set {name}"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().init();
    let queue = Arc::new(
        AmqpQueue::connect(AmqpConfig::new(env("DEEPFLEET_QUEUE")?, "deepfleet.steps"))
            .await
            .context("connecting to RabbitMQ")?,
    );
    let store = Arc::new(
        RedisStore::connect(&env("DEEPFLEET_STORE")?, "deepfleet")
            .await
            .context("connecting to Redis")?,
    );
    let key = ContextKey::from_base64(&env("DEEPFLEET_CONTEXT_KEY")?)?;
    let providers = Arc::new(deepfleet_replay::register(Providers::new(
        Default::default(),
    )));
    let runner = StepRunner::new(queue.clone(), store, providers, RetryConfig::default())
        .with_context_key(key)
        .with_middleware(Arc::new(UsageTracking));
    let worker = Worker::new(queue, Arc::new(runner), 16, Duration::from_secs(30));
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    worker.run(shutdown).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up() {
        let mut entry = json!({});
        bump(&mut entry, "model_calls", 1);
        bump(&mut entry, "model_calls", 1);
        bump(&mut entry, "input_tokens", 40);
        assert_eq!(entry, json!({"model_calls": 2, "input_tokens": 40}));
    }
}
