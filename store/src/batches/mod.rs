//! Batch progress: the done queue of each batch, which finished top-level
//! runs join and the batch's follower drains.

use async_trait::async_trait;

use crate::error::StoreError;

/// Per-batch queues of finished run ids.
///
/// Implementations must keep each queue first in, first out, and make a
/// pop remove what it returns atomically, so two followers never both get
/// the same id.
#[async_trait]
pub trait Batches: Send + Sync + 'static {
    /// Appends a finished top-level run to its batch's done list.
    async fn push_batch_done(&self, batch_id: &str, run_id: &str) -> Result<(), StoreError>;

    /// Removes and returns up to `max` run ids from a batch's done list.
    async fn pop_batch_done(&self, batch_id: &str, max: usize) -> Result<Vec<String>, StoreError>;
}
