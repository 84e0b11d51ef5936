//! What made a checkpoint: a run's step, or an update outside any step
//! (see [`crate::history`]), and the mark the thread keeps of the newest
//! update so its current state can say so.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What made a checkpoint, as its metadata's `source` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointSource {
    /// A step of a run.
    Loop,
    /// `update_state`, or a run's `command.update`.
    Update,
    /// A run started from an earlier checkpoint.
    Fork,
    /// A rollback to the state before a run.
    Rollback,
}

impl CheckpointSource {
    /// The name the API's checkpoint metadata gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loop => "loop",
            Self::Update => "update",
            Self::Fork => "fork",
            Self::Rollback => "rollback",
        }
    }
}

/// The newest update's checkpoint, parent and source, as the thread
/// keeps them: while no step has followed it, the thread's current
/// state is that checkpoint, and names its parent and source from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UpdateMark {
    /// The checkpoint the update made.
    pub checkpoint: u64,
    /// The checkpoint it follows.
    pub parent: Option<u64>,
    /// What made it.
    pub source: CheckpointSource,
}

/// Metadata a client attached to the checkpoint the thread is at
/// (`PATCH /threads/{id}/state`), kept beside the thread while that
/// checkpoint is its current state; the history keeps each patch for
/// good (see [`crate::history`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointNotes {
    /// The checkpoint they are about.
    pub checkpoint: u64,
    /// The metadata, every patch merged (later keys win).
    pub metadata: Map<String, Value>,
}

impl CheckpointNotes {
    /// The notes of checkpoint `checkpoint` after `patch`: `current` when
    /// it is about that checkpoint (a step since leaves older notes to
    /// the history), with the patch's keys set over it.
    pub(crate) fn patched(
        current: Option<CheckpointNotes>,
        checkpoint: u64,
        patch: &Map<String, Value>,
    ) -> CheckpointNotes {
        let mut notes = current
            .filter(|n| n.checkpoint == checkpoint)
            .unwrap_or(CheckpointNotes {
                checkpoint,
                metadata: Map::new(),
            });
        notes
            .metadata
            .extend(patch.iter().map(|(k, v)| (k.clone(), v.clone())));
        notes
    }
}
