//! Taking a run's concurrency slots before its step
//! ([`deepfleet_store::Slots`]).
//!
//! A top-level run under limits takes a slot of each of its pools before
//! every step it executes: free when it holds them already, so only its
//! first step (and its first after a human answered) can find a pool
//! full. Then the step is deferred like one waiting for model capacity
//! (`throttle`): it holds no worker slot while it waits, and its clock
//! has not started. Its follow-ups give the slots back when it ends or
//! parks for a human ([`crate::step::decide::FollowUp::ReleaseSlots`]).

use deepfleet_proto::RunRecord;
use deepfleet_store::Slots;

use crate::error::StepError;
use crate::step::decide::holds_slots;

/// Takes `run`'s slots, or fails with [`StepError::AwaitingSlot`] naming
/// a full pool.
pub(super) async fn take(store: &dyn Slots, run: &RunRecord) -> Result<(), StepError> {
    if !holds_slots(run) {
        return Ok(());
    }
    match store.take_slots(&run.run_id, &run.concurrency).await? {
        None => Ok(()),
        Some(pool) => Err(StepError::AwaitingSlot(pool)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use deepfleet_proto::{ConcurrencyLimit, ParentLink, TenantId};
    use deepfleet_store::embedded::EmbeddedStore;

    #[tokio::test]
    async fn a_full_pool_defers_top_level_runs_and_never_subagents() {
        let store = EmbeddedStore::new();
        let limited = |id: &str| RunRecord {
            concurrency: vec![ConcurrencyLimit::tenant(TenantId::default(), 1)],
            ..RunRecord::new(id, format!("t-{id}"), "a", Utc::now())
        };
        take(&store, &limited("r1")).await.unwrap();
        take(&store, &limited("r1")).await.unwrap();
        let waiting = take(&store, &limited("r2")).await.unwrap_err();
        assert!(
            matches!(&waiting, StepError::AwaitingSlot(pool) if pool.name() == "default"),
            "{waiting}"
        );
        let child = RunRecord {
            parent: Some(ParentLink {
                run_id: "r1".into(),
                thread_id: "t-r1".into(),
                tool_call_id: "c".into(),
            }),
            ..limited("c1")
        };
        take(&store, &child).await.unwrap();
    }
}
