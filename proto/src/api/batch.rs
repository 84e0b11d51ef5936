//! Batches: thousands of stateless runs created at once
//! (`POST /runs/batch`) and followed as one resource.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::caller_usage::UsageByCaller;
use crate::error::ErrorCode;
use crate::message::Usage;

use super::run::RunStatus;

/// `GET /batches/{id}`: how many runs are where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchResponse {
    /// The batch.
    pub batch_id: String,
    /// Its runs.
    pub total: usize,
    /// Runs by status.
    pub counts: BatchCounts,
}

/// Runs of a batch by API status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchCounts {
    /// Not started.
    pub pending: u64,
    /// In flight.
    pub running: u64,
    /// Finished (or parked on a human).
    pub success: u64,
    /// Failed.
    pub error: u64,
    /// Cancelled.
    pub interrupted: u64,
    /// Stopped at their deadline.
    #[serde(default)]
    pub timeout: u64,
}

impl BatchCounts {
    /// Counts one more run with `status`.
    pub fn add(&mut self, status: RunStatus) {
        let slot = match status {
            RunStatus::Pending => &mut self.pending,
            RunStatus::Running => &mut self.running,
            RunStatus::Success => &mut self.success,
            RunStatus::Error => &mut self.error,
            RunStatus::Interrupted => &mut self.interrupted,
            RunStatus::Timeout => &mut self.timeout,
        };
        *slot += 1;
    }
}

/// `GET /batches/{id}/runs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchRunsQuery {
    /// Runs skipped first (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// At most this many (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A page of a batch's results, in submission order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchRunsResponse {
    /// The page.
    pub runs: Vec<BatchRun>,
    /// Where the next page starts; null after the last.
    pub next_offset: Option<usize>,
}

/// One run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BatchRun {
    /// The run.
    pub run_id: String,
    /// Its thread.
    pub thread_id: String,
    /// Where it is.
    pub status: RunStatus,
    /// Its final answer.
    pub output: Option<String>,
    /// Why it failed.
    pub error: Option<BatchRunError>,
    /// Its token usage (subagents and summaries included), once started.
    pub usage: Option<Usage>,
    /// Its model calls and tokens by caller, as result lines and the
    /// metrics split them; once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_caller: Option<UsageByCaller>,
    /// What it cost in dollars, subagents and summaries included; once
    /// started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// Why a batch run failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BatchRunError {
    /// The stable code.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: String,
}
