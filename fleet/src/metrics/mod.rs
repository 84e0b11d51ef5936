//! Prometheus metrics of one process: what the harness reports about
//! model calls, tools, compaction, steps and runs, plus the queue gauges
//! the binary samples.
//!
//! One [`Metrics`] owns its own registry (no global state), so a process
//! can serve exactly what it measured and tests can run side by side.
//! The families are updated through typed methods
//! ([`Metrics::model_call`], [`Metrics::run_finished`], ...), and every
//! label set is bounded: models and agents come from configured specs,
//! tools from the registry, callers, kinds and statuses from closed
//! enums; run, thread and message ids never become labels.

mod record;

use std::collections::BTreeSet;

use prometheus::{
    CounterVec, Encoder, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};

/// Model and step latencies: seconds to minutes (long generations,
/// provider backoff inside the client).
const LLM_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];
/// Tool calls: most are file operations (milliseconds), some are HTTP.
const TOOL_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];
/// Queue wait and rate-limiter waits: immediate when idle, minutes when
/// the fleet is saturated or a retry backs off.
const WAIT_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];
/// Whole runs: a few model calls up to long delegating agents.
const RUN_BUCKETS: &[f64] = &[
    1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0,
];

/// The metric families this build exports, for checks that dashboards
/// and alerts name only real metrics. Histograms add `_bucket`, `_sum`
/// and `_count` to their name.
pub const METRIC_NAMES: &[&str] = &[
    "deepfleet_model_tokens_total",
    "deepfleet_model_calls_total",
    "deepfleet_model_call_duration_seconds",
    "deepfleet_model_cost_usd_total",
    "deepfleet_provider_errors_total",
    "deepfleet_tool_calls_total",
    "deepfleet_tool_call_duration_seconds",
    "deepfleet_compactions_total",
    "deepfleet_compaction_tokens_removed_total",
    "deepfleet_queue_wait_seconds",
    "deepfleet_step_duration_seconds",
    "deepfleet_steps_in_flight",
    "deepfleet_step_retries_total",
    "deepfleet_dead_letters_total",
    "deepfleet_runs_finished_total",
    "deepfleet_run_duration_seconds",
    "deepfleet_rate_limiter_wait_seconds",
    "deepfleet_rate_limited_calls_total",
    "deepfleet_rate_limiter_remaining",
    "deepfleet_concurrency_waits_total",
    "deepfleet_queue_depth",
    "deepfleet_queue_consumers",
    "deepfleet_webhook_deliveries_total",
];

/// Who made a model call or ran a run: summaries are their own line
/// item, whatever run asked for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A top-level run.
    Main,
    /// A delegated run.
    Subagent,
    /// A summarization call compressing some run's context.
    Summarization,
}

impl Caller {
    /// The `caller` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Caller::Main => "main",
            Caller::Subagent => "subagent",
            Caller::Summarization => "summarization",
        }
    }
}

/// What became of one webhook delivery attempt (the scheduler's
/// run-completion webhooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// The attempt failed; another follows after a backoff.
    Retrying,
    /// The last attempt failed, or the delivery could not be made: given
    /// up.
    Failed,
}

impl WebhookOutcome {
    /// The `outcome` label.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookOutcome::Delivered => "delivered",
            WebhookOutcome::Retrying => "retrying",
            WebhookOutcome::Failed => "failed",
        }
    }
}

/// The metrics of one process. Cheap to update from any thread; share it
/// behind an `Arc` (the worker reports its harness events into it).
pub struct Metrics {
    registry: Registry,
    tokens: IntCounterVec,
    model_calls: IntCounterVec,
    model_latency: HistogramVec,
    cost: CounterVec,
    provider_errors: IntCounterVec,
    tool_calls: IntCounterVec,
    tool_latency: HistogramVec,
    compactions: IntCounterVec,
    compaction_tokens: IntCounterVec,
    queue_wait: Histogram,
    step_latency: Histogram,
    steps_in_flight: IntGauge,
    retries: IntCounterVec,
    dead_letters: IntCounterVec,
    runs: IntCounterVec,
    run_latency: HistogramVec,
    rate_limiter_wait: Histogram,
    rate_limited_calls: IntCounterVec,
    rate_limiter_remaining: GaugeVec,
    concurrency_waits: IntCounterVec,
    queue_depth: IntGauge,
    queue_consumers: IntGauge,
    webhook_deliveries: IntCounterVec,
}

impl Metrics {
    /// Registers every metric in a fresh registry.
    #[expect(
        clippy::too_many_lines,
        reason = "a flat table of uniform registrations, one per family"
    )]
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let r = &registry;
        Ok(Metrics {
            tokens: counter(
                r,
                "deepfleet_model_tokens_total",
                "Tokens used by model calls, by model, agent, caller (main, subagent, summarization) and type (input, output, cached).",
                &["model", "agent", "caller", "type"],
            )?,
            model_calls: counter(
                r,
                "deepfleet_model_calls_total",
                "Model calls, by model, caller and outcome (ok, error).",
                &["model", "caller", "outcome"],
            )?,
            model_latency: histogram(
                r,
                "deepfleet_model_call_duration_seconds",
                "Wall time of model calls, client retries included.",
                &["model"],
                LLM_BUCKETS,
            )?,
            cost: {
                let metric = CounterVec::new(
                    Opts::new(
                        "deepfleet_model_cost_usd_total",
                        "What model calls cost in dollars at the configured prices, by model, agent and tenant.",
                    ),
                    &["model", "agent", "tenant"],
                )?;
                r.register(Box::new(metric.clone()))?;
                metric
            },
            provider_errors: counter(
                r,
                "deepfleet_provider_errors_total",
                "Failed model calls, by model and error class.",
                &["model", "class"],
            )?,
            tool_calls: counter(
                r,
                "deepfleet_tool_calls_total",
                "Tool calls, by tool and status (success, error).",
                &["tool", "status"],
            )?,
            tool_latency: histogram(
                r,
                "deepfleet_tool_call_duration_seconds",
                "Wall time of tool calls.",
                &["tool"],
                TOOL_BUCKETS,
            )?,
            compactions: counter(
                r,
                "deepfleet_compactions_total",
                "Context compression events, by kind.",
                &["kind"],
            )?,
            compaction_tokens: counter(
                r,
                "deepfleet_compaction_tokens_removed_total",
                "Tokens removed from model requests by context compression, by kind.",
                &["kind"],
            )?,
            queue_wait: plain_histogram(
                r,
                "deepfleet_queue_wait_seconds",
                "Time from publishing a step message to its delivery.",
                WAIT_BUCKETS,
            )?,
            step_latency: plain_histogram(
                r,
                "deepfleet_step_duration_seconds",
                "Wall time from delivery to commit of executed steps.",
                LLM_BUCKETS,
            )?,
            steps_in_flight: gauge(
                r,
                "deepfleet_steps_in_flight",
                "Step messages being handled now.",
            )?,
            retries: counter(
                r,
                "deepfleet_step_retries_total",
                "Failed steps published again for a later attempt, by error code.",
                &["code"],
            )?,
            dead_letters: counter(
                r,
                "deepfleet_dead_letters_total",
                "Messages moved to the dead-letter queue, by reason.",
                &["reason"],
            )?,
            runs: counter(
                r,
                "deepfleet_runs_finished_total",
                "Runs that reached a final status, by agent, caller (main, subagent) and status.",
                &["agent", "caller", "status"],
            )?,
            run_latency: histogram(
                r,
                "deepfleet_run_duration_seconds",
                "End-to-end time of runs, from acceptance to final status.",
                &["status"],
                RUN_BUCKETS,
            )?,
            rate_limiter_wait: plain_histogram(
                r,
                "deepfleet_rate_limiter_wait_seconds",
                "Time model calls waited for the fleet-wide rate limiter.",
                WAIT_BUCKETS,
            )?,
            rate_limited_calls: counter(
                r,
                "deepfleet_rate_limited_calls_total",
                "Model call attempts the provider answered with a 429, by provider and model.",
                &["provider", "model"],
            )?,
            rate_limiter_remaining: gauge_vec(
                r,
                "deepfleet_rate_limiter_remaining",
                "What the fleet-wide rate limiter thinks is left per minute, by provider, account (a hash of the key), model and dimension (requests, tokens, input_tokens, output_tokens); below zero: promised to deferred calls.",
                &["provider", "account", "model", "dimension"],
            )?,
            concurrency_waits: counter(
                r,
                "deepfleet_concurrency_waits_total",
                "Steps deferred because their run's concurrency pool was full, by tenant and pool (tenant: the tenant's own limit; assistant: one of its assistants').",
                &["tenant", "pool"],
            )?,
            queue_depth: gauge(
                r,
                "deepfleet_queue_depth",
                "Step messages ready for delivery.",
            )?,
            queue_consumers: gauge(
                r,
                "deepfleet_queue_consumers",
                "Consumers this process runs on the step queue.",
            )?,
            webhook_deliveries: counter(
                r,
                "deepfleet_webhook_deliveries_total",
                "Run-completion webhook attempts, by outcome (delivered, retrying, failed: given up).",
                &["outcome"],
            )?,
            registry,
        })
    }

    /// The registry, to add process-specific metrics next to these.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Records the queue's ready messages (sampled at scrape time).
    pub fn set_queue_depth(&self, depth: u64) {
        self.queue_depth
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// Records how many consumers this process runs on the queue.
    pub fn set_queue_consumers(&self, consumers: u32) {
        self.queue_consumers.set(i64::from(consumers));
    }

    /// Everything in the Prometheus text exposition format.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut out = Vec::new();
        TextEncoder::new().encode(&self.registry.gather(), &mut out)?;
        String::from_utf8(out).map_err(|e| prometheus::Error::Msg(e.to_string()))
    }

    /// The sample lines of `family` in the text format, comments left
    /// out: what tests compare.
    pub fn samples(&self, family: &str) -> Result<Vec<String>, prometheus::Error> {
        let labelled = format!("{family}{{");
        let plain = format!("{family} ");
        Ok(self
            .render()?
            .lines()
            .filter(|l| l.starts_with(&labelled) || l.starts_with(&plain))
            .map(str::to_owned)
            .collect())
    }

    /// The families that have samples now. A labelled family appears once
    /// it is first updated, so after one update of each this is
    /// [`METRIC_NAMES`].
    pub fn exported_families(&self) -> BTreeSet<String> {
        self.registry
            .gather()
            .iter()
            .map(|f| f.name().to_owned())
            .collect()
    }
}

fn counter(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, prometheus::Error> {
    let metric = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> Result<HistogramVec, prometheus::Error> {
    let metric = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn plain_histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
) -> Result<Histogram, prometheus::Error> {
    let metric = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets.to_vec()))?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn gauge(registry: &Registry, name: &str, help: &str) -> Result<IntGauge, prometheus::Error> {
    let metric = IntGauge::new(name, help)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<GaugeVec, prometheus::Error> {
    let metric = GaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
