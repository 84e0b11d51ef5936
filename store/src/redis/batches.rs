//! Batch done queues on Redis: one list per batch (`batch_done`), pushed
//! with `RPUSH` and drained with a counted `LPOP`.

use async_trait::async_trait;

use crate::batches::Batches;
use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::conn::Retry;

#[async_trait]
impl Batches for RedisStore {
    async fn push_batch_done(&self, batch_id: &str, run_id: &str) -> Result<(), StoreError> {
        let key = self.keys().batch_done(batch_id);
        self.write::<()>(
            "push batch done",
            key.len() + run_id.len(),
            redis::cmd("RPUSH").arg(&key).arg(run_id),
        )
        .await
    }

    async fn pop_batch_done(&self, batch_id: &str, max: usize) -> Result<Vec<String>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let key = self.keys().batch_done(batch_id);
        // Not retried: a pop lost on a broken connection may have removed
        // the ids already.
        let popped: Option<Vec<String>> = self
            .query(
                "pop batch done",
                Retry::Never,
                redis::cmd("LPOP").arg(&key).arg(max),
            )
            .await?;
        Ok(popped.unwrap_or_default())
    }
}
