//! The spec versions a worker's steps run on, read from the store once.
//!
//! Every step of a run loads the spec version the run is pinned to. A
//! version never changes once stored (its id is its content), so a worker
//! keeps the ones it has read: a step is then one store read shorter, and
//! a batch of thousands of runs of one agent reads its spec once per worker
//! instead of once per step. A version that was not found is not kept, so
//! one stored later is found by the next step that asks.

use std::sync::Arc;

use deepfleet_proto::AgentSpec;
use deepfleet_store::{Store, StoreError};
use moka::sync::Cache;

/// How many versions a worker keeps: far more than the agents one fleet
/// runs at once, and small beside a worker's memory (a spec is kilobytes).
const CAPACITY: u64 = 1024;

/// Spec versions by (agent name, version id).
#[derive(Clone)]
pub struct SpecVersions {
    kept: Cache<(String, String), Arc<AgentSpec>>,
}

impl Default for SpecVersions {
    fn default() -> Self {
        SpecVersions {
            kept: Cache::new(CAPACITY),
        }
    }
}

impl SpecVersions {
    /// Version `version` of `agent`'s spec: kept, or read from `store`.
    pub async fn get(
        &self,
        store: &dyn Store,
        agent: &str,
        version: &str,
    ) -> Result<Option<Arc<AgentSpec>>, StoreError> {
        let key = (agent.to_owned(), version.to_owned());
        if let Some(spec) = self.kept.get(&key) {
            return Ok(Some(spec));
        }
        let Some(spec) = store.get_spec_version(agent, version).await? else {
            return Ok(None);
        };
        let spec = Arc::new(spec);
        self.kept.insert(key, Arc::clone(&spec));
        Ok(Some(spec))
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_store::Specs;
    use deepfleet_store::embedded::EmbeddedStore;

    use super::*;

    fn spec() -> AgentSpec {
        serde_json::from_value(serde_json::json!({"name": "helper", "model": "scripted:test"}))
            .unwrap()
    }

    #[tokio::test]
    async fn a_version_is_read_once_and_a_missing_one_is_asked_again() {
        let specs = SpecVersions::default();
        let (holds, lacks) = (EmbeddedStore::new(), EmbeddedStore::new());
        let version = holds.put_spec_version(&spec()).await.unwrap();

        // Not found: nothing is kept, so the version stored later is read.
        assert!(
            specs
                .get(&lacks, "helper", &version)
                .await
                .unwrap()
                .is_none()
        );
        lacks.put_spec_version(&spec()).await.unwrap();
        let read = specs.get(&lacks, "helper", &version).await.unwrap();
        assert_eq!(read.as_deref(), Some(&spec()));

        // Found once: kept, and a store that lacks it is not asked.
        let other = SpecVersions::default();
        other.get(&holds, "helper", &version).await.unwrap();
        let kept = other.get(&EmbeddedStore::new(), "helper", &version).await;
        assert_eq!(kept.unwrap().as_deref(), Some(&spec()));
        assert!(
            other
                .get(&holds, "other", &version)
                .await
                .unwrap()
                .is_none()
        );
    }
}
