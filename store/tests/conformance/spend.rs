//! [`deepfleet_store::Spend`] scenarios.

use std::sync::Arc;

use deepfleet_store::Spend;
use pretty_assertions::assert_eq;

pub async fn reports_sum_each_runs_highest(store: Arc<dyn Spend>) {
    assert_eq!(store.spent("batch:b1").await.unwrap(), 0);
    assert_eq!(
        store.report_spend("batch:b1", "r1", 100).await.unwrap(),
        100
    );
    assert_eq!(store.report_spend("batch:b1", "r2", 50).await.unwrap(), 150);
    // A repeated report (a redelivered step) changes nothing; a stale,
    // lower one is ignored; a higher one moves the total by the rise.
    assert_eq!(
        store.report_spend("batch:b1", "r1", 100).await.unwrap(),
        150
    );
    assert_eq!(store.report_spend("batch:b1", "r1", 40).await.unwrap(), 150);
    assert_eq!(
        store.report_spend("batch:b1", "r1", 130).await.unwrap(),
        180
    );
    assert_eq!(store.spent("batch:b1").await.unwrap(), 180);
    // Accounts are apart.
    assert_eq!(
        store
            .report_spend("tenant:acme:2026-12-02", "r1", 7)
            .await
            .unwrap(),
        7
    );
    assert_eq!(store.spent("batch:b2").await.unwrap(), 0);
}

pub async fn concurrent_reports_sum_exactly(store: Arc<dyn Spend>) {
    let reports = (0..50u64).map(|run| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            for cost in 1..=4u64 {
                store
                    .report_spend("batch:many", &format!("r{run}"), cost * 10)
                    .await
                    .unwrap();
            }
        })
    });
    for report in reports.collect::<Vec<_>>() {
        report.await.unwrap();
    }
    assert_eq!(store.spent("batch:many").await.unwrap(), 50 * 40);
}

conformance!(
    reports_sum_each_runs_highest,
    concurrent_reports_sum_exactly
);
