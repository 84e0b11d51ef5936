//! Spend accounts: what the runs of a budget ([`deepfleet_proto::Budget`])
//! have cost so far, so that every worker stops a batch or tenant at the
//! same total.
//!
//! Each run reports its own cumulative cost to each of its accounts, and
//! an account keeps the highest report of each run and their sum. Reports
//! are therefore idempotent and order-free: a redelivered step reports a
//! cost it reported before (no change), a late one a lower one (ignored),
//! so the total is exactly the sum of the runs' own costs however often
//! follow-ups repeat.

use async_trait::async_trait;

use crate::error::StoreError;

/// How long an account outlives its last report: a tenant's day account
/// is read for a day at most, and a batch's spend is worth a look for a
/// while after it ended.
pub const SPEND_TTL_SECS: u64 = 7 * 24 * 3600;

/// Spend accounts.
///
/// Implementations must apply a report atomically (compare the run's
/// previous report and move the total by the difference in one step), so
/// reports from many workers at once sum exactly.
#[async_trait]
pub trait Spend: Send + Sync + 'static {
    /// Records that `run_id` has spent `own_nano_usd` in all from
    /// `account` (its own calls, not its subagents'); returns the
    /// account's total after it.
    async fn report_spend(
        &self,
        account: &str,
        run_id: &str,
        own_nano_usd: u64,
    ) -> Result<u64, StoreError>;

    /// What `account` has spent so far (0 for an account never reported
    /// to).
    async fn spent(&self, account: &str) -> Result<u64, StoreError>;
}
