//! Durable state of the fleet: thread checkpoints, run records, subagent
//! fan-in, cancel flags, specs and batch progress.
//!
//! A worker holds nothing between messages; everything a step needs is
//! loaded from a [`Store`] and everything it produced is written back by one
//! atomic [`Store::commit_step`], fenced by a compare-and-set on the step
//! number. Messages are append-only, so bytes written per step are
//! proportional to what the step added, never to the conversation.
//!
//! Two implementations: [`embedded::EmbeddedStore`] (in process) and
//! [`redis::RedisStore`] (a single Redis or a Redis Cluster).
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod embedded;
mod error;
mod items;
pub mod redis;
mod run_events;
pub mod sealed;
mod snapshot;

use std::collections::BTreeMap;

use async_trait::async_trait;
use deepfleet_proto::{
    AgentSpec, ChildResult, ContextCursor, FileData, Item, ItemSearch, LoggedMessage,
    NamespaceQuery, ParentLink, PendingTools, RunDelta, RunEvent, RunRecord,
};
use serde_json::{Map, Value};

pub use error::StoreError;

/// Most events a run's stream keeps (one per step of the run and its
/// subagents).
pub const RUN_EVENTS_MAX: usize = 10_000;

/// How long a run's event stream outlives its last append.
pub const RUN_EVENTS_TTL_SECS: u64 = 24 * 3600;

/// Most token deltas a run's delta stream keeps: a long answer streamed
/// in 50 ms windows fits many times over; older ones are of no use to a
/// follower, which gets the committed message anyway.
pub const RUN_DELTAS_MAX: usize = 2_000;

/// How long a run's delta stream outlives its last append: long enough
/// for a follower to catch up, short enough that deltas never pile up.
pub const RUN_DELTAS_TTL_SECS: u64 = 600;

/// A thread as a step sees it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    /// Steps committed on this thread so far; the next step is this number.
    pub step: u64,
    /// The highest step whose follow-up messages are known to be published.
    pub published: u64,
    /// The whole message log, oldest first.
    pub messages: Vec<LoggedMessage>,
    /// The state backend's files.
    pub files: BTreeMap<String, FileData>,
    /// Custom state fields (todos, agent-declared fields).
    pub state: Map<String, Value>,
    /// Tool calls the thread's parked run waits on.
    pub pending: Option<PendingTools>,
    /// Tokens of the whole log, kept as a running total by every append,
    /// so sizing the context never sums over the log.
    pub tokens: u64,
    /// What context compression has done to the log.
    pub context: ContextCursor,
}

/// What a new run brings to its thread.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadSeed {
    /// Messages appended to the thread (the run's input).
    pub messages: Vec<LoggedMessage>,
    /// Files written into the state backend.
    pub files: BTreeMap<String, FileData>,
    /// Custom state fields set on the thread.
    pub state: Map<String, Value>,
}

/// Everything one step writes, applied atomically.
#[derive(Debug, Clone, PartialEq)]
pub struct StepCommit {
    /// The thread.
    pub thread_id: String,
    /// The step being committed; the commit succeeds only if the thread is
    /// exactly at this step, and moves it to `step + 1`.
    pub step: u64,
    /// Messages appended to the log.
    pub messages: Vec<LoggedMessage>,
    /// File writes (`None` deletes the path).
    pub files: BTreeMap<String, Option<FileData>>,
    /// The custom state after the step, when it changed.
    pub state: Option<Map<String, Value>>,
    /// What the thread's run waits on after the step (`None` clears it).
    pub pending: Option<PendingTools>,
    /// The run record after the step.
    pub run: RunRecord,
    /// When the step parks the run on subagents: how many results to wait
    /// for. Resets the run's fan-in.
    pub fan_in_expected: Option<u32>,
    /// The thread's compression cursor after the step, when it changed.
    pub context: Option<ContextCursor>,
}

/// The outcome of [`Store::commit_step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Written; the thread is now at `step + 1`.
    Committed,
    /// The thread was not at the expected step (another delivery committed
    /// it); nothing was written.
    Conflict {
        /// The thread's actual step.
        current: u64,
    },
}

/// The fleet's durable state.
///
/// Implementations must make [`Store::commit_step`] atomic (all of it or
/// none) and fenced, [`Store::create_run`] and
/// [`Store::record_child_result`] idempotent, and keep every key of one
/// thread together so the commit can be one operation.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Saves an agent spec under its name, replacing an older one.
    async fn put_spec(&self, spec: &AgentSpec) -> Result<(), StoreError>;

    /// Loads an agent spec by name.
    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError>;

    /// Creates `run` and applies `seed` to its thread. Returns the thread's
    /// step at which the run starts, or `None` if the run already existed
    /// (nothing is written then: creation is idempotent).
    async fn create_run(
        &self,
        run: &RunRecord,
        seed: &ThreadSeed,
    ) -> Result<Option<u64>, StoreError>;

    /// Loads a run record.
    async fn get_run(&self, thread_id: &str, run_id: &str)
    -> Result<Option<RunRecord>, StoreError>;

    /// Loads a run record by id alone.
    async fn find_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// Loads a thread's checkpoint (empty for an unknown thread).
    async fn load_thread(&self, thread_id: &str) -> Result<Checkpoint, StoreError>;

    /// The messages of a thread's log from index `from` on, without the
    /// rest of the checkpoint: what a follower of a step needs, O(new
    /// messages) rather than O(conversation).
    async fn load_messages(
        &self,
        thread_id: &str,
        from: u64,
    ) -> Result<Vec<LoggedMessage>, StoreError>;

    /// Appends `event` to `run_id`'s event stream. Streams are capped
    /// (oldest events dropped past [`RUN_EVENTS_MAX`]) and expire
    /// [`RUN_EVENTS_TTL_SECS`] after the last append; followers that miss
    /// events recover from the checkpoint.
    async fn append_run_event(&self, run_id: &str, event: &RunEvent) -> Result<(), StoreError>;

    /// Up to `max` events of `run_id`'s stream after the one with id
    /// `after` (from the start when `None`), oldest first, with their ids.
    /// Ids are opaque, increasing strings without `/` or `:`.
    async fn run_events(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunEvent)>, StoreError>;

    /// Appends streamed tokens to `run_id`'s delta stream, kept apart from
    /// its event stream: capped at [`RUN_DELTAS_MAX`], expiring
    /// [`RUN_DELTAS_TTL_SECS`] after the last append.
    async fn append_run_delta(&self, run_id: &str, delta: &RunDelta) -> Result<(), StoreError>;

    /// Up to `max` deltas of `run_id` after the one with id `after` (from
    /// the start when `None`), oldest first, with their ids (opaque,
    /// increasing, without `/` or `:`).
    async fn run_deltas(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunDelta)>, StoreError>;

    /// Commits one step atomically, if the thread is at `commit.step`.
    async fn commit_step(&self, commit: &StepCommit) -> Result<CommitOutcome, StoreError>;

    /// Records that the follow-ups of `step` were published, so a late
    /// redelivery of that step does not publish them again.
    async fn mark_published(&self, thread_id: &str, step: u64) -> Result<(), StoreError>;

    /// Records a subagent's result for its parent, once per `task` call
    /// (repeats are ignored). Returns how many results the parent still
    /// waits for.
    async fn record_child_result(
        &self,
        parent: &ParentLink,
        result: &ChildResult,
    ) -> Result<u32, StoreError>;

    /// The child results recorded for a parked run, in no particular order.
    async fn child_results(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Vec<ChildResult>, StoreError>;

    /// Asks a run to stop at its next step boundary.
    async fn request_cancel(&self, thread_id: &str, run_id: &str) -> Result<(), StoreError>;

    /// Whether a run was asked to stop.
    async fn cancel_requested(&self, thread_id: &str, run_id: &str) -> Result<bool, StoreError>;

    /// Appends a finished top-level run to its batch's done list.
    async fn push_batch_done(&self, batch_id: &str, run_id: &str) -> Result<(), StoreError>;

    /// Removes and returns up to `max` run ids from a batch's done list.
    async fn pop_batch_done(&self, batch_id: &str, max: usize) -> Result<Vec<String>, StoreError>;

    /// Saves a small JSON record (an API thread, assistant or run's
    /// metadata) under `kind` and `id`, replacing an older one. Records are
    /// what the HTTP API keeps beside the step protocol's own state.
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError>;

    /// Saves a record only if none exists under `kind` and `id`; returns
    /// whether it was written (create-if-absent without a race).
    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError>;

    /// Loads a record.
    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError>;

    /// Deletes a record; returns whether it existed.
    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError>;

    /// Every record of `kind`, in no particular order.
    async fn list_records(&self, kind: &str) -> Result<Vec<Value>, StoreError>;

    /// Puts a long-term item (the Agent Server store shape): creates it or
    /// replaces its value, keeping `created_at` and stamping `updated_at`.
    /// A bad namespace or key is [`StoreError::Invalid`]; nothing is written.
    async fn put_item(
        &self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
    ) -> Result<(), StoreError>;

    /// Loads a long-term item.
    async fn get_item(&self, namespace: &[String], key: &str) -> Result<Option<Item>, StoreError>;

    /// Deletes a long-term item; deleting a missing one is not an error.
    async fn delete_item(&self, namespace: &[String], key: &str) -> Result<(), StoreError>;

    /// Items under a namespace prefix whose values match the filter,
    /// ordered by namespace (label by label) then key, paged by offset and
    /// limit.
    async fn search_items(&self, search: &ItemSearch) -> Result<Vec<Item>, StoreError>;

    /// Namespaces holding items, matched, cut and paged as `query` asks.
    async fn list_namespaces(&self, query: &NamespaceQuery)
    -> Result<Vec<Vec<String>>, StoreError>;
}
