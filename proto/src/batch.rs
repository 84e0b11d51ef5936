//! The JSONL batch interface of `deepfleet run` and `deepfleet submit`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::caller_usage::UsageByCaller;
use crate::message::Usage;

/// One line of a tasks file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskLine {
    /// The caller's id, echoed in the result line.
    pub id: String,
    /// The user message that starts the run.
    pub input: String,
    /// Runtime context for the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// Files seeded into the run's thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, String>>,
    /// Custom state fields seeded into the thread; checked against the
    /// spec's `state_schema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Map<String, Value>>,
    /// Seconds the run may take from its first step on; overrides the
    /// spec's `limits.run_timeout_secs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// How a run ended, as a result line reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    /// Finished with a final answer.
    Success,
    /// Failed (or was cancelled); `error` says why.
    Error,
    /// Waiting for a human decision.
    Interrupted,
    /// Stopped at its deadline; `error` says which.
    Timeout,
    /// Stopped because its batch or tenant spent its budget; `error`
    /// says which.
    BudgetExceeded,
}

/// Token totals of a result line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResultUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<Usage> for ResultUsage {
    fn from(u: Usage) -> Self {
        ResultUsage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
        }
    }
}

/// One line of a results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResultLine {
    /// The task's id.
    pub id: String,
    /// How the run ended.
    pub status: ResultStatus,
    /// The final answer (empty on error).
    pub output: String,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Model calls of the run itself (`by_caller.main.model_calls`).
    pub steps: u32,
    /// Tokens of the run, all its subagents and the summaries compressing
    /// their contexts (the total of `by_caller`).
    pub usage: ResultUsage,
    /// Model calls and tokens by caller: the run itself, its subagents,
    /// summaries; split as the metrics' `caller` label splits them.
    #[serde(default)]
    pub by_caller: UsageByCaller,
    /// What the run cost in dollars, its subagents and summaries included
    /// (list prices of `[prices]`).
    #[serde(default)]
    pub cost_usd: f64,
    /// The thread's text files at the end.
    pub files: BTreeMap<String, String>,
    /// Set when the run waits for a reviewer: what to decide, and the run
    /// to resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<PendingReview>,
}

/// The review an interrupted run waits for, as a result line reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingReview {
    /// The interrupted run: the task's own run or one of its subagents.
    pub run_id: String,
    /// That run's thread.
    pub thread_id: String,
    /// The gated calls, in the order decisions must be given.
    pub action_requests: Vec<crate::hitl::ActionRequest>,
    /// The decisions each accepts.
    pub review_configs: Vec<crate::hitl::ReviewConfig>,
}
