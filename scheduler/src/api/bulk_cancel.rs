//! `POST /runs/cancel`: many runs cancelled at once, by thread, by id or
//! by status, each as `POST /threads/{id}/runs/{run_id}/cancel` would.

use axum::Extension;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use deepfleet_proto::api::{RunCancelManyParams, RunCancelManyQuery};
use deepfleet_proto::keys::records::{tenant_threads, thread_runs};
use deepfleet_proto::{Caller, TenantId};
use deepfleet_store::Order;

use super::error::{ApiError, Body, QueryString};
use super::runs::rolls_back;
use super::state::ApiState;
use super::threads;
use crate::repo::queued::queued;
use crate::repo::runs::{RunMeta, runs_of};
use crate::repo::threads::threads as thread_records;

/// The most run ids one request names, so a request's work is bounded.
pub const MAX_RUN_IDS: usize = 1000;

pub(super) fn routes() -> Router<ApiState> {
    Router::new().route("/runs/cancel", post(cancel_many))
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
    let wanted = body.status.unwrap_or_default();
    let candidates = match (&body.thread_id, &body.run_ids) {
        (_, Some(ids)) if ids.len() > MAX_RUN_IDS => {
            return Err(ApiError::unprocessable(format!(
                "run_ids must hold at most {MAX_RUN_IDS} ids, got {}",
                ids.len()
            )));
        }
        (thread_id, Some(ids)) => named(&state, &caller.tenant, thread_id.as_deref(), ids).await?,
        (Some(thread_id), None) => {
            threads::load(&state, &caller.tenant, thread_id).await?;
            runs_of_thread(&state, thread_id).await?
        }
        (None, None) if body.status.is_some() => all_of(&state, &caller.tenant).await?,
        (None, None) => {
            return Err(ApiError::unprocessable(
                "name the runs to cancel: a thread_id, run_ids or a status",
            ));
        }
    };
    for mut meta in candidates {
        if !wanted.takes(state.life.run_status(&meta).await?.0) {
            continue;
        }
        state.life.cancel(&mut meta).await?;
        if rollback {
            state.life.forget(&meta.thread_id, &meta.run_id).await?;
        }
    }
    Ok(StatusCode::NO_CONTENT)
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
        threads::load(state, tenant, thread_id).await?;
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

/// Every run of a thread.
async fn runs_of_thread(state: &ApiState, thread_id: &str) -> Result<Vec<RunMeta>, ApiError> {
    let repo = runs_of(state.store(), thread_id);
    Ok(repo
        .walk(thread_runs(thread_id), Order::Ascending)
        .all()
        .await?)
}

/// Every run of the tenant's listed threads.
async fn all_of(state: &ApiState, tenant: &TenantId) -> Result<Vec<RunMeta>, ApiError> {
    let repo = thread_records(state.store());
    let mut walk = repo.walk(tenant_threads(tenant.as_str()), Order::Ascending);
    let mut out = Vec::new();
    while let Some(thread) = walk.next().await? {
        if thread.tenant == *tenant {
            out.extend(runs_of_thread(state, &thread.thread_id).await?);
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "bulk_cancel_tests.rs"]
mod router_tests;
