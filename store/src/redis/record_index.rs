//! Record indexes on Redis: one sorted set per index
//! ([`deepfleet_proto::Keys::record_index`]), member = record id, score =
//! the caller's. Every operation is one key, so it works unchanged on a
//! cluster; pages are `ZRANGE` by rank (`O(log n + page)`).
//!
//! Reads retry once on a broken connection; so do the writes that repeat
//! harmlessly (adding, removing, trimming, expiring). The conditional
//! removal and move are scripts: each compare and its write must be one
//! step.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use crate::error::StoreError;
use crate::record_index::{IndexEntry, Order, RecordIndex};
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;
use crate::redis::{RedisStore, millis};

static REMOVE_AT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/index_remove_at.lua")));
static MOVE_AT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/index_move_at.lua")));

#[async_trait]
impl RecordIndex for RedisStore {
    async fn index_put(&self, index: &str, id: &str, score: i64) -> Result<(), StoreError> {
        let key = self.keys().record_index(index);
        self.count(u64::try_from(key.len() + id.len() + 8).unwrap_or(u64::MAX));
        let mut pipe = redis::pipe();
        pipe.cmd("ZADD").arg(&key).arg(score).arg(id).ignore();
        pipe.cmd("PERSIST").arg(&key).ignore();
        let pipe = &pipe;
        self.conn()
            .call("index a record", Retry::Once, |mut conn| async move {
                pipe.query_async::<()>(&mut conn).await
            })
            .await
    }

    async fn index_remove(&self, index: &str, id: &str) -> Result<bool, StoreError> {
        let key = self.keys().record_index(index);
        let removed: i64 = self
            .query(
                "unindex a record",
                Retry::Once,
                redis::cmd("ZREM").arg(&key).arg(id),
            )
            .await?;
        Ok(removed > 0)
    }

    async fn index_remove_at(&self, index: &str, id: &str, score: i64) -> Result<bool, StoreError> {
        let key = self.keys().record_index(index);
        let call = Call::new(&REMOVE_AT, vec![key])
            .arg(id)
            .arg(score.to_string());
        let removed: i64 = self.run_script("unindex a stale record", &call).await?;
        Ok(removed > 0)
    }

    async fn index_score(&self, index: &str, id: &str) -> Result<Option<i64>, StoreError> {
        let key = self.keys().record_index(index);
        let score: Option<f64> = self
            .query(
                "read an index score",
                Retry::Once,
                redis::cmd("ZSCORE").arg(&key).arg(id),
            )
            .await?;
        // Scores are integers within ±2^53, exact as doubles.
        Ok(score.map(|s| s as i64))
    }

    async fn index_move_at(
        &self,
        index: &str,
        id: &str,
        score: i64,
        to: i64,
    ) -> Result<bool, StoreError> {
        let key = self.keys().record_index(index);
        let call = Call::new(&MOVE_AT, vec![key])
            .arg(id)
            .arg(score.to_string())
            .arg(to.to_string());
        let moved: i64 = self.run_script("move an index member", &call).await?;
        Ok(moved > 0)
    }

    async fn index_count(&self, index: &str) -> Result<u64, StoreError> {
        let key = self.keys().record_index(index);
        self.query("count an index", Retry::Once, redis::cmd("ZCARD").arg(&key))
            .await
    }

    async fn index_page(
        &self,
        index: &str,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<IndexEntry>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let key = self.keys().record_index(index);
        let mut cmd = redis::cmd("ZRANGE");
        cmd.arg(&key)
            .arg(offset)
            .arg(offset.saturating_add(limit - 1));
        if order == Order::Descending {
            cmd.arg("REV");
        }
        cmd.arg("WITHSCORES");
        let members: Vec<(String, f64)> = self.query("page an index", Retry::Once, &cmd).await?;
        Ok(members
            .into_iter()
            .map(|(id, score)| IndexEntry {
                id,
                // Scores are integers within ±2^53, exact as doubles.
                score: score as i64,
            })
            .collect())
    }

    async fn index_trim(&self, index: &str, below: i64) -> Result<u64, StoreError> {
        let key = self.keys().record_index(index);
        self.query(
            "trim an index",
            Retry::Once,
            redis::cmd("ZREMRANGEBYSCORE")
                .arg(&key)
                .arg("-inf")
                .arg(format!("({below}")),
        )
        .await
    }

    async fn index_expire(&self, index: &str, ttl: Duration) -> Result<bool, StoreError> {
        let key = self.keys().record_index(index);
        let set: i64 = self
            .query(
                "expire an index",
                Retry::Once,
                redis::cmd("PEXPIRE").arg(&key).arg(millis(ttl)),
            )
            .await?;
        Ok(set == 1)
    }
}
