//! Runs: one agent invocation on a thread, and its lifecycle record.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::caller_usage::{CallUsage, UsageByCaller};
use crate::concurrency::ConcurrencyLimit;
use crate::cost::Budget;
use crate::error::ErrorCode;
use crate::message::Usage;
use crate::sealed::SealedContext;
use crate::tenant::TenantId;

/// Which queue lane a run's steps take. Interactive runs (the HTTP API's,
/// queue submissions marked so) are served ahead of batch runs: their
/// steps go to the interactive lane, which workers take from first, so a
/// run someone waits on starts within about one step's time even while a
/// large batch runs. Subagents inherit their parent's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Task lines and API batches: the main lane.
    #[default]
    Batch,
    /// Someone waits for it: the interactive lane.
    Interactive,
}

impl Priority {
    /// Whether this is the default, batch (left out of records).
    pub fn is_batch(&self) -> bool {
        *self == Priority::Batch
    }
}
/// Seconds a run may take when nothing else says: a day, as the Agent
/// Server's `BG_JOB_TIMEOUT_SECS`.
pub const DEFAULT_RUN_TIMEOUT_SECS: u64 = 86_400;

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Accepted; its first step is queued.
    Pending,
    /// A step is queued or executing.
    Running,
    /// Parked until its subagent runs finish; holds no worker.
    Waiting,
    /// Parked until a human decides on its pending tool calls.
    // Stored and sent as `interrupted`, LangGraph's word for it; the Agent
    // Server's run status means a cancelled run by that word
    // (`api::RunStatus::Interrupted`), hence the distinct name in Rust.
    #[serde(rename = "interrupted")]
    AwaitingHuman,
    /// Finished with a final answer.
    Success,
    /// Finished with an error.
    Error,
    /// Stopped on request.
    Cancelled,
    /// Stopped at its deadline (`limits.run_timeout_secs`, the task
    /// line's or the request's `timeout_secs`).
    Timeout,
}

impl RunStatus {
    /// Whether the run will take no further steps.
    pub fn is_terminal(self) -> bool {
        match self {
            RunStatus::Success | RunStatus::Error | RunStatus::Cancelled | RunStatus::Timeout => {
                true
            }
            RunStatus::Pending
            | RunStatus::Running
            | RunStatus::Waiting
            | RunStatus::AwaitingHuman => false,
        }
    }
}

/// The link from a subagent run back to the `task` call that started it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ParentLink {
    /// The parent run.
    pub run_id: String,
    /// The parent's thread.
    pub thread_id: String,
    /// The parent's `task` tool call this run answers.
    pub tool_call_id: String,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunError {
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// Human-readable reason.
    pub message: String,
}

/// The durable record of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// Unique run id.
    pub run_id: String,
    /// The thread the run appends to.
    pub thread_id: String,
    /// Name of the agent spec (the top-level agent even for subagent runs).
    pub agent: String,
    /// The version of `agent`'s spec the run was started with
    /// ([`crate::spec_version`]); its subagents inherit it. Records from
    /// before versions load the spec served under the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_version: Option<String>,
    /// The subagent this run plays, for delegated runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
    /// The tenant the run belongs to, from the key that created it; its
    /// subagents inherit it, and its store namespace lies under it.
    #[serde(default, skip_serializing_if = "TenantId::is_default")]
    pub tenant: TenantId,
    /// Current status.
    pub status: RunStatus,
    /// Set for subagent runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentLink>,
    /// Nesting depth: 0 for a top-level run.
    #[serde(default)]
    pub depth: u32,
    /// The lane its steps take; subagents inherit it.
    #[serde(default, skip_serializing_if = "Priority::is_batch")]
    pub priority: Priority,
    /// The batch this run belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    /// The HTTP API batch (`POST /runs/batch`) this run belongs to, whose
    /// records (header, members) expire with its runs. Apart from
    /// `batch_id`: API batches are followed through their own records,
    /// not the done list task-line batches drain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_batch_id: Option<String>,
    /// The caller's id for the task (a batch line's `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Runtime context: per-run configuration visible to tools and
    /// subagents, sealed under the fleet's key (never stored in clear) and
    /// dropped when the run ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<SealedContext>,
    /// Runs this run may still start below it (subagents, their own
    /// subagents, background tasks), handed down from the top-level run's
    /// `limits.max_total_runs`; `None` for a top-level run that has not
    /// delegated yet (the spec's limit less itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_budget: Option<u32>,
    /// The run's own model calls so far (what `limits.max_steps` bounds).
    #[serde(default)]
    pub steps: u32,
    /// Tokens of the run's own model calls, its subagents' (once they
    /// reported) and the summaries compressing their contexts.
    #[serde(default)]
    pub usage: Usage,
    /// The calls and tokens of `steps` and `usage`, by caller.
    #[serde(default)]
    pub by_caller: UsageByCaller,
    /// What `usage` cost, in nano-dollars ([`crate::cost`]): the run's
    /// own calls, its summaries and its subagents' costs once they
    /// reported.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_nano_usd: u64,
    /// The part of `cost_nano_usd` the run's own calls and summaries
    /// cost: what it spent from its budgets' accounts itself.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub own_cost_nano_usd: u64,
    /// The budgets the run spends from (its batch's, its tenant's day);
    /// its subagents inherit them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<Budget>,
    /// The concurrency limits whose pools the run takes a slot of while
    /// in flight (its tenant's, its assistant's); empty for subagents,
    /// which work under their parent's slots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concurrency: Vec<ConcurrencyLimit>,
    /// Seconds the run may take from its first step on; `None` for a
    /// subagent, which lives within its parent's deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// When the run must have ended: set by its first step from
    /// `timeout_secs`, handed down to its subagents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DateTime<Utc>>,
    /// Seconds the run's keys live once it ends (its thread with the
    /// subagent threads under it, its streams, its batch's done list);
    /// `None` keeps them until deleted. Decided when the run is created,
    /// from its tenant's retention (or a stateless run's temporary
    /// thread), and applied by the worker that ends it; subagents inherit
    /// it. An interrupted run has not ended: it waits for its human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after_secs: Option<u64>,
    /// The final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Why the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// W3C trace context the run's spans are children of: the caller's
    /// `task` span for a subagent, then the run's own span once its first
    /// step ran. Kept here so every later step joins the same trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// When the run was accepted.
    pub created_at: DateTime<Utc>,
    /// When the record last changed.
    pub updated_at: DateTime<Utc>,
}

impl RunRecord {
    /// A `pending` top-level run of `agent` on `thread_id`, created `now`,
    /// with nothing done yet; set the other fields with struct update
    /// syntax.
    pub fn new(
        run_id: impl Into<String>,
        thread_id: impl Into<String>,
        agent: impl Into<String>,
        now: DateTime<Utc>,
    ) -> Self {
        RunRecord {
            run_id: run_id.into(),
            thread_id: thread_id.into(),
            agent: agent.into(),
            spec_version: None,
            subagent: None,
            tenant: TenantId::default(),
            status: RunStatus::Pending,
            parent: None,
            depth: 0,
            priority: Priority::Batch,
            batch_id: None,
            api_batch_id: None,
            task_id: None,
            context: None,
            run_budget: None,
            steps: 0,
            usage: Usage::default(),
            by_caller: UsageByCaller::default(),
            cost_nano_usd: 0,
            own_cost_nano_usd: 0,
            budgets: Vec::new(),
            concurrency: Vec::new(),
            timeout_secs: None,
            deadline: None,
            expire_after_secs: None,
            output: None,
            error: None,
            traceparent: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Counts one of the run's own model calls, which cost `cost`
    /// nano-dollars: `steps`, `usage`, `by_caller` and the costs move
    /// together, so no summary can count them apart.
    pub fn count_model_call(&mut self, usage: &Usage, cost: u64) {
        self.steps += 1;
        self.usage.add(usage);
        self.by_caller.main.add_call(usage);
        self.add_own_cost(cost);
    }

    /// Counts the summary calls that compressed the run's context, which
    /// cost `cost` nano-dollars.
    pub fn count_summaries(&mut self, summaries: &CallUsage, cost: u64) {
        self.usage.add(&summaries.tokens());
        self.by_caller.summarization.add(summaries);
        self.add_own_cost(cost);
    }

    /// Counts what a finished subagent used, as it reported it.
    pub fn count_child(&mut self, child: &ChildResult) {
        self.usage.add(&child.usage);
        self.by_caller.add_child(&child.by_caller);
        self.cost_nano_usd = self.cost_nano_usd.saturating_add(child.cost_nano_usd);
    }

    fn add_own_cost(&mut self, cost: u64) {
        self.own_cost_nano_usd = self.own_cost_nano_usd.saturating_add(cost);
        self.cost_nano_usd = self.cost_nano_usd.saturating_add(cost);
    }

    /// Starts the run's clock at its first step (`now`): its deadline is
    /// `timeout_secs` from now, or the one it was handed if that is
    /// sooner. A run whose clock runs keeps its deadline.
    pub fn start_clock(&mut self, now: DateTime<Utc>) {
        if self.steps > 0 {
            return;
        }
        let own = self
            .timeout_secs
            .and_then(|secs| i64::try_from(secs).ok())
            .and_then(chrono::TimeDelta::try_seconds)
            .and_then(|span| now.checked_add_signed(span));
        self.deadline = match (self.deadline, own) {
            (Some(handed), Some(own)) => Some(handed.min(own)),
            (handed, own) => handed.or(own),
        };
    }

    /// Whether the run is past its deadline at `now`.
    pub fn past_deadline(&self, now: DateTime<Utc>) -> bool {
        self.deadline.is_some_and(|deadline| now >= deadline)
    }
}

/// What a finished subagent run hands back to its parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChildResult {
    /// The parent's `task` call this answers.
    pub tool_call_id: String,
    /// `success` or `error`.
    pub status: RunStatus,
    /// The subagent's final text, or the reason it failed.
    pub output: String,
    /// Files the subagent changed in the shared state backend
    /// (`None` = deleted); merged into the parent in call order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, Option<crate::checkpoint::FileData>>,
    /// Tokens the subagent (and its own subagents) used.
    #[serde(default)]
    pub usage: Usage,
    /// The subagent's `usage` and model calls, by caller.
    #[serde(default)]
    pub by_caller: UsageByCaller,
    /// The part of the run budget the subagent was handed and did not
    /// use: it returns to the parent.
    #[serde(default)]
    pub runs_left: u32,
    /// What the subagent (and its own subagents) cost, in nano-dollars.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_nano_usd: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
