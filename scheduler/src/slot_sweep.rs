//! Giving back the concurrency slots ([`deepfleet_store::Slots`]) of runs
//! that ended without their follow-up: a run ended outside a worker
//! (cancelled before its first step, its thread deleted), or whose record
//! expired. A worker's own end of a run gives its slots back itself, and
//! a crash before that is redelivered and gives them back then; this is
//! the backstop, run with the admission sweep.
//!
//! A run parked for a human gives its slots back through its follow-up
//! and takes them again at its next step, so only ended and vanished runs
//! are the sweep's: releasing a parked run here could race with its
//! resumption.

use deepfleet_store::Store;

use crate::error::SchedulerError;

/// One round over every pool that may have holders; returns how many
/// slots it gave back.
pub async fn release_ended(store: &dyn Store) -> Result<usize, SchedulerError> {
    let mut released = 0;
    for pool in store.slot_pools().await? {
        let holders = store.slot_holders(&pool).await?;
        let mut kept = holders.len();
        for run_id in &holders {
            let ended = store
                .find_run(run_id)
                .await?
                .is_none_or(|run| run.status.is_terminal());
            if ended {
                store
                    .release_slots(run_id, std::slice::from_ref(&pool))
                    .await?;
                released += 1;
                kept -= 1;
            }
        }
        if kept == 0 {
            store.drop_slot_pool(&pool).await?;
        }
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use deepfleet_proto::{ConcurrencyLimit, RunRecord, RunStatus, TenantId};
    use deepfleet_store::embedded::EmbeddedStore;
    use deepfleet_store::{Runs, Slots, ThreadSeed};

    use super::*;

    #[tokio::test]
    async fn slots_of_ended_and_vanished_runs_are_given_back_and_others_kept() {
        let store = EmbeddedStore::new();
        let limit = ConcurrencyLimit::tenant(TenantId::default(), 5);
        let now = Utc::now();
        for (id, status) in [
            ("running", RunStatus::Running),
            ("ended", RunStatus::Success),
            ("parked", RunStatus::AwaitingHuman),
        ] {
            let run = RunRecord {
                status,
                ..RunRecord::new(id, format!("t-{id}"), "a", now)
            };
            store
                .create_run(&run, &ThreadSeed::default())
                .await
                .unwrap();
            store
                .take_slots(id, std::slice::from_ref(&limit))
                .await
                .unwrap();
        }
        store
            .take_slots("vanished", std::slice::from_ref(&limit))
            .await
            .unwrap();
        assert_eq!(release_ended(&store).await.unwrap(), 2);
        let mut holders = store.slot_holders(&limit.pool).await.unwrap();
        holders.sort();
        assert_eq!(holders, ["parked", "running"]);
        assert_eq!(store.slot_pools().await.unwrap(), [limit.pool]);
    }
}
