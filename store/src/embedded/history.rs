//! History in the embedded store's `history` map, appended to by the
//! commits and seeds themselves (`checkpoints.rs`, `runs.rs`) and by
//! updates here, in their critical sections.

use async_trait::async_trait;

use serde_json::{Map, Value};

use crate::checkpoints::CheckpointNotes;
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::history::{Change, Fence, History, ThreadUpdate, Timeline, UpdateOutcome, keep_latest};

#[async_trait]
impl History for EmbeddedStore {
    async fn timeline(&self, thread_id: &str) -> Result<Timeline, StoreError> {
        let state = self.lock();
        let Some(thread) = state.threads.get(thread_id) else {
            return Ok(Timeline::default());
        };
        Ok(Timeline {
            step: thread.step,
            base: thread.log_base,
            log: thread.messages.clone(),
            history: state.history.get(thread_id).cloned().unwrap_or_default(),
        })
    }

    async fn keep_latest_checkpoint(&self, thread_id: &str) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let Some(history) = state.history.get_mut(thread_id) else {
            return Ok(false);
        };
        let Some(kept) = keep_latest(history) else {
            return Ok(false);
        };
        *history = kept;
        Ok(true)
    }

    async fn update_thread(&self, update: &ThreadUpdate) -> Result<UpdateOutcome, StoreError> {
        let mut state = self.lock();
        let thread = state.threads.entry(update.thread_id.clone()).or_default();
        let now = Fence {
            step: thread.step,
            base: thread.log_base,
            log_len: thread.messages.len() as u64,
        };
        if now != update.fence {
            return Ok(UpdateOutcome::Conflict);
        }
        if let Some(base) = update.new_base() {
            thread.log_base = base;
            thread.tokens = 0;
            thread.context = Default::default();
        }
        thread.messages.extend(update.messages().iter().cloned());
        thread.tokens += update.tokens();
        thread.files = update.files.clone();
        thread.state = update.state.clone();
        if update.clear_pending {
            thread.pending = None;
        }
        thread.step += 1;
        thread.published = thread.step;
        thread.update = Some(update.mark());
        thread.notes = None;
        state.tell_history(&update.thread_id, update.change());
        Ok(UpdateOutcome::Updated {
            checkpoint: update.checkpoint(),
        })
    }

    async fn note_checkpoint(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<Option<CheckpointNotes>, StoreError> {
        let mut state = self.lock();
        let Some(thread) = state.threads.get_mut(thread_id).filter(|t| t.step > 0) else {
            return Ok(None);
        };
        let step = thread.step;
        let notes = CheckpointNotes::patched(thread.notes.take(), step, metadata);
        thread.notes = Some(notes.clone());
        state.tell_history(thread_id, Change::of_note(step, metadata));
        Ok(Some(notes))
    }
}
