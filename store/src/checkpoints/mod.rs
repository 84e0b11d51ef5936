//! Thread checkpoints: what a step loads (the whole thread, or just the
//! messages a follower has not seen) and the one atomic commit that
//! writes back everything the step produced.

mod made_by;

use std::collections::BTreeMap;

use async_trait::async_trait;
use deepfleet_proto::{ContextCursor, FileData, LoggedMessage, PendingTools, RunRecord};
use serde_json::{Map, Value};

use crate::error::StoreError;

pub use made_by::{CheckpointNotes, CheckpointSource, UpdateMark};

/// A thread as a step sees it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Checkpoint {
    /// Steps committed on this thread so far; the next step is this number.
    pub step: u64,
    /// The highest step whose follow-up messages are known to be published.
    pub published: u64,
    /// The conversation, oldest first: the thread's log from `log_base`
    /// on.
    pub messages: Vec<LoggedMessage>,
    /// Where the conversation starts in the thread's append-only log: the
    /// entries before it belong to branches an update left behind (see
    /// [`crate::history`]), kept for the history.
    pub log_base: u64,
    /// The state backend's files.
    pub files: BTreeMap<String, FileData>,
    /// Custom state fields (todos, agent-declared fields).
    pub state: Map<String, Value>,
    /// Tool calls the thread's parked run waits on.
    pub pending: Option<PendingTools>,
    /// Tokens of the conversation, kept as a running total by every
    /// append (and set anew by a branch), so sizing the context never
    /// sums over the log.
    pub tokens: u64,
    /// What context compression has done to the log.
    pub context: ContextCursor,
    /// The newest update outside a step, while no step has followed it.
    pub update: Option<UpdateMark>,
    /// The metadata clients attached to the current checkpoint, while no
    /// step or update has followed it.
    pub notes: Option<CheckpointNotes>,
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

/// The outcome of [`Checkpoints::commit_step`].
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
    /// The run's record is gone: its thread was deleted or expired (see
    /// [`crate::Retention`]). Nothing was written, so a step in flight
    /// cannot bring the thread back; its delivery is done.
    Gone,
}

/// Thread checkpoints.
///
/// Implementations must make [`Checkpoints::commit_step`] atomic (all of
/// it or none: log, files, state, pending calls, cursor, the run record
/// and the fan-in reset) and fenced by the thread's step, so a redelivered
/// step commits at most once; the log is append-only and its order is the
/// commit order. A commit of a run whose record does not exist (never
/// created, or deleted or expired since) writes nothing and answers
/// [`CommitOutcome::Gone`]. An unknown thread reads as an empty checkpoint.
#[async_trait]
pub trait Checkpoints: Send + Sync + 'static {
    /// Loads a thread's checkpoint (empty for an unknown thread).
    async fn load_thread(&self, thread_id: &str) -> Result<Checkpoint, StoreError>;

    /// The messages of a thread's conversation from index `from` on,
    /// without the rest of the checkpoint: what a follower of a step
    /// needs, O(new messages) rather than O(conversation).
    async fn load_messages(
        &self,
        thread_id: &str,
        from: u64,
    ) -> Result<Vec<LoggedMessage>, StoreError>;

    /// Commits one step atomically, if the thread is at `commit.step`.
    async fn commit_step(&self, commit: &StepCommit) -> Result<CommitOutcome, StoreError>;

    /// Records that the follow-ups of `step` were published, so a late
    /// redelivery of that step does not publish them again. Only ever
    /// raises the mark, and writes nothing on a thread that is gone.
    async fn mark_published(&self, thread_id: &str, step: u64) -> Result<(), StoreError>;

    /// Copies thread `from`'s checkpoint and history to the new thread
    /// `to` (`POST /threads/{id}/copy`): one consistent snapshot of
    /// `from`, written at once. The copy owns no run, so the original's
    /// parked tool calls and latest run stay behind. Writes nothing and
    /// answers `false` when `to` already has a checkpoint or history.
    async fn copy_thread(&self, from: &str, to: &str) -> Result<bool, StoreError>;
}

/// Tokens of appended messages, for the thread's running total (kept by
/// commits and by a run's seed alike).
pub(crate) fn log_tokens(messages: &[LoggedMessage]) -> u64 {
    messages.iter().map(|m| u64::from(m.tokens)).sum()
}
