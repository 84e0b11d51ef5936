//! History in the embedded store's `history` map, appended to by the
//! commits and seeds themselves (`checkpoints/embedded.rs`,
//! `runs/embedded.rs`) in their critical sections.

use async_trait::async_trait;

use super::{CheckpointState, History, HistoryQuery, keep_latest, replay};
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;

#[async_trait]
impl History for EmbeddedStore {
    async fn checkpoints(
        &self,
        thread_id: &str,
        query: &HistoryQuery,
    ) -> Result<Vec<CheckpointState>, StoreError> {
        let state = self.lock();
        let (Some(thread), Some(history)) =
            (state.threads.get(thread_id), state.history.get(thread_id))
        else {
            return Ok(Vec::new());
        };
        Ok(replay(&thread.messages, history, query))
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
}
