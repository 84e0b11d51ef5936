//! Records on Redis: one string per record ([`Keys::record`]), its JSON
//! sealed by the codec when encryption at rest is on.
//!
//! Single-key commands only, so they work unchanged on a cluster, where
//! records spread over the slots by their scope (see [`Keys::record`]).
//! Reads retry once on a broken connection; writes are idempotent (a
//! repeated `SET`, `DEL` or `PEXPIRE` leaves the same result), so they
//! retry too, except the create-if-absent insert, whose answer a retry
//! could get wrong.
//!
//! [`Keys::record`]: deepfleet_proto::Keys::record

use std::time::Duration;

use async_trait::async_trait;
use redis::Value as RedisValue;
use serde_json::Value;

use crate::error::StoreError;
use crate::records::Records;
use crate::redis::conn::Retry;
use crate::redis::{RedisStore, millis};

#[async_trait]
impl Records for RedisStore {
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError> {
        let key = self.keys().record(kind, id);
        let raw = self.codec().encode(&key, value)?;
        self.count(u64::try_from(raw.len() + key.len()).unwrap_or(u64::MAX));
        let _: RedisValue = self
            .query(
                "put record",
                Retry::Once,
                redis::cmd("SET").arg(&key).arg(raw),
            )
            .await?;
        Ok(())
    }

    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError> {
        let key = self.keys().record(kind, id);
        let raw = self.codec().encode(&key, value)?;
        let bytes = raw.len() + key.len();
        let set: Option<String> = self
            .write(
                "insert record",
                bytes,
                redis::cmd("SET").arg(&key).arg(raw).arg("NX"),
            )
            .await?;
        Ok(set.is_some())
    }

    async fn claim_record(
        &self,
        kind: &str,
        id: &str,
        value: &Value,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let key = self.keys().record(kind, id);
        let raw = self.codec().encode(&key, value)?;
        let bytes = raw.len() + key.len();
        // `SET NX PX`: created and given its deadline in one command.
        let set: Option<String> = self
            .write(
                "claim record",
                bytes,
                redis::cmd("SET")
                    .arg(&key)
                    .arg(raw)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(ttl).max(1)),
            )
            .await?;
        Ok(set.is_some())
    }

    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let key = self.keys().record(kind, id);
        self.get_json("get record", &key).await
    }

    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        let key = self.keys().record(kind, id);
        let removed: i64 = self
            .query("delete record", Retry::Once, redis::cmd("DEL").arg(&key))
            .await?;
        Ok(removed > 0)
    }

    async fn expire_record(&self, kind: &str, id: &str, ttl: Duration) -> Result<bool, StoreError> {
        let key = self.keys().record(kind, id);
        let set: i64 = self
            .query(
                "expire record",
                Retry::Once,
                redis::cmd("PEXPIRE").arg(&key).arg(millis(ttl)),
            )
            .await?;
        Ok(set == 1)
    }
}
