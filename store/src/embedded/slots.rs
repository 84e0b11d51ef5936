//! Concurrency slots in the embedded store's `slots` map: pool name ->
//! holders. A pool with no holder has no entry.

use async_trait::async_trait;
use deepfleet_proto::{ConcurrencyLimit, SlotPool};

use crate::embedded::EmbeddedStore;
use crate::error::StoreError;
use crate::slots::Slots;

#[async_trait]
impl Slots for EmbeddedStore {
    async fn take_slots(
        &self,
        run_id: &str,
        limits: &[ConcurrencyLimit],
    ) -> Result<Option<SlotPool>, StoreError> {
        let mut state = self.lock();
        for limit in limits {
            let holders = state.slots.get(&limit.pool.name());
            let holds = holders.is_some_and(|h| h.contains(run_id));
            let taken = holders.map_or(0, |h| h.len());
            if !holds && taken >= limit.limit as usize {
                return Ok(Some(limit.pool.clone()));
            }
        }
        for limit in limits {
            state
                .slots
                .entry(limit.pool.name())
                .or_default()
                .insert(run_id.to_owned());
        }
        Ok(None)
    }

    async fn release_slots(&self, run_id: &str, pools: &[SlotPool]) -> Result<(), StoreError> {
        let mut state = self.lock();
        for pool in pools {
            let name = pool.name();
            // Read first: a mutable borrow marks the state for a snapshot.
            if !state.slots.get(&name).is_some_and(|h| h.contains(run_id)) {
                continue;
            }
            if let Some(holders) = state.slots.get_mut(&name) {
                holders.remove(run_id);
                if holders.is_empty() {
                    state.slots.remove(&name);
                }
            }
        }
        Ok(())
    }

    async fn slot_holders(&self, pool: &SlotPool) -> Result<Vec<String>, StoreError> {
        Ok(self
            .lock()
            .slots
            .get(&pool.name())
            .map(|holders| holders.iter().cloned().collect())
            .unwrap_or_default())
    }

    async fn slot_pools(&self) -> Result<Vec<SlotPool>, StoreError> {
        Ok(self
            .lock()
            .slots
            .keys()
            .filter_map(|name| SlotPool::parse(name))
            .collect())
    }

    async fn drop_slot_pool(&self, _pool: &SlotPool) -> Result<(), StoreError> {
        // An emptied pool has no entry here already.
        Ok(())
    }
}
