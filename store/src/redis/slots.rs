//! Concurrency slots on Redis: a set of holders per pool
//! (`Keys::concurrency_slots`, tagged by the tenant so `take_slots.lua`
//! takes a run's slots in all its pools at once) and a set of pool names
//! the sweep walks (`Keys::concurrency_pools`).

use std::sync::LazyLock;

use async_trait::async_trait;
use deepfleet_proto::{ConcurrencyLimit, SlotPool};
use redis::Script;

use crate::error::StoreError;
use crate::redis::RedisStore;
use crate::redis::conn::Retry;
use crate::redis::scripts::Call;
use crate::slots::Slots;

static TAKE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/take_slots.lua")));

impl RedisStore {
    fn slots_key(&self, pool: &SlotPool) -> String {
        self.keys()
            .concurrency_slots(pool.tenant.as_str(), pool.agent.as_deref())
    }
}

#[async_trait]
impl Slots for RedisStore {
    async fn take_slots(
        &self,
        run_id: &str,
        limits: &[ConcurrencyLimit],
    ) -> Result<Option<SlotPool>, StoreError> {
        if limits.is_empty() {
            return Ok(None);
        }
        let keys = limits.iter().map(|l| self.slots_key(&l.pool)).collect();
        let call = limits
            .iter()
            .fold(Call::new(&TAKE, keys).arg(run_id), |call, l| {
                call.arg(l.limit.to_string())
            });
        let (full, added): (usize, u32) = self.run_script("take slots", &call).await?;
        if let Some(limit) = full.checked_sub(1).and_then(|i| limits.get(i)) {
            return Ok(Some(limit.pool.clone()));
        }
        if added > 0 {
            // After the script, so a sweep that lists the pool sees the
            // holder; a set member written twice is one.
            let pools = self.keys().concurrency_pools();
            let mut sadd = redis::cmd("SADD");
            sadd.arg(&pools);
            for limit in limits {
                sadd.arg(limit.pool.name());
            }
            self.write::<()>("list slot pools", pools.len(), &sadd)
                .await?;
        }
        Ok(None)
    }

    async fn release_slots(&self, run_id: &str, pools: &[SlotPool]) -> Result<(), StoreError> {
        for pool in pools {
            self.query::<()>(
                "release slot",
                Retry::Once,
                redis::cmd("SREM").arg(self.slots_key(pool)).arg(run_id),
            )
            .await?;
        }
        Ok(())
    }

    async fn slot_holders(&self, pool: &SlotPool) -> Result<Vec<String>, StoreError> {
        self.query(
            "read slot holders",
            Retry::Once,
            redis::cmd("SMEMBERS").arg(self.slots_key(pool)),
        )
        .await
    }

    async fn slot_pools(&self) -> Result<Vec<SlotPool>, StoreError> {
        let names: Vec<String> = self
            .query(
                "read slot pools",
                Retry::Once,
                redis::cmd("SMEMBERS").arg(self.keys().concurrency_pools()),
            )
            .await?;
        Ok(names.iter().filter_map(|n| SlotPool::parse(n)).collect())
    }

    async fn drop_slot_pool(&self, pool: &SlotPool) -> Result<(), StoreError> {
        let holders: u64 = self
            .query(
                "count slot holders",
                Retry::Once,
                redis::cmd("SCARD").arg(self.slots_key(pool)),
            )
            .await?;
        if holders == 0 {
            self.query::<()>(
                "drop slot pool",
                Retry::Once,
                redis::cmd("SREM")
                    .arg(self.keys().concurrency_pools())
                    .arg(pool.name()),
            )
            .await?;
        }
        Ok(())
    }
}
