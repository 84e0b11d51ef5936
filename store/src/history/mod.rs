//! Thread history: a checkpoint per committed step, and the thread's
//! state at any of them.
//!
//! A checkpoint is what the thread was right after one step committed;
//! its id is the thread's step then (checkpoint `n` follows the commit of
//! step `n - 1`; `1` is the first), its parent the checkpoint before it.
//! Nothing is copied to make one: each change to the thread (a step's
//! commit, or a run's seed between two steps) appends one [`Change`] to
//! the thread's history, in the same atomic write as the change itself,
//! holding only what that change wrote (the files it wrote or deleted,
//! the custom state when it changed, the run and the time) plus the
//! length of the message log after it. Bytes written per step therefore
//! grow with what the step changed, never with the conversation.
//!
//! The state at checkpoint `n` is rebuilt by replaying the history up to
//! its commit: the messages are the first `log_len` entries of the
//! append-only log (a prefix, so never stored twice), the files and the
//! custom state the changes applied in order.
//!
//! A change made outside any step ([`ThreadUpdate`]: `update_state`, a
//! run from an earlier checkpoint, a rollback) makes a checkpoint too.
//! When it rewrites the conversation rather than adding to it, it starts
//! a branch: the new conversation is appended to the log's end and the
//! thread's conversation starts there from then on (its *base*), so the
//! log stays append-only and every older checkpoint reads as it did.
//!
//! A client's note on a checkpoint (its metadata, patched) is a history
//! entry too, which changes nothing of the thread: the checkpoint it
//! names shows every note on it, merged. The thread keeps the current
//! checkpoint's notes beside it, so its state reads them without a
//! replay.
//!
//! The history lives and dies with the thread's checkpoint
//! ([`crate::Retention`] expires and deletes it with the rest).

mod replay;
mod update;

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deepfleet_proto::{FileData, LoggedMessage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::checkpoints::{Checkpoint, CheckpointNotes, CheckpointSource, StepCommit};
use crate::error::StoreError;
use crate::runs::ThreadSeed;

pub(crate) use replay::keep_latest;
pub use update::{Conversation, Fence, Restore, ThreadUpdate, UpdateOutcome};

/// What made a [`Change`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The commit of a step: it makes a checkpoint, and its state
    /// replaces the thread's.
    Commit {
        /// The step committed.
        step: u64,
    },
    /// A run's seed (its input) between two steps: its state fields are
    /// set on top of the thread's. Its writer does not know the thread's
    /// step, and replay needs only its place in the history.
    Seed,
    /// A [`ThreadUpdate`]: it makes a checkpoint, and its files and state
    /// are the thread's whole files and state then.
    Update {
        /// The thread's step it was made at (its checkpoint is the next).
        step: u64,
        /// The checkpoint it follows: the one it was made on, or the one
        /// a fork or rollback went back to (none: an empty thread).
        parent: Option<u64>,
        /// What made it.
        source: CheckpointSource,
    },
    /// Metadata a client attached to a checkpoint ([`History::note_checkpoint`]):
    /// it changes nothing of the thread, and the checkpoint it names shows
    /// it (merged over earlier notes) in its metadata.
    Note {
        /// The checkpoint it is about.
        checkpoint: u64,
    },
}

/// One change to a thread, as its history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// What made it.
    pub kind: ChangeKind,
    /// The run that made it.
    pub run_id: String,
    /// When it was made.
    pub at: DateTime<Utc>,
    /// The custom state it wrote, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Map<String, Value>>,
    /// The files it wrote (`None` deleted the path).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, Option<FileData>>,
    /// Where the thread's conversation starts in the log from this change
    /// on, when the change started a branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<u64>,
    /// A note's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Change {
    /// The change a step's commit makes.
    pub(crate) fn of_commit(commit: &StepCommit) -> Self {
        Self {
            kind: ChangeKind::Commit { step: commit.step },
            run_id: commit.run.run_id.clone(),
            at: Utc::now(),
            state: commit.state.clone(),
            files: commit.files.clone(),
            base: None,
            metadata: None,
        }
    }

    /// The change a run's seed makes, or `None` when it adds nothing. A
    /// seed of messages only is told too: a rollback finds where the run
    /// began by its first change.
    pub(crate) fn of_seed(run_id: &str, seed: &ThreadSeed) -> Option<Self> {
        let empty = seed.messages.is_empty() && seed.files.is_empty() && seed.state.is_empty();
        (!empty).then(|| Self {
            kind: ChangeKind::Seed,
            run_id: run_id.to_owned(),
            at: Utc::now(),
            state: (!seed.state.is_empty()).then(|| seed.state.clone()),
            files: seed
                .files
                .iter()
                .map(|(path, file)| (path.clone(), Some(file.clone())))
                .collect(),
            base: None,
            metadata: None,
        })
    }

    /// The change a note on `checkpoint` makes.
    pub(crate) fn of_note(checkpoint: u64, metadata: &Map<String, Value>) -> Self {
        Self {
            kind: ChangeKind::Note { checkpoint },
            run_id: String::new(),
            at: Utc::now(),
            state: None,
            files: BTreeMap::new(),
            base: None,
            metadata: Some(metadata.clone()),
        }
    }
}

/// A [`Change`] with the length of the message log right after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Logged {
    /// Messages in the log after the change.
    pub log_len: u64,
    /// The change.
    pub change: Change,
}

/// The thread at one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointState {
    /// The checkpoint's id: the thread's step right after its commit.
    pub id: u64,
    /// The run whose step made it (empty for an update outside runs).
    pub run_id: String,
    /// The checkpoint before it on its branch.
    pub parent: Option<u64>,
    /// What made it.
    pub source: CheckpointSource,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// The thread as it was then (its step is `id`; nothing pending or
    /// published is kept).
    pub checkpoint: Checkpoint,
}

/// Which checkpoints [`History::checkpoints`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Only those with an id below this one (all when `None`).
    pub before: Option<u64>,
    /// At most this many, the newest.
    pub limit: usize,
    /// Only this checkpoint.
    pub id: Option<u64>,
    /// Only those made by this run.
    pub run_id: Option<String>,
    /// Only those made so.
    pub source: Option<CheckpointSource>,
}

impl HistoryQuery {
    /// The newest `limit` checkpoints.
    pub fn newest(limit: usize) -> Self {
        Self {
            before: None,
            limit,
            id: None,
            run_id: None,
            source: None,
        }
    }

    fn wants(&self, id: u64, run_id: &str, source: CheckpointSource) -> bool {
        self.before.is_none_or(|b| id < b)
            && self.id.is_none_or(|want| id == want)
            && self.run_id.as_deref().is_none_or(|want| want == run_id)
            && self.source.is_none_or(|want| want == source)
    }
}

/// A thread's whole history, read at once with its log and the step and
/// base it was read at: what checkpoints are replayed from, and what an
/// update that goes back in time is built from (and fenced by).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// The thread's step.
    pub step: u64,
    /// Where its conversation starts in `log`.
    pub base: u64,
    /// The whole append-only log, every branch's messages.
    pub log: Vec<LoggedMessage>,
    /// Its changes, oldest first.
    pub history: Vec<Logged>,
}

impl Timeline {
    /// The checkpoints `query` asks for, newest first.
    pub fn checkpoints(&self, query: &HistoryQuery) -> Vec<CheckpointState> {
        replay::replay(&self.log, &self.history, query)
    }

    /// The thread at checkpoint `id`, to go back to.
    pub fn restore_checkpoint(&self, id: u64) -> Option<Restore> {
        let query = HistoryQuery {
            id: Some(id),
            ..HistoryQuery::newest(1)
        };
        let found = self.checkpoints(&query).pop()?;
        Some(Restore {
            parent: Some(found.id),
            checkpoint: found.checkpoint,
        })
    }

    /// The thread right before run `run_id` first changed it, to go back
    /// to; `None` when the run changed nothing, or when a change of
    /// anything else came after its first (a rollback undoes the run, not
    /// what followed it).
    pub fn restore_before_run(&self, run_id: &str) -> Option<Restore> {
        replay::before_run(&self.log, &self.history, run_id)
    }

    /// What an update read from this timeline is fenced by.
    pub fn fence(&self) -> Fence {
        Fence {
            step: self.step,
            base: self.base,
            log_len: self.log.len() as u64,
        }
    }
}

/// Thread history.
///
/// Implementations must append a thread's history entry in the same
/// atomic write as the change it tells ([`crate::Checkpoints::commit_step`],
/// [`crate::Runs::create_run`], [`History::update_thread`]), so the
/// history never misses or invents a checkpoint, and expire and delete it
/// with the thread.
#[async_trait]
pub trait History: Send + Sync + 'static {
    /// The thread's step, base, log and history, read at once (empty for
    /// an unknown thread).
    async fn timeline(&self, thread_id: &str) -> Result<Timeline, StoreError>;

    /// The thread's checkpoints that `query` asks for, newest first.
    /// Empty for an unknown thread.
    async fn checkpoints(
        &self,
        thread_id: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<CheckpointState>, StoreError> {
        Ok(self.timeline(thread_id).await?.checkpoints(query))
    }

    /// The thread at checkpoint `id`, or `None` when it has none such.
    async fn checkpoint_at(
        &self,
        thread_id: &str,
        id: u64,
    ) -> Result<Option<CheckpointState>, StoreError> {
        let query = HistoryQuery {
            id: Some(id),
            ..HistoryQuery::newest(1)
        };
        Ok(self.checkpoints(thread_id, &query).await?.pop())
    }

    /// Drops every checkpoint but the newest (`POST /threads/prune` with
    /// `keep_latest`): the changes up to its commit become one change
    /// that writes the whole state then, so the current state and the
    /// newest checkpoint read as before and the log stays whole. Written
    /// at once, and only over the history it read (a commit meanwhile
    /// makes it write nothing). Answers whether anything was dropped.
    async fn keep_latest_checkpoint(&self, thread_id: &str) -> Result<bool, StoreError>;

    /// Writes `update` as the thread's next checkpoint, in one atomic
    /// write with its history entry, if the thread is still as its fence
    /// says (same step, base and log length); otherwise writes nothing
    /// and answers [`UpdateOutcome::Conflict`].
    async fn update_thread(&self, update: &ThreadUpdate) -> Result<UpdateOutcome, StoreError>;

    /// Merges `metadata` into the notes of the checkpoint the thread is at
    /// (its step), beside the thread and as a history entry, in one
    /// atomic write; answers the notes after, or `None` when the thread
    /// has no checkpoint (unknown, or nothing committed yet).
    async fn note_checkpoint(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<Option<CheckpointNotes>, StoreError>;
}
