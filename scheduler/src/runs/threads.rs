//! A tenant's threads as the runs service finds them.

use deepfleet_proto::TenantId;

use super::Runs;
use super::error::RunsError;
use crate::repo::threads::{ThreadRecord, threads};

/// `tenant`'s thread `id`. Another tenant's thread is not found, as an
/// unknown one is not.
pub async fn load(runs: &Runs, tenant: &TenantId, id: &str) -> Result<ThreadRecord, RunsError> {
    threads(runs.store())
        .get_owned(id, tenant)
        .await?
        .ok_or_else(|| RunsError::not_found(format!("Thread '{id}' not found.")))
}
