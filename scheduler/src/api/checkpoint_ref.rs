//! How the API names checkpoints: a checkpoint's address and its
//! parent's, and the metadata every state carries. Shared by the current
//! state (`threads.rs`) and the history (`history.rs`).

use deepfleet_proto::api::{CheckpointRef, StateMetadata};

/// What a checkpoint's metadata says made it.
pub const SOURCE: &str = "loop";

/// The address of checkpoint `id` of `thread_id`.
pub fn checkpoint_ref(thread_id: &str, id: u64) -> CheckpointRef {
    CheckpointRef {
        thread_id: thread_id.to_owned(),
        checkpoint_ns: String::new(),
        checkpoint_id: id.to_string(),
        checkpoint_map: None,
    }
}

/// The parent of checkpoint `id`: the one before it, none for the first.
pub fn parent_ref(thread_id: &str, id: u64) -> Option<CheckpointRef> {
    (id > 1).then(|| checkpoint_ref(thread_id, id - 1))
}

/// The metadata of a thread's current state.
pub fn current_metadata(step: u64) -> StateMetadata {
    StateMetadata {
        source: SOURCE.to_owned(),
        step,
        run_id: None,
    }
}
