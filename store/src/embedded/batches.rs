//! Batch done queues in the embedded store's `batch_done` map.

use async_trait::async_trait;

use crate::batches::Batches;
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;

#[async_trait]
impl Batches for EmbeddedStore {
    async fn push_batch_done(&self, batch_id: &str, run_id: &str) -> Result<(), StoreError> {
        self.lock()
            .batch_done
            .entry(batch_id.to_owned())
            .or_default()
            .push_back(run_id.to_owned());
        Ok(())
    }

    async fn pop_batch_done(&self, batch_id: &str, max: usize) -> Result<Vec<String>, StoreError> {
        let mut state = self.lock();
        let Some(done) = state.batch_done.get_mut(batch_id) else {
            return Ok(Vec::new());
        };
        let n = max.min(done.len());
        Ok(done.drain(..n).collect())
    }
}
