//! Specs in the embedded store: served specs in `specs` by name, versions
//! in `spec_versions` by `name@version`.

use async_trait::async_trait;
use deepfleet_proto::{AgentSpec, ServedSpec};

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::specs::Specs;

fn version_key(name: &str, version: &str) -> String {
    format!("{name}@{version}")
}

#[async_trait]
impl Specs for EmbeddedStore {
    async fn put_spec_version(&self, spec: &AgentSpec) -> Result<String, StoreError> {
        let version = deepfleet_proto::spec_version(spec);
        self.lock()
            .spec_versions
            .insert(version_key(&spec.name, &version), spec.clone());
        Ok(version)
    }

    async fn serve_spec(&self, spec: &AgentSpec) -> Result<String, StoreError> {
        let version = self.put_spec_version(spec).await?;
        self.lock().specs.insert(spec.name.clone(), spec.clone());
        Ok(version)
    }

    async fn served_spec(&self, name: &str) -> Result<Option<ServedSpec>, StoreError> {
        // The served copy's version is its content's: recomputed, so
        // snapshots from before versions need no new field.
        Ok(self.lock().specs.get(name).cloned().map(ServedSpec::new))
    }

    async fn get_spec_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<AgentSpec>, StoreError> {
        let state = self.lock();
        if let Some(spec) = state.spec_versions.get(&version_key(name, version)) {
            return Ok(Some(spec.clone()));
        }
        // A snapshot from before versions holds the served copy only.
        Ok(state
            .specs
            .get(name)
            .filter(|spec| deepfleet_proto::spec_version(spec) == version)
            .cloned())
    }
}
