//! Concurrency slots: how many top-level runs of a tenant, or of one of
//! its assistants, are in flight across the fleet
//! ([`deepfleet_proto::ConcurrencyLimit`]).
//!
//! A pool is a set of the runs holding one of its slots. A worker takes a
//! run's slots before each of its steps (a run holding them already
//! takes nothing) and the run gives them back when it ends or parks for a
//! human; a step whose pool is full waits on the queue instead. Taking
//! and giving back are idempotent, so a redelivered step or follow-up
//! changes nothing, and a sweep gives back the slots of runs that ended
//! without their follow-up.

use async_trait::async_trait;
use deepfleet_proto::{ConcurrencyLimit, SlotPool};

use crate::error::StoreError;

/// Concurrency slot pools.
///
/// Implementations must make [`Slots::take_slots`] atomic over all the
/// pools it is given (they lie under one tenant), so a pool never has
/// more holders than the limit it was taken under.
#[async_trait]
pub trait Slots: Send + Sync + 'static {
    /// Takes a slot of each pool of `limits` for `run_id`, all or none.
    /// Returns `None` once the run holds them all, or the first pool that
    /// is full (nothing taken).
    async fn take_slots(
        &self,
        run_id: &str,
        limits: &[ConcurrencyLimit],
    ) -> Result<Option<SlotPool>, StoreError>;

    /// Gives back `run_id`'s slots of `pools` (those it holds).
    async fn release_slots(&self, run_id: &str, pools: &[SlotPool]) -> Result<(), StoreError>;

    /// The runs holding a slot of `pool`.
    async fn slot_holders(&self, pool: &SlotPool) -> Result<Vec<String>, StoreError>;

    /// The pools that may have holders, for the sweep: every pool a run
    /// newly took a slot of since it was last dropped.
    async fn slot_pools(&self) -> Result<Vec<SlotPool>, StoreError>;

    /// Drops `pool` from [`Slots::slot_pools`] if it has no holder. Not
    /// atomic with a take on Redis: a pool dropped as a run takes its
    /// first slot comes back with the pool's next new holder.
    async fn drop_slot_pool(&self, pool: &SlotPool) -> Result<(), StoreError>;
}
