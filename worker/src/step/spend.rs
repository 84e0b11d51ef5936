//! What a run spends from its budgets: each committed step reports the
//! run's own cost so far to every account the run spends from, and a
//! step starts only while none of them has spent its limit.
//!
//! Reports carry cumulative costs and accounts keep each run's highest
//! (see [`deepfleet_store::Spend`]), so the report a redelivered step
//! repeats changes nothing, and an account's total is exactly what its
//! runs' own calls cost.

use deepfleet_proto::{Budget, RunRecord};
use deepfleet_store::{Spend, StoreError};

/// Reports `run`'s own cost so far to each of its accounts.
pub async fn report(store: &dyn Spend, run: &RunRecord) -> Result<(), StoreError> {
    if run.own_cost_nano_usd == 0 {
        return Ok(());
    }
    for budget in &run.budgets {
        store
            .report_spend(&budget.account, &run.run_id, run.own_cost_nano_usd)
            .await?;
    }
    Ok(())
}

/// The first of `run`'s budgets whose account has spent its limit.
pub async fn exhausted<'r>(
    store: &dyn Spend,
    run: &'r RunRecord,
) -> Result<Option<&'r Budget>, StoreError> {
    for budget in &run.budgets {
        if store.spent(&budget.account).await? >= budget.limit_nano_usd {
            return Ok(Some(budget));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use deepfleet_store::embedded::EmbeddedStore;

    #[tokio::test]
    async fn a_budget_is_exhausted_once_its_runs_spent_its_limit() {
        let store = EmbeddedStore::new();
        let mut run = RunRecord {
            budgets: vec![Budget::batch("b", 100), Budget::tenant_day("t", "d", 1_000)],
            ..RunRecord::new("r", "t", "a", Utc::now())
        };
        assert_eq!(exhausted(&store, &run).await.unwrap(), None);
        run.own_cost_nano_usd = 60;
        report(&store, &run).await.unwrap();
        // Reported again (a redelivered step): still 60.
        report(&store, &run).await.unwrap();
        assert_eq!(exhausted(&store, &run).await.unwrap(), None);
        let other = RunRecord {
            own_cost_nano_usd: 40,
            ..RunRecord {
                run_id: "r2".into(),
                ..run.clone()
            }
        };
        report(&store, &other).await.unwrap();
        assert_eq!(
            exhausted(&store, &run).await.unwrap(),
            Some(&Budget::batch("b", 100))
        );
        assert_eq!(store.spent("tenant:t:d").await.unwrap(), 100);
    }
}
