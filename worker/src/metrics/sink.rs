//! [`Metrics`] as an [`EventSink`]: each harness event becomes counter,
//! histogram and gauge updates.

use deepfleet_model::{CallPurpose, ErrorKind};
use deepfleet_proto::{RunStatus, ToolStatus};

use super::Metrics;
use crate::events::{Event, EventScope, EventSink};

impl EventSink for Metrics {
    fn emit(&self, scope: &EventScope, event: &Event) {
        match event {
            Event::ModelCall {
                model,
                purpose,
                usage,
                latency,
            } => {
                let caller = caller(scope, *purpose);
                let outcome = if usage.is_some() { "ok" } else { "error" };
                self.model_calls
                    .with_label_values(&[model.as_str(), caller, outcome])
                    .inc();
                self.model_latency
                    .with_label_values(&[model.as_str()])
                    .observe(latency.as_secs_f64());
                if let Some(usage) = usage {
                    for (kind, tokens) in [
                        ("input", usage.input_tokens),
                        ("output", usage.output_tokens),
                        ("cached", usage.cached_input_tokens),
                    ] {
                        self.tokens
                            .with_label_values(&[
                                model.as_str(),
                                scope.agent.as_str(),
                                caller,
                                kind,
                            ])
                            .inc_by(tokens);
                    }
                }
            }
            Event::ToolCall {
                tool,
                status,
                latency,
            } => {
                let status = match status {
                    ToolStatus::Success => "success",
                    ToolStatus::Error => "error",
                };
                self.tool_calls
                    .with_label_values(&[tool.as_str(), status])
                    .inc();
                self.tool_latency
                    .with_label_values(&[tool.as_str()])
                    .observe(latency.as_secs_f64());
            }
            Event::Compaction {
                kind,
                tokens_before,
                tokens_after,
            } => {
                self.compactions.with_label_values(&[kind.as_str()]).inc();
                self.compaction_tokens
                    .with_label_values(&[kind.as_str()])
                    .inc_by(tokens_before.saturating_sub(*tokens_after));
            }
            Event::StepCommitted { latency, .. } => {
                self.step_latency.observe(latency.as_secs_f64());
            }
            Event::StepStarted { queue_wait } => {
                self.steps_in_flight.inc();
                if let Some(wait) = queue_wait {
                    self.queue_wait.observe(wait.as_secs_f64());
                }
            }
            Event::StepEnded => self.steps_in_flight.dec(),
            Event::RunFinished { status, latency } => {
                let caller = if scope.subagent.is_some() {
                    "subagent"
                } else {
                    "main"
                };
                let status = status_label(*status);
                self.runs
                    .with_label_values(&[scope.agent.as_str(), caller, status])
                    .inc();
                self.run_latency
                    .with_label_values(&[status])
                    .observe(latency.as_secs_f64());
            }
            Event::Retried { code } => {
                self.retries.with_label_values(&[code.as_str()]).inc();
            }
            Event::DeadLettered { reason } => {
                self.dead_letters
                    .with_label_values(&[reason.as_str()])
                    .inc();
            }
            Event::ProviderError { model, kind } => {
                self.provider_errors
                    .with_label_values(&[model.as_str(), error_class(*kind)])
                    .inc();
            }
            Event::RateLimitWait { wait } => {
                self.rate_limiter_wait.observe(wait.as_secs_f64());
            }
        }
    }
}

/// Who made a model call: summaries are their own line item, whatever
/// run asked for them.
fn caller(scope: &EventScope, purpose: CallPurpose) -> &'static str {
    match purpose {
        CallPurpose::Summarization => "summarization",
        CallPurpose::Agent if scope.subagent.is_some() => "subagent",
        CallPurpose::Agent => "main",
    }
}

fn status_label(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Pending => "pending",
        RunStatus::Running => "running",
        RunStatus::Waiting => "waiting",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Success => "success",
        RunStatus::Error => "error",
        RunStatus::Cancelled => "cancelled",
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
        ErrorKind::Unsupported => "unsupported",
    }
}
