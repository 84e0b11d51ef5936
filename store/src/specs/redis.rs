//! Specs on Redis: one JSON string per spec (`spec` key).

use async_trait::async_trait;
use deepfleet_proto::AgentSpec;

use super::Specs;
use crate::error::StoreError;
use crate::redis::RedisStore;

#[async_trait]
impl Specs for RedisStore {
    async fn put_spec(&self, spec: &AgentSpec) -> Result<(), StoreError> {
        let key = self.keys().spec(&spec.name);
        let value = self.codec().encode(&key, spec)?;
        self.write(
            "put spec",
            key.len() + value.len(),
            redis::cmd("SET").arg(&key).arg(&value),
        )
        .await
    }

    async fn get_spec(&self, name: &str) -> Result<Option<AgentSpec>, StoreError> {
        self.get_json("get spec", &self.keys().spec(name)).await
    }
}
