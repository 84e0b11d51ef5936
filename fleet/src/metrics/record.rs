//! Updating the families: one method per thing a process observes, each
//! taking bounded values only, so a caller cannot invent a label.

use std::time::Duration;

use deepfleet_proto::{ErrorCode, RunStatus, ToolStatus, Usage};

use super::{Caller, Metrics, WebhookOutcome};

impl Metrics {
    /// A model call of `agent` on `model`: its usage when it succeeded
    /// (`None` counts a failure) and its wall time.
    pub fn model_call(
        &self,
        model: &str,
        agent: &str,
        caller: Caller,
        usage: Option<&Usage>,
        latency: Duration,
    ) {
        let outcome = if usage.is_some() { "ok" } else { "error" };
        self.model_calls
            .with_label_values(&[model, caller.as_str(), outcome])
            .inc();
        self.model_latency
            .with_label_values(&[model])
            .observe(latency.as_secs_f64());
        if let Some(usage) = usage {
            for (kind, tokens) in [
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
                ("cached", usage.cached_input_tokens),
            ] {
                self.tokens
                    .with_label_values(&[model, agent, caller.as_str(), kind])
                    .inc_by(tokens);
            }
        }
    }

    /// What model calls of `agent` on `model` for `tenant` cost, in
    /// nano-dollars.
    pub fn cost(&self, model: &str, agent: &str, tenant: &str, nano_usd: u64) {
        if nano_usd > 0 {
            self.cost
                .with_label_values(&[model, agent, tenant])
                .inc_by(deepfleet_proto::cost::usd(nano_usd));
        }
    }

    /// A failed model call, by error `class` (`rate_limited` is what the
    /// 429 alert watches).
    pub fn provider_error(&self, model: &str, class: &str) {
        self.provider_errors
            .with_label_values(&[model, class])
            .inc();
    }

    /// A tool call and its wall time.
    pub fn tool_call(&self, tool: &str, status: ToolStatus, latency: Duration) {
        let status = match status {
            ToolStatus::Success => "success",
            ToolStatus::Error => "error",
        };
        self.tool_calls.with_label_values(&[tool, status]).inc();
        self.tool_latency
            .with_label_values(&[tool])
            .observe(latency.as_secs_f64());
    }

    /// A context compression event of `kind` that removed
    /// `tokens_removed` tokens from a model request.
    pub fn compaction(&self, kind: &str, tokens_removed: u64) {
        self.compactions.with_label_values(&[kind]).inc();
        self.compaction_tokens
            .with_label_values(&[kind])
            .inc_by(tokens_removed);
    }

    /// A step message taken up; `queue_wait` is how long it waited, when
    /// its envelope says when it was published.
    pub fn step_started(&self, queue_wait: Option<Duration>) {
        self.steps_in_flight.inc();
        if let Some(wait) = queue_wait {
            self.queue_wait.observe(wait.as_secs_f64());
        }
    }

    /// A step message handled, whatever the outcome.
    pub fn step_ended(&self) {
        self.steps_in_flight.dec();
    }

    /// An executed step committed, `latency` after its delivery.
    pub fn step_committed(&self, latency: Duration) {
        self.step_latency.observe(latency.as_secs_f64());
    }

    /// A run of `agent` reached its final `status`, `latency` after it
    /// was accepted.
    pub fn run_finished(&self, agent: &str, caller: Caller, status: RunStatus, latency: Duration) {
        let status = status_label(status);
        self.runs
            .with_label_values(&[agent, caller.as_str(), status])
            .inc();
        self.run_latency
            .with_label_values(&[status])
            .observe(latency.as_secs_f64());
    }

    /// A failed step published again for a later attempt.
    pub fn retried(&self, code: ErrorCode) {
        self.retries.with_label_values(&[code.as_str()]).inc();
    }

    /// A webhook delivery attempt's outcome.
    pub fn webhook_delivery(&self, outcome: WebhookOutcome) {
        self.webhook_deliveries
            .with_label_values(&[outcome.as_str()])
            .inc();
    }

    /// A message moved to the dead-letter queue.
    pub fn dead_lettered(&self, reason: &str) {
        self.dead_letters.with_label_values(&[reason]).inc();
    }

    /// A model call's wait for the fleet-wide rate limiter: awaited in
    /// place, or one deferral of its step.
    pub fn rate_limit_wait(&self, wait: Duration) {
        self.rate_limiter_wait.observe(wait.as_secs_f64());
    }

    /// A step deferred because a concurrency pool of `tenant`'s was full:
    /// one of its assistants' (`assistant`) or its own.
    pub fn concurrency_wait(&self, tenant: &str, assistant: bool) {
        let pool = if assistant { "assistant" } else { "tenant" };
        self.concurrency_waits
            .with_label_values(&[tenant, pool])
            .inc();
    }

    /// A model call attempt the provider answered with a 429.
    pub fn rate_limited_call(&self, provider: &str, model: &str) {
        self.rate_limited_calls
            .with_label_values(&[provider, model])
            .inc();
    }

    /// The rate limiter's view of one account and model in one dimension.
    pub fn rate_limiter_remaining(
        &self,
        provider: &str,
        account: &str,
        model: &str,
        dimension: &str,
        remaining: f64,
    ) {
        self.rate_limiter_remaining
            .with_label_values(&[provider, account, model, dimension])
            .set(remaining);
    }
}

fn status_label(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Pending => "pending",
        RunStatus::Running => "running",
        RunStatus::Waiting => "waiting",
        RunStatus::AwaitingHuman => "interrupted",
        RunStatus::Success => "success",
        RunStatus::Error => "error",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Timeout => "timeout",
    }
}
