//! How the API names checkpoints: a checkpoint's address and its
//! parent's, and the metadata every state carries. Shared by the current
//! state (`threads.rs`), the history (`history.rs`) and the checkpoint
//! stream events (`step_trace.rs`).

use deepfleet_proto::api::{CheckpointRef, MADE_BY_KEYS, StateMetadata};
use deepfleet_store::{Checkpoint, CheckpointSource, CheckpointState};
use serde_json::{Map, Value};

/// The address of checkpoint `id` of `thread_id`.
pub fn checkpoint_ref(thread_id: &str, id: u64) -> CheckpointRef {
    CheckpointRef {
        thread_id: thread_id.to_owned(),
        checkpoint_ns: String::new(),
        checkpoint_id: id.to_string(),
        checkpoint_map: None,
    }
}

/// The address of a history checkpoint's parent, if it has one.
pub fn parent_ref(thread_id: &str, found: &CheckpointState) -> Option<CheckpointRef> {
    found.parent.map(|id| checkpoint_ref(thread_id, id))
}

/// The parent of the thread's current state: the one an update outside
/// a step names while it is the current state, else the checkpoint
/// before it (none for the first).
pub fn current_parent_ref(thread_id: &str, checkpoint: &Checkpoint) -> Option<CheckpointRef> {
    match checkpoint.update {
        Some(mark) => mark.parent,
        None => checkpoint.step.checked_sub(1).filter(|&id| id > 0),
    }
    .map(|id| checkpoint_ref(thread_id, id))
}

/// The metadata of a history checkpoint.
pub fn metadata(found: &CheckpointState) -> StateMetadata {
    StateMetadata {
        source: found.source.as_str().to_owned(),
        step: found.id,
        run_id: (!found.run_id.is_empty()).then(|| found.run_id.clone()),
        notes: notes_of(&found.checkpoint),
    }
}

/// The notes clients attached to `checkpoint`, without any key that says
/// what made it (a patch cannot set those).
fn notes_of(checkpoint: &Checkpoint) -> Map<String, Value> {
    let mut notes = checkpoint
        .notes
        .as_ref()
        .map(|n| n.metadata.clone())
        .unwrap_or_default();
    notes.retain(|key, _| !MADE_BY_KEYS.contains(&key.as_str()));
    notes
}

/// The metadata of a thread's current state.
pub fn current_metadata(checkpoint: &Checkpoint) -> StateMetadata {
    let source = checkpoint
        .update
        .map_or(CheckpointSource::Loop, |mark| mark.source);
    StateMetadata {
        source: source.as_str().to_owned(),
        step: checkpoint.step,
        run_id: None,
        notes: notes_of(checkpoint),
    }
}

/// The source a history filter's `metadata.source` names, if any.
pub fn source_named(name: &str) -> Option<CheckpointSource> {
    [
        CheckpointSource::Loop,
        CheckpointSource::Update,
        CheckpointSource::Fork,
        CheckpointSource::Rollback,
    ]
    .into_iter()
    .find(|source| source.as_str() == name)
}
