//! Building a [`StepRunner`]: everything it is configured with is set
//! first, and its agent cache made once, in [`StepRunnerBuilder::build`].

use std::collections::BTreeMap;
use std::sync::Arc;

use deepfleet_model::Providers;
use deepfleet_proto::harness::HarnessProfile;
use deepfleet_proto::{InputLimits, Prices};
use deepfleet_queue::Queue;
use deepfleet_store::Store;
use deepfleet_store::sealed::ContextKey;

use crate::agent::{AgentCache, AgentOptions};
use crate::events::{EventSink, NoopSink};
use crate::middleware::Middleware;
use crate::sandbox::SandboxHost;
use crate::step::driver::StepRunner;
use crate::step::io::Io;
use crate::step::prepare::Preparer;
use crate::step::retry::RetryConfig;
use crate::step::spec_versions::SpecVersions;
use crate::time_limits::TimeLimits;

impl StepRunner {
    /// A runner over a queue, a store and model providers, with default
    /// retries and time limits, reporting no events, and no context key
    /// until the builder says otherwise.
    pub fn builder(
        queue: Arc<dyn Queue>,
        store: Arc<dyn Store>,
        providers: Arc<Providers>,
    ) -> StepRunnerBuilder {
        StepRunnerBuilder {
            queue,
            store,
            providers,
            retry: RetryConfig::default(),
            limits: TimeLimits::default(),
            options: AgentOptions::default(),
            events: Arc::new(NoopSink),
            context_key: None,
        }
    }
}

/// A [`StepRunner`] being configured (see [`StepRunner::builder`]).
pub struct StepRunnerBuilder {
    queue: Arc<dyn Queue>,
    store: Arc<dyn Store>,
    providers: Arc<Providers>,
    retry: RetryConfig,
    limits: TimeLimits,
    /// What agents are built with, but for the tool calls' time limit
    /// (`limits.tool_call`).
    options: AgentOptions,
    events: Arc<dyn EventSink>,
    context_key: Option<ContextKey>,
}

impl StepRunnerBuilder {
    /// Retries failed steps as `retry` says.
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// Runs steps and their tool calls under `limits` (see
    /// [`crate::time_limits`]).
    pub fn time_limits(mut self, limits: TimeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Keeps the files agents' tools write within `limits` (`[limits]`).
    pub fn file_limits(mut self, limits: InputLimits) -> Self {
        self.options.file_limits = limits;
        self
    }

    /// Prices model calls with `prices` (`[costs]`; the built-in list
    /// prices without it).
    pub fn prices(mut self, prices: Prices) -> Self {
        self.options.prices = prices;
        self
    }

    /// Opens runs' runtime context with the fleet's `key`.
    pub fn context_key(mut self, key: ContextKey) -> Self {
        self.context_key = Some(key);
        self
    }

    /// Builds agents under the worker's harness profiles (by
    /// `provider:model` or `provider`; a spec's own profiles lie on top).
    pub fn profiles(mut self, profiles: BTreeMap<String, HarnessProfile>) -> Self {
        self.options.profiles = profiles;
        self
    }

    /// Adds a middleware of the worker's own to every agent's stack, after
    /// the built-in layers and those added before (see
    /// `docs/middleware.md`, "Writing one").
    pub fn middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.options.middleware.push(middleware);
        self
    }

    /// Runs `execute` commands on `host` instead of the process's own (a
    /// test's host without `bwrap`).
    pub fn sandbox(mut self, host: Arc<SandboxHost>) -> Self {
        self.options.sandbox = host;
        self
    }

    /// Reports harness events to `events`.
    pub fn events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// The runner, its agent cache made here, once.
    pub fn build(self) -> StepRunner {
        let options = AgentOptions {
            tool_timeout: self.limits.tool_call,
            ..self.options
        };
        StepRunner {
            io: Io {
                queue: self.queue,
                store: self.store,
                events: self.events,
            },
            prep: Preparer {
                agents: AgentCache::new(options),
                providers: self.providers,
                specs: SpecVersions::default(),
                context_key: self.context_key,
            },
            retry: self.retry,
            limits: self.limits,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::embedded::EmbeddedStore;

    use super::*;

    #[test]
    fn the_agents_take_the_tool_calls_limit_whenever_it_was_set() {
        let limits = TimeLimits {
            tool_call: Duration::from_secs(7),
            ..TimeLimits::default()
        };
        let runner = StepRunner::builder(
            Arc::new(MemoryQueue::new()),
            Arc::new(EmbeddedStore::new()),
            Arc::new(Providers::with_env(Default::default(), |_| None)),
        )
        .time_limits(limits)
        .file_limits(InputLimits::default())
        .build();
        let options = runner.prep.agents.options();
        assert_eq!(options.tool_timeout, Duration::from_secs(7));
        assert_eq!(runner.limits, limits);
    }
}
