//! A step runner for tests that drive a run's steps by hand, one
//! delivery at a time, instead of through a fleet's workers.

use std::sync::Arc;

use deepfleet_model::Providers;
use deepfleet_queue::Queue;
use deepfleet_store::Store;
use deepfleet_worker::{RetryConfig, StepRunner, StepRunnerBuilder};

/// A runner over `queue` and `store` with no model provider configured
/// (`replay:` models only), default retries and no context key.
pub fn replay_runner(queue: Arc<dyn Queue>, store: Arc<dyn Store>) -> StepRunner {
    replay_runner_builder(queue, store).build()
}

/// [`replay_runner`] with its own retries.
pub fn replay_runner_retrying(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    retry: RetryConfig,
) -> StepRunner {
    replay_runner_builder(queue, store).retry(retry).build()
}

/// The builder of [`replay_runner`], for a test that sets more.
pub fn replay_runner_builder(queue: Arc<dyn Queue>, store: Arc<dyn Store>) -> StepRunnerBuilder {
    let providers = Arc::new(deepfleet_replay::register(Providers::with_env(
        Default::default(),
        |_| None,
    )));
    StepRunner::builder(queue, store, providers)
}
