//! Changes to a thread made outside any run's step: `update_state`, a
//! run's `command.update`, a run started from an earlier checkpoint (a
//! fork) and a rollback. Each makes a checkpoint of its own, written at
//! once with its history entry and fenced by what it was read from.

use std::collections::BTreeMap;

use chrono::Utc;
use deepfleet_proto::{FileData, LoggedMessage};
use serde_json::{Map, Value};

use super::{Change, ChangeKind, Timeline};
use crate::checkpoints::{Checkpoint, CheckpointSource, UpdateMark, log_tokens};

/// What an update was read against: it is written only while the thread
/// is still at this step, with this base and log length, so a step or a
/// run's seed in between makes it a conflict rather than lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The thread's step.
    pub step: u64,
    /// Where its conversation starts in the log.
    pub base: u64,
    /// The log's length, every branch included.
    pub log_len: u64,
}

impl Fence {
    /// The fence of a loaded checkpoint.
    pub fn of(checkpoint: &Checkpoint) -> Self {
        Self {
            step: checkpoint.step,
            base: checkpoint.log_base,
            log_len: checkpoint.log_base + checkpoint.messages.len() as u64,
        }
    }
}

/// What an update does to the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Conversation {
    /// Adds these messages after the thread's.
    Append(Vec<LoggedMessage>),
    /// Makes these the whole conversation: a new branch, written at the
    /// log's end, where the thread's conversation then starts.
    Branch(Vec<LoggedMessage>),
}

/// A state to go back to: a checkpoint (a fork), or the thread before a
/// run (a rollback).
#[derive(Debug, Clone, PartialEq)]
pub struct Restore {
    /// The checkpoint the new one follows (none: the empty thread).
    pub parent: Option<u64>,
    /// The thread then.
    pub checkpoint: Checkpoint,
}

/// One change to a thread outside any step.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadUpdate {
    /// The thread.
    pub thread_id: String,
    /// The run it is part of (its `command.update`, or the fork it
    /// starts from), so a rollback of the run undoes it too; empty for
    /// `update_state`.
    pub run_id: String,
    /// What it was read against.
    pub fence: Fence,
    /// The conversation's change.
    pub conversation: Conversation,
    /// The thread's files after it, all of them.
    pub files: BTreeMap<String, FileData>,
    /// The thread's custom state after it, all of it.
    pub state: Map<String, Value>,
    /// The checkpoint it follows.
    pub parent: Option<u64>,
    /// What makes it.
    pub source: CheckpointSource,
    /// Drops the tool calls a parked run waits on: a fork or rollback
    /// leaves that run behind.
    pub clear_pending: bool,
}

impl ThreadUpdate {
    /// An update of the thread as `current` holds it, that changes
    /// nothing yet.
    pub fn of(thread_id: &str, current: &Checkpoint) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            run_id: String::new(),
            fence: Fence::of(current),
            conversation: Conversation::Append(Vec::new()),
            files: current.files.clone(),
            state: current.state.clone(),
            parent: (current.step > 0).then_some(current.step),
            source: CheckpointSource::Update,
            clear_pending: false,
        }
    }

    /// An update that returns the thread read as `timeline` to `to`.
    pub fn restoring(
        thread_id: &str,
        timeline: &Timeline,
        to: Restore,
        source: CheckpointSource,
    ) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            run_id: String::new(),
            fence: timeline.fence(),
            conversation: Conversation::Branch(to.checkpoint.messages),
            files: to.checkpoint.files,
            state: to.checkpoint.state,
            parent: to.parent,
            source,
            clear_pending: true,
        }
    }

    /// The checkpoint it makes.
    pub fn checkpoint(&self) -> u64 {
        self.fence.step.saturating_add(1)
    }

    /// The messages it writes to the log.
    pub(crate) fn messages(&self) -> &[LoggedMessage] {
        match &self.conversation {
            Conversation::Append(messages) | Conversation::Branch(messages) => messages,
        }
    }

    /// Where the conversation starts after it, when it starts a branch.
    pub(crate) fn new_base(&self) -> Option<u64> {
        matches!(self.conversation, Conversation::Branch(_)).then_some(self.fence.log_len)
    }

    /// Tokens of the messages it writes.
    pub(crate) fn tokens(&self) -> u64 {
        log_tokens(self.messages())
    }

    /// Its history entry.
    pub(crate) fn change(&self) -> Change {
        Change {
            kind: ChangeKind::Update {
                step: self.fence.step,
                parent: self.parent,
                source: self.source,
            },
            run_id: self.run_id.clone(),
            at: Utc::now(),
            state: Some(self.state.clone()),
            files: self
                .files
                .iter()
                .map(|(path, file)| (path.clone(), Some(file.clone())))
                .collect(),
            base: self.new_base(),
            metadata: None,
        }
    }

    /// What the thread keeps of it until its next step.
    pub(crate) fn mark(&self) -> UpdateMark {
        UpdateMark {
            checkpoint: self.checkpoint(),
            parent: self.parent,
            source: self.source,
        }
    }
}

/// The outcome of [`super::History::update_thread`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Written: the thread is at the update's checkpoint.
    Updated {
        /// The checkpoint it made.
        checkpoint: u64,
    },
    /// The thread moved since the update was read; nothing was written.
    Conflict,
}
