//! Specs in the embedded store's `specs` map.

use async_trait::async_trait;
use deepfleet_proto::AgentSpec;

use super::Specs;
use crate::embedded::EmbeddedStore;
use crate::error::StoreError;

#[async_trait]
impl Specs for EmbeddedStore {
    async fn put_spec(&self, spec: &AgentSpec) -> Result<(), StoreError> {
        self.lock().specs.insert(spec.name.clone(), spec.clone());
        Ok(())
    }

    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError> {
        Ok(self.lock().specs.get(name).cloned())
    }
}
