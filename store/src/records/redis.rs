//! Records on Redis: one hash per kind (`records`), id -> JSON.
//!
//! Single-key commands only, so they work unchanged on a cluster. Reads
//! retry once on a broken connection; writes are idempotent (a repeated
//! `HSET` or `HDEL` leaves the same result), so they retry too, except the
//! create-if-absent insert, whose answer a retry could get wrong.

use async_trait::async_trait;
use redis::Value as RedisValue;
use serde_json::Value;

use super::Records;
use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::conn::Retry;

#[async_trait]
impl Records for RedisStore {
    async fn put_record(&self, kind: &str, id: &str, value: &Value) -> Result<(), StoreError> {
        let key = self.keys().records(kind);
        let raw = self.codec().encode(&key, value)?;
        self.count(u64::try_from(raw.len() + id.len()).unwrap_or(u64::MAX));
        let _: RedisValue = self
            .query(
                "put record",
                Retry::Once,
                redis::cmd("HSET").arg(&key).arg(id).arg(raw),
            )
            .await?;
        Ok(())
    }

    async fn insert_record(&self, kind: &str, id: &str, value: &Value) -> Result<bool, StoreError> {
        let key = self.keys().records(kind);
        let raw = self.codec().encode(&key, value)?;
        let bytes = raw.len() + id.len();
        let set: i64 = self
            .write(
                "insert record",
                bytes,
                redis::cmd("HSETNX").arg(&key).arg(id).arg(raw),
            )
            .await?;
        Ok(set == 1)
    }

    async fn get_record(&self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let key = self.keys().records(kind);
        let raw: Option<String> = self
            .query(
                "get record",
                Retry::Once,
                redis::cmd("HGET").arg(&key).arg(id),
            )
            .await?;
        self.codec().decode_opt(&key, raw)
    }

    async fn delete_record(&self, kind: &str, id: &str) -> Result<bool, StoreError> {
        let key = self.keys().records(kind);
        let removed: i64 = self
            .query(
                "delete record",
                Retry::Once,
                redis::cmd("HDEL").arg(&key).arg(id),
            )
            .await?;
        Ok(removed > 0)
    }

    async fn list_records(&self, kind: &str) -> Result<Vec<Value>, StoreError> {
        let key = self.keys().records(kind);
        let raws: Vec<String> = self
            .query("list records", Retry::Once, redis::cmd("HVALS").arg(&key))
            .await?;
        raws.iter()
            .map(|raw| self.codec().decode(&key, raw))
            .collect()
    }
}
