//! A step runner for tests that drive a run's steps by hand, one
//! delivery at a time, instead of through a fleet's workers.

use std::sync::Arc;

use deepfleet_model::Providers;
use deepfleet_queue::Queue;
use deepfleet_store::Store;
use deepfleet_worker::{RetryConfig, StepRunner};

/// A runner over `queue` and `store` with no model provider configured
/// (`replay:` models only), default retries and no context key.
pub fn replay_runner(queue: Arc<dyn Queue>, store: Arc<dyn Store>) -> StepRunner {
    replay_runner_retrying(queue, store, RetryConfig::default())
}

/// [`replay_runner`] with its own retries.
pub fn replay_runner_retrying(
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    retry: RetryConfig,
) -> StepRunner {
    let providers = Arc::new(deepfleet_replay::register(Providers::with_env(
        Default::default(),
        |_| None,
    )));
    StepRunner::new(queue, store, providers, retry)
}
