//! The fleet's [`Metrics`] as an [`EventSink`]: each harness event
//! becomes updates of the families `deepfleet-fleet` defines. What
//! depends on the harness (events, call purposes, provider error kinds)
//! is mapped to labels here; the families, names and help texts live in
//! `deepfleet_fleet::metrics`.

mod limiter;

pub use limiter::LimiterMetrics;

use deepfleet_fleet::{Caller, Metrics};
use deepfleet_model::{CallPurpose, ErrorKind};

use crate::events::{Event, EventScope, EventSink};

impl EventSink for Metrics {
    fn emit(&self, scope: &EventScope, event: &Event) {
        match event {
            Event::ModelCall {
                model,
                purpose,
                usage,
                latency,
            } => self.model_call(
                model,
                &scope.agent,
                caller(scope, *purpose),
                usage.as_ref(),
                *latency,
            ),
            Event::ToolCall {
                tool,
                status,
                latency,
            } => self.tool_call(tool, *status, *latency),
            Event::Compaction {
                kind,
                tokens_before,
                tokens_after,
            } => self.compaction(kind.as_str(), tokens_before.saturating_sub(*tokens_after)),
            Event::StepCommitted { latency, .. } => self.step_committed(*latency),
            Event::StepStarted { queue_wait } => self.step_started(*queue_wait),
            Event::StepEnded => self.step_ended(),
            Event::RunFinished { status, latency } => {
                let caller = if scope.subagent.is_some() {
                    Caller::Subagent
                } else {
                    Caller::Main
                };
                self.run_finished(&scope.agent, caller, *status, *latency);
            }
            Event::Retried { code } => self.retried(*code),
            Event::DeadLettered { reason } => self.dead_lettered(reason.as_str()),
            Event::ProviderError { model, kind } => self.provider_error(model, error_class(*kind)),
            Event::Cost { model, nano_usd } => {
                self.cost(model, &scope.agent, &scope.tenant, *nano_usd);
            }
            Event::RateLimitWait { wait } => self.rate_limit_wait(*wait),
            Event::SlotWait { pool } => {
                self.concurrency_wait(pool.tenant.as_str(), pool.agent.is_some());
            }
        }
    }
}

/// Who made a model call: summaries are their own line item, whatever
/// run asked for them.
fn caller(scope: &EventScope, purpose: CallPurpose) -> Caller {
    match purpose {
        CallPurpose::Summarization => Caller::Summarization,
        CallPurpose::Agent if scope.subagent.is_some() => Caller::Subagent,
        CallPurpose::Agent => Caller::Main,
    }
}

/// The `class` label of provider errors; `rate_limited` is what the 429
/// alert watches.
fn error_class(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::RateLimited => "rate_limited",
        ErrorKind::Overloaded => "overloaded",
        ErrorKind::Server => "server",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Transport => "transport",
        ErrorKind::Auth => "auth",
        ErrorKind::BadRequest => "bad_request",
        ErrorKind::ContextOverflow => "context_overflow",
        ErrorKind::InvalidResponse => "invalid_response",
        ErrorKind::ResponseTooLarge => "response_too_large",
        ErrorKind::Unsupported => "unsupported",
        ErrorKind::AwaitingCapacity => "awaiting_capacity",
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
