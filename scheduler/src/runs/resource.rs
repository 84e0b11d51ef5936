//! The Run resource: a run's metadata and status as every entry shows it.

use chrono::{DateTime, Utc};
use deepfleet_proto::TenantId;
use deepfleet_proto::api::{Run, RunStatus};

use super::Runs;
use super::error::RunsError;
use super::threads;
use crate::lifecycle::status::status_of;
use crate::repo::runs::{RunMeta, runs_of};

/// The Run resource of `meta`.
pub async fn run_resource(runs: &Runs, meta: &RunMeta) -> Result<Run, RunsError> {
    let record = runs.life.run_record(meta).await?;
    let (status, updated_at) = status_of(meta, record.as_ref());
    let cost_usd = record.map(|r| deepfleet_proto::cost::usd(r.cost_nano_usd));
    Ok(resource(meta, status, updated_at, cost_usd))
}

/// The Run resource of `meta` as it was created: `pending`, nothing spent.
/// Creating a run answers this, as the Agent Server does, and not wherever
/// a quick worker has taken the run by the time the answer is written (which
/// would also cost a read per run of a batch).
pub fn created_resource(meta: &RunMeta) -> Run {
    resource(meta, RunStatus::Pending, meta.created_at, Some(0.0))
}

fn resource(
    meta: &RunMeta,
    status: RunStatus,
    updated_at: DateTime<Utc>,
    cost_usd: Option<f64>,
) -> Run {
    Run {
        run_id: meta.run_id.clone(),
        thread_id: meta.thread_id.clone(),
        assistant_id: meta.assistant_id.clone(),
        created_at: meta.created_at,
        updated_at,
        status,
        metadata: meta.metadata.clone(),
        kwargs: meta.kwargs.clone(),
        multitask_strategy: meta.multitask_strategy,
        cost_usd,
    }
}

/// The metadata of a run on one of `tenant`'s threads. On another
/// tenant's thread it is not found, as an unknown run is not.
pub async fn load_run(
    runs: &Runs,
    tenant: &TenantId,
    thread_id: &str,
    run_id: &str,
) -> Result<RunMeta, RunsError> {
    threads::load(runs, tenant, thread_id).await?;
    runs_of(runs.store(), thread_id)
        .get(run_id)
        .await?
        .ok_or_else(|| RunsError::not_found(format!("Run '{run_id}' not found.")))
}
