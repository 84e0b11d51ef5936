//! Fan-in in the embedded store's `fan_in` map, by parent run id.

use async_trait::async_trait;
use deepfleet_proto::{ChildResult, ParentLink};

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::fan_in::FanIn;

#[async_trait]
impl FanIn for EmbeddedStore {
    async fn record_child_result(
        &self,
        parent: &ParentLink,
        result: &ChildResult,
    ) -> Result<u32, StoreError> {
        let mut state = self.lock();
        let fan_in = state
            .fan_in
            .get_mut(&parent.run_id)
            .ok_or_else(|| StoreError::NotFound(format!("fan-in of run {}", parent.run_id)))?;
        fan_in
            .results
            .entry(result.tool_call_id.clone())
            .or_insert_with(|| result.clone());
        let have = u32::try_from(fan_in.results.len()).unwrap_or(u32::MAX);
        Ok(fan_in.expected.saturating_sub(have))
    }

    async fn child_results(
        &self,
        _thread_id: &str,
        run_id: &str,
    ) -> Result<Vec<ChildResult>, StoreError> {
        Ok(self
            .lock()
            .fan_in
            .get(run_id)
            .map(|f| f.results.values().cloned().collect())
            .unwrap_or_default())
    }
}
