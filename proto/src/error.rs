//! Stable error codes: what a run record, a dead-letter reason or an API
//! error carries, independent of any crate's error type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stable, machine-readable error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// A queue message that is not a valid envelope.
    InvalidJob,
    /// An agent spec that does not parse or validate.
    InvalidSpec,
    /// A task or request that breaks the contract.
    InvalidRequest,
    /// A job for a run the store does not know.
    UnknownRun,
    /// The run hit its step limit.
    MaxSteps,
    /// The provider rejected the credentials.
    ModelAuth,
    /// The provider rejected the request as malformed.
    ModelBadRequest,
    /// The provider kept failing after every retry.
    ModelUnavailable,
    /// The conversation does not fit the model's window even after recovery.
    ContextOverflow,
    /// A tool failed in a way the model cannot act on.
    ToolFailed,
    /// The agent declares a sandbox, and the worker cannot provide one.
    SandboxUnavailable,
    /// A subagent run failed.
    SubagentFailed,
    /// The run was cancelled.
    Cancelled,
    /// The step failed on every delivery attempt.
    AttemptsExhausted,
    /// The API was asked for a thread, run, assistant or item it does not
    /// know.
    NotFound,
    /// The request conflicts with what exists (a duplicate id, a busy
    /// thread under `multitask_strategy=reject`).
    Conflict,
    /// The API was called without a key, or with one it does not know.
    Unauthenticated,
    /// The caller's key has a role that may not do this.
    Forbidden,
    /// The caller's tenant has as many runs in flight as it may; retry
    /// after the `Retry-After` seconds.
    TooManyRuns,
    /// A request, message or file over its size limit, or a thread over
    /// its number of files.
    TooLarge,
    /// The run passed its deadline.
    Timeout,
    /// The run's batch or tenant spent its cost budget.
    BudgetExceeded,
    /// Anything else; details are in the logs.
    Internal,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJob => "invalid_job",
            ErrorCode::InvalidSpec => "invalid_spec",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::UnknownRun => "unknown_run",
            ErrorCode::MaxSteps => "max_steps",
            ErrorCode::ModelAuth => "model_auth",
            ErrorCode::ModelBadRequest => "model_bad_request",
            ErrorCode::ModelUnavailable => "model_unavailable",
            ErrorCode::ContextOverflow => "context_overflow",
            ErrorCode::ToolFailed => "tool_failed",
            ErrorCode::SandboxUnavailable => "sandbox_unavailable",
            ErrorCode::SubagentFailed => "subagent_failed",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::AttemptsExhausted => "attempts_exhausted",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::TooManyRuns => "too_many_runs",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::Timeout => "timeout",
            ErrorCode::BudgetExceeded => "budget_exceeded",
            ErrorCode::Internal => "internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_str_matches_serde() {
        for code in [
            ErrorCode::InvalidJob,
            ErrorCode::MaxSteps,
            ErrorCode::AttemptsExhausted,
            ErrorCode::TooManyRuns,
            ErrorCode::TooLarge,
            ErrorCode::Timeout,
            ErrorCode::BudgetExceeded,
        ] {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json.as_str(), Some(code.as_str()));
        }
    }
}
