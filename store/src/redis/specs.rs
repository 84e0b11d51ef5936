//! Specs on Redis: one JSON string per version (`spec_version` key) and
//! one per name holding the served version and its spec (`spec` key), so
//! intake reads a name with one command.

use async_trait::async_trait;
use deepfleet_proto::{AgentSpec, ServedSpec};

use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::specs::Specs;

#[async_trait]
impl Specs for RedisStore {
    async fn put_spec_version(&self, spec: &AgentSpec) -> Result<String, StoreError> {
        let version = deepfleet_proto::spec_version(spec);
        let key = self.keys().spec_version(&spec.name, &version);
        let value = self.codec().encode(&key, spec)?;
        // The same version is the same content: rewriting it is harmless.
        self.write::<()>(
            "put spec version",
            key.len() + value.len(),
            redis::cmd("SET").arg(&key).arg(&value),
        )
        .await?;
        Ok(version)
    }

    async fn serve_spec(&self, spec: &AgentSpec) -> Result<String, StoreError> {
        let version = self.put_spec_version(spec).await?;
        let key = self.keys().spec(&spec.name);
        let served = ServedSpec {
            version: version.clone(),
            spec: spec.clone(),
        };
        let value = self.codec().encode(&key, &served)?;
        self.write::<()>(
            "serve spec",
            key.len() + value.len(),
            redis::cmd("SET").arg(&key).arg(&value),
        )
        .await?;
        Ok(version)
    }

    async fn served_spec(&self, name: &str) -> Result<Option<ServedSpec>, StoreError> {
        self.get_json("get served spec", &self.keys().spec(name))
            .await
    }

    async fn get_spec_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<AgentSpec>, StoreError> {
        self.get_json("get spec version", &self.keys().spec_version(name, version))
            .await
    }
}
