//! `POST /runs/cancel`: many runs cancelled at once, by thread, by id or
//! by status, each as `POST /threads/{id}/runs/{run_id}/cancel` would.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use deepfleet_proto::api::{CancelStatus, RunCancelManyParams, RunCancelManyQuery};
use deepfleet_proto::keys::records::{tenant_threads, thread_runs};
use deepfleet_proto::{Caller, TenantId};
use deepfleet_store::Order;

use crate::error::{ApiError, Body, QueryString};
use crate::routes::{Routes, SUBMIT};
use crate::runs::rolls_back;
use crate::state::ApiState;
use deepfleet_scheduler::repo::queued::queued;
use deepfleet_scheduler::repo::runs::{RunMeta, runs_of};
use deepfleet_scheduler::repo::threads::threads as thread_records;
use deepfleet_scheduler::runs::threads as owned_threads;

/// The most run ids one request names, so a request's work is bounded.
pub const MAX_RUN_IDS: usize = 1000;

pub(crate) fn routes() -> Routes {
    Routes::new().post("/runs/cancel", SUBMIT, cancel_many)
}

/// Every named run is found first, so an unknown one (404) cancels
/// nothing; runs that already ended are left as they are. Without a
/// thread or ids, `status` picks among all the caller's threads' runs
/// (a walk over them; a stateless run's temporary thread is not listed,
/// so its runs are cancelled by id).
async fn cancel_many(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    QueryString(query): QueryString<RunCancelManyQuery>,
    Body(body): Body<RunCancelManyParams>,
) -> Result<StatusCode, ApiError> {
    let rollback = rolls_back(query.action.or(body.action).as_deref())?;
    let cancel = Cancel {
        state: &state,
        wanted: body.status.unwrap_or_default(),
        rollback,
    };
    match (&body.thread_id, &body.run_ids) {
        (_, Some(ids)) if ids.len() > MAX_RUN_IDS => {
            return Err(ApiError::unprocessable(format!(
                "run_ids must hold at most {MAX_RUN_IDS} ids, got {}",
                ids.len()
            )));
        }
        (thread_id, Some(ids)) => {
            for meta in named(&state, &caller.tenant, thread_id.as_deref(), ids).await? {
                cancel.one(meta).await?;
            }
        }
        (Some(thread_id), None) => {
            owned_threads::load(&state.runs, &caller.tenant, thread_id).await?;
            cancel.thread(thread_id).await?;
        }
        (None, None) if body.status.is_some() => {
            let repo = thread_records(state.store());
            let mut walk = repo.walk(tenant_threads(caller.tenant.as_str()), Order::Ascending);
            while let Some(thread) = walk.next().await? {
                if thread.tenant == caller.tenant {
                    cancel.thread(&thread.thread_id).await?;
                }
            }
        }
        (None, None) => {
            return Err(ApiError::unprocessable(
                "name the runs to cancel: a thread_id, run_ids or a status",
            ));
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Cancelling the runs a request picked, one at a time as they are read,
/// so a thread (or a tenant) with many runs is walked, never held whole.
struct Cancel<'a> {
    state: &'a ApiState,
    wanted: CancelStatus,
    rollback: bool,
}

impl Cancel<'_> {
    /// Cancels `meta` if its status is wanted (an ended run is left as
    /// it is).
    async fn one(&self, mut meta: RunMeta) -> Result<(), ApiError> {
        if !self
            .wanted
            .takes(self.state.runs.life.run_status(&meta).await?.0)
        {
            return Ok(());
        }
        self.state.runs.life.cancel(&mut meta).await?;
        if self.rollback {
            self.state
                .runs
                .life
                .roll_back(&meta.thread_id, &meta.run_id)
                .await?;
        }
        Ok(())
    }

    /// Cancels each wanted run of `thread_id`. A rollback drops runs from
    /// the very list being walked, which would shift the walk past some:
    /// it reads the thread's list first.
    async fn thread(&self, thread_id: &str) -> Result<(), ApiError> {
        let repo = runs_of(self.state.store(), thread_id);
        let mut walk = repo.walk(thread_runs(thread_id), Order::Ascending);
        if self.rollback {
            for meta in walk.all().await? {
                self.one(meta).await?;
            }
            return Ok(());
        }
        while let Some(meta) = walk.next().await? {
            self.one(meta).await?;
        }
        Ok(())
    }
}

/// The runs named by id, of `thread_id` when given, else found by id
/// alone (a queued run by its queue entry, a started one by its record).
async fn named(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: Option<&str>,
    ids: &[String],
) -> Result<Vec<RunMeta>, ApiError> {
    if let Some(thread_id) = thread_id {
        owned_threads::load(&state.runs, tenant, thread_id).await?;
    }
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let thread = match thread_id {
            Some(thread) => Some(thread.to_owned()),
            None => thread_of(state, id).await?,
        };
        let meta = match thread {
            Some(thread) => runs_of(state.store(), &thread).get(id).await?,
            None => None,
        };
        match meta.filter(|m| m.tenant == *tenant) {
            Some(meta) => out.push(meta),
            None => return Err(ApiError::not_found(format!("Run '{id}' not found."))),
        }
    }
    Ok(out)
}

/// The thread of a run known only by id.
async fn thread_of(state: &ApiState, run_id: &str) -> Result<Option<String>, ApiError> {
    if let Some(meta) = queued(state.store()).get(run_id).await? {
        return Ok(Some(meta.thread_id));
    }
    let record = state.store().find_run(run_id).await?;
    Ok(record.map(|r| r.thread_id))
}

#[cfg(test)]
#[path = "bulk_cancel_tests.rs"]
mod router_tests;
