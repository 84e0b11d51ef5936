//! Threads: the Thread resource, its state and the bodies that create and
//! search them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::search::{PageLimit, SortOrder, ThreadSortBy};
use super::thread_ttl::{ThreadTtl, present, ttl_sent_schema};
use crate::hitl::Interrupt;

/// `POST /threads`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadCreateParams {
    /// Its id; a new UUID when absent.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Caller metadata (searchable).
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// `do_nothing` answers the existing thread; anything else (the
    /// default, `raise`) answers 409 on a duplicate id.
    #[serde(default)]
    pub if_exists: Option<String>,
    /// Deletes the thread once this long has passed since it was last
    /// updated; null or absent: kept until deleted.
    #[serde(default)]
    #[schemars(schema_with = "ttl_sent_schema")]
    pub ttl: Option<ThreadTtl>,
    /// State a new thread starts with: each superstep's updates become
    /// one checkpoint, as `update_state` would write them.
    #[serde(default)]
    pub supersteps: Option<Vec<ThreadSuperstep>>,
}

/// One superstep of [`ThreadCreateParams::supersteps`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadSuperstep {
    /// Its updates, applied in order.
    pub updates: Vec<ThreadSuperstepUpdate>,
}

/// One update of a [`ThreadSuperstep`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadSuperstepUpdate {
    /// The values, as `update_state` takes them.
    #[serde(default)]
    pub values: Option<Value>,
    /// A command: only its `update` (more values) applies to a new thread.
    #[serde(default)]
    pub command: Option<crate::api::RunCommand>,
    /// The node it is written as (one of the agent loop's).
    pub as_node: String,
}

/// `POST /threads/search`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadSearchParams {
    /// Only threads whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Only threads whose current values have these top-level
    /// key/values (a thread with no state has none).
    #[serde(default)]
    pub values: Option<Map<String, Value>>,
    /// Only threads with this status.
    #[serde(default)]
    pub status: Option<String>,
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Only these fields of each (all when absent).
    #[serde(default)]
    pub select: Option<Vec<String>>,
    /// Only these threads.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Sort by this field (newest created first when neither sort field
    /// is set).
    #[serde(default)]
    pub sort_by: Option<ThreadSortBy>,
    /// `asc` or `desc` (the default).
    #[serde(default)]
    pub sort_order: Option<SortOrder>,
    /// Refused when set: values are read whole or narrowed by `select`.
    #[serde(default)]
    pub extract: Option<Value>,
}

/// `PATCH /threads/{thread_id}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadPatchParams {
    /// Merged into the thread's metadata: each key set, the others kept.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Replaces the thread's time to live; null removes it, absence keeps
    /// it.
    // Outer `None`: absent; `Some(None)`: null.
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "ttl_sent_schema")]
    pub ttl: Option<Option<ThreadTtl>>,
}

/// `POST /threads/count`: the filters of [`ThreadSearchParams`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadCountParams {
    /// Only threads whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Only threads whose current values have these top-level
    /// key/values (a thread with no state has none).
    #[serde(default)]
    pub values: Option<Map<String, Value>>,
    /// Only threads with this status.
    #[serde(default)]
    pub status: Option<String>,
}

/// `POST /threads/prune`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadPruneParams {
    /// The threads to prune; ids the caller has no thread of are skipped.
    pub thread_ids: Vec<String>,
    /// What pruning a thread does.
    #[serde(default)]
    pub strategy: PruneStrategy,
}

/// What `POST /threads/prune` does to each thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PruneStrategy {
    /// Deletes the thread with its runs, as `DELETE /threads/{id}`.
    #[default]
    Delete,
    /// Keeps the thread and its current state; drops every checkpoint
    /// but the newest.
    KeepLatest,
}

/// The answer of `POST /threads/prune`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadPruneResponse {
    /// Threads deleted, or whose older checkpoints were dropped.
    pub pruned_count: u64,
}

/// Where a thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// No run in flight or queued.
    Idle,
    /// A run in flight or queued.
    Busy,
    /// The last run waits for a human decision.
    Interrupted,
    /// The last run failed.
    Error,
}

impl ThreadStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Busy => "busy",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::Error => "error",
        }
    }
}

/// One pending interrupt: `{"value": {action_requests, review_configs},
/// "id": run_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingInterrupt {
    /// What the human is asked.
    pub value: Interrupt,
    /// The interrupted run.
    pub id: String,
}

/// The Thread resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Thread {
    /// The thread.
    pub thread_id: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When a run last started or the record changed.
    pub updated_at: DateTime<Utc>,
    /// Caller metadata.
    pub metadata: Map<String, Value>,
    /// Where it is.
    pub status: ThreadStatus,
    /// Its state (`messages`, `files`, `todos`, custom fields); null
    /// before anything was written.
    pub values: Option<Value>,
    /// Pending interrupts by run id, while `interrupted`.
    pub interrupts: BTreeMap<String, Vec<PendingInterrupt>>,
    /// Its time to live, always in the object form; absent when it has
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<ThreadTtl>,
}

/// A checkpoint's address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointRef {
    /// The thread.
    pub thread_id: String,
    /// Always empty: the root graph.
    pub checkpoint_ns: String,
    /// The thread's step count right after the step that made it.
    pub checkpoint_id: String,
    /// Always null.
    pub checkpoint_map: Option<Map<String, Value>>,
}

/// A checkpoint's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StateMetadata {
    /// What made it: always `loop`, a step of the agent loop.
    pub source: String,
    /// Steps committed on the thread.
    pub step: u64,
    /// The run whose step made it; absent on a thread's current state,
    /// which may also hold a newer run's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Metadata clients attached to the checkpoint (`PATCH
    /// /threads/{id}/state`), beside the keys above.
    #[serde(flatten)]
    pub notes: Map<String, Value>,
}

/// The keys of a checkpoint's metadata that say what made it: clients'
/// notes cannot set them.
pub const MADE_BY_KEYS: [&str; 3] = ["source", "step", "run_id"];

/// `PATCH /threads/{id}/state`: metadata merged into the current
/// checkpoint's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadStatePatch {
    /// The keys to set (a later patch's value for a key wins).
    pub metadata: Map<String, Value>,
}

/// Where a request points in a thread's history: a checkpoint id, or a
/// checkpoint's address (as the SDKs send a ThreadState's `checkpoint`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CheckpointPointer {
    /// A checkpoint id.
    Id(String),
    /// A checkpoint's address; only its id is read.
    Address {
        /// The checkpoint id (none points nowhere: the latest).
        #[serde(default)]
        checkpoint_id: Option<String>,
    },
}

impl CheckpointPointer {
    /// The checkpoint id pointed at, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            CheckpointPointer::Id(id) => Some(id),
            CheckpointPointer::Address { checkpoint_id } => checkpoint_id.as_deref(),
        }
    }
}

/// `POST /threads/{id}/history` (`GET` takes `limit` and `before` as
/// query parameters).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadHistoryParams {
    /// At most this many checkpoints (default 10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only checkpoints older than this one.
    #[serde(default)]
    pub before: Option<CheckpointPointer>,
    /// Only checkpoints whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Only this checkpoint and older ones.
    #[serde(default)]
    pub checkpoint: Option<CheckpointPointer>,
    /// Only these fields of each state (`values.<key>`: only that key of
    /// its values).
    #[serde(default)]
    pub select: Option<Vec<String>>,
}

/// `POST /threads/{id}/state/checkpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadStateCheckpointParams {
    /// The checkpoint.
    pub checkpoint: CheckpointPointer,
    /// Accepted and ignored: a thread has no subgraphs.
    #[serde(default)]
    pub subgraphs: Option<bool>,
    /// Only these fields of the state (`values.<key>`: only that key of
    /// its values).
    #[serde(default)]
    pub select: Option<Vec<String>>,
}

/// `POST /threads/{id}/state` (`update_state`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadStateUpdate {
    /// The values to write: `messages` (added, or by id replaced or
    /// removed), `files` (null deletes one), any other key set.
    #[serde(default)]
    pub values: Option<Value>,
    /// The node the update is made as: one of the agent loop's (see the
    /// assistant's graph); the next run goes on from the model's turn
    /// whichever it is.
    #[serde(default)]
    pub as_node: Option<String>,
    /// The checkpoint to update from (a fork); the latest when absent.
    #[serde(default)]
    pub checkpoint: Option<CheckpointPointer>,
    /// The same, by id alone.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
}

/// The answer to `update_state`: the checkpoint it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadStateUpdateResponse {
    /// The new checkpoint's address.
    pub checkpoint: CheckpointRef,
}

/// The ThreadState resource (`/state`, and each entry of `/history`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThreadState {
    /// The thread's state.
    pub values: Value,
    /// Nodes to run next: `["tools"]` at the checkpoint a run waits for
    /// a human at, else empty.
    pub next: Vec<String>,
    /// This checkpoint.
    pub checkpoint: CheckpointRef,
    /// Its metadata.
    pub metadata: StateMetadata,
    /// When the checkpoint was made (the thread's last change for its
    /// current state).
    pub created_at: DateTime<Utc>,
    /// The checkpoint before this one; null for the first.
    pub parent_checkpoint: Option<CheckpointRef>,
    /// At the checkpoint a run waits for a human at, the waiting `tools`
    /// task holding its interrupts; else empty.
    pub tasks: Vec<Value>,
    /// At the checkpoint a run waits for a human at, its interrupts
    /// (`{value, id}`); else empty.
    pub interrupts: Vec<Value>,
}
