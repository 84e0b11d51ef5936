//! Retention in the embedded store: expiry instants in the state's
//! `expiries` (persisted with the snapshot), swept at the start of every
//! operation; deletion through the state's `owned` map of each thread's
//! runs and subagent threads.

use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::retention::{Retention, ttl_secs};

/// The instant `ttl` from now, in the state's clock.
fn deadline(ttl: Duration) -> chrono::DateTime<Utc> {
    let secs = i64::try_from(ttl_secs(ttl)).unwrap_or(i64::MAX);
    Utc::now() + chrono::TimeDelta::try_seconds(secs).unwrap_or(chrono::TimeDelta::MAX)
}

#[async_trait]
impl Retention for EmbeddedStore {
    async fn expire_thread(
        &self,
        thread_id: &str,
        ended_run: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        Ok(self.lock().expire_tree(thread_id, ended_run, deadline(ttl)))
    }

    async fn purge_thread(&self, thread_id: &str) -> Result<(), StoreError> {
        let runs = self.lock().purge_tree(thread_id);
        self.forget_streams(&runs);
        Ok(())
    }

    async fn expire_batch(&self, batch_id: &str, ttl: Duration) -> Result<(), StoreError> {
        self.lock().expire_batch(batch_id, deadline(ttl));
        Ok(())
    }
}
