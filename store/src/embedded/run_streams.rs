//! Run streams in the embedded store's in-memory logs (see `log.rs`).

use async_trait::async_trait;
use deepfleet_proto::{RunDelta, RunEvent};

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::run_streams::RunStreams;

#[async_trait]
impl RunStreams for EmbeddedStore {
    async fn append_run_event(&self, run_id: &str, event: &RunEvent) -> Result<(), StoreError> {
        self.streams().events().append(run_id, event);
        Ok(())
    }

    async fn run_events(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunEvent)>, StoreError> {
        self.streams().events().read(run_id, after, max)
    }

    async fn append_run_delta(&self, run_id: &str, delta: &RunDelta) -> Result<(), StoreError> {
        self.streams().deltas().append(run_id, delta);
        Ok(())
    }

    async fn run_deltas(
        &self,
        run_id: &str,
        after: Option<&str>,
        max: usize,
    ) -> Result<Vec<(String, RunDelta)>, StoreError> {
        self.streams().deltas().read(run_id, after, max)
    }
}
