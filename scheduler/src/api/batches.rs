//! Batches: thousands of stateless runs created at once
//! (`POST /runs/batch`) and followed as one resource: counts by status
//! (`GET /batches/{id}`) and results page by page
//! (`GET /batches/{id}/runs?offset=&limit=`).

use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use chrono::Utc;
use deepfleet_proto::api::batch::BatchRunError;
use deepfleet_proto::api::{
    BatchCounts, BatchResponse, BatchRun, BatchRunsQuery, BatchRunsResponse, Run, RunCreateParams,
};
use deepfleet_proto::keys::records::batch_members;
use deepfleet_proto::{Caller, TenantId};
use deepfleet_store::Order;
use serde_json::{Map, Value};

use super::error::{ApiError, Body, QueryString};
use super::in_flight;
use super::routes::{READ, Routes, SUBMIT};
use super::run_create::create_checked;
use super::run_request::{self, CheckedRun};
use super::run_resource::{created_resource, run_resource};
use super::state::ApiState;
use crate::lifecycle::status::api_status;
use crate::repo::batches::{BatchHeader, BatchMember, batches, members};
use crate::repo::runs::{RunMeta, runs_of};

/// Most results per page.
const MAX_PAGE: usize = 1000;

pub(super) fn routes() -> Routes {
    Routes::new()
        .post("/runs/batch", SUBMIT, create_batch)
        .get("/batches/{batch_id}", READ, counts)
        .get("/batches/{batch_id}/runs", READ, page)
}

/// The most runs one `POST /runs/batch` creates: each is checked, then
/// created, within the request's head timeout, so a larger batch could
/// be cut off part-way and duplicated by the client's retry.
pub const MAX_BATCH_RUNS: usize = 1_000;

/// Creates every run of the array (stateless, each on its own thread) and
/// records them as one batch, followed with `GET /batches/{batch_id}`.
async fn create_batch(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(bodies): Body<Vec<RunCreateParams>>,
) -> Result<Json<Vec<Run>>, ApiError> {
    if bodies.is_empty() {
        return Err(ApiError::unprocessable("a batch needs at least one run"));
    }
    if bodies.len() > MAX_BATCH_RUNS {
        return Err(ApiError::unprocessable(format!(
            "a batch request holds at most {MAX_BATCH_RUNS} runs, not {}: send the rest as \
             further batches",
            bodies.len()
        )));
    }
    let batch_id = uuid::Uuid::now_v7().to_string();
    let metas = create(&state, &caller.tenant, &batch_id, &bodies).await?;
    let mut out = Vec::with_capacity(metas.len());
    for meta in &metas {
        let mut run = created_resource(meta);
        run.metadata
            .insert("batch_id".into(), Value::String(batch_id.clone()));
        out.push(run);
    }
    Ok(Json(out))
}

/// Creates the runs of a batch and records them under `batch_id`. Every
/// request is checked first: one bad run refuses the batch, and nothing
/// of it is written.
async fn create(
    state: &ApiState,
    tenant: &TenantId,
    batch_id: &str,
    bodies: &[RunCreateParams],
) -> Result<Vec<RunMeta>, ApiError> {
    let mut requests: Vec<(RunCreateParams, CheckedRun)> = Vec::with_capacity(bodies.len());
    for (index, body) in bodies.iter().enumerate() {
        let mut body = body.clone();
        body.metadata
            .get_or_insert_with(Map::new)
            .insert("batch_id".into(), Value::String(batch_id.to_owned()));
        let checked = run_request::check(state, tenant, None, &body)
            .await
            .map_err(|e| e.within(&format!("runs[{index}]")))?;
        requests.push((body, checked));
    }
    in_flight::check(state, tenant, requests.len()).await?;
    let header = BatchHeader {
        batch_id: batch_id.to_owned(),
        tenant: tenant.clone(),
        total: bodies.len(),
        created_at: Utc::now(),
    };
    batches(state.store()).put(batch_id, &header).await?;
    let roster = members(state.store(), batch_id);
    let mut metas = Vec::with_capacity(bodies.len());
    for (index, (body, checked)) in (0u64..).zip(requests) {
        let meta = create_checked(
            state,
            tenant,
            None,
            &body,
            checked,
            Some(batch_id.to_owned()),
        )
        .await?;
        let member = BatchMember {
            index,
            run_id: meta.run_id.clone(),
            thread_id: meta.thread_id.clone(),
        };
        roster.put(&meta.run_id, &member).await?;
        expire_if_ended(state, batch_id, &meta).await?;
        metas.push(meta);
    }
    Ok(metas)
}

/// A run can end, and set its batch's records to expire, before its
/// member record is written: the member and the members' index then get
/// the run's retention here, as its end would have given them. A run
/// that ends later finds its member written.
async fn expire_if_ended(state: &ApiState, batch_id: &str, meta: &RunMeta) -> Result<(), ApiError> {
    let store = state.store();
    let Some(run) = store.get_run(&meta.thread_id, &meta.run_id).await? else {
        return Ok(());
    };
    if let Some(secs) = run.expire_after_secs.filter(|_| run.status.is_terminal()) {
        let ttl = Duration::from_secs(secs);
        let index = batch_members(batch_id);
        store.expire_record(&index, &meta.run_id, ttl).await?;
        store.index_expire(&index, ttl).await?;
    }
    Ok(())
}

/// Answers 404 unless `tenant` has batch `batch_id` (another tenant's
/// batch is not found).
async fn check_owner(state: &ApiState, tenant: &TenantId, batch_id: &str) -> Result<(), ApiError> {
    if batches(state.store())
        .get_owned(batch_id, tenant)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(format!(
            "Batch '{batch_id}' not found."
        )));
    }
    Ok(())
}

async fn counts(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(batch_id): Path<String>,
) -> Result<Json<BatchResponse>, ApiError> {
    check_owner(&state, &caller.tenant, &batch_id).await?;
    let roster = members(state.store(), &batch_id);
    let list: Vec<BatchMember> = roster
        .walk(batch_members(&batch_id), Order::Ascending)
        .all()
        .await?;
    let mut counts = BatchCounts::default();
    for member in &list {
        if let Some(meta) = runs_of(state.store(), &member.thread_id)
            .get(&member.run_id)
            .await?
        {
            counts.add(run_resource(&state, &meta).await?.status);
        }
    }
    Ok(Json(BatchResponse {
        batch_id,
        total: list.len(),
        counts,
    }))
}

async fn page(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(batch_id): Path<String>,
    QueryString(query): QueryString<BatchRunsQuery>,
) -> Result<Json<BatchRunsResponse>, ApiError> {
    check_owner(&state, &caller.tenant, &batch_id).await?;
    let offset = query.offset.unwrap_or(0);
    let limit = query.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    let roster = members(state.store(), &batch_id);
    let index = batch_members(&batch_id);
    let total = roster.count(&index).await?;
    let page = roster
        .walk(index, Order::Ascending)
        .from(offset)
        .chunk(limit)
        .take(limit)
        .await?;
    let mut runs = Vec::new();
    for member in &page {
        let record = state
            .store()
            .get_run(&member.thread_id, &member.run_id)
            .await?;
        runs.push(BatchRun {
            run_id: member.run_id.clone(),
            thread_id: member.thread_id.clone(),
            status: record
                .as_ref()
                .map_or(deepfleet_proto::api::RunStatus::Pending, |r| {
                    api_status(r.status)
                }),
            output: record.as_ref().and_then(|r| r.output.clone()),
            error: record.as_ref().and_then(|r| {
                r.error.as_ref().map(|e| BatchRunError {
                    code: e.code,
                    message: e.message.clone(),
                })
            }),
            usage: record.as_ref().map(|r| r.usage),
            by_caller: record.as_ref().map(|r| r.by_caller),
            cost_usd: record
                .as_ref()
                .map(|r| deepfleet_proto::cost::usd(r.cost_nano_usd)),
        });
    }
    let next = offset + runs.len();
    Ok(Json(BatchRunsResponse {
        runs,
        next_offset: (u64::try_from(next).unwrap_or(u64::MAX) < total).then_some(next),
    }))
}

#[cfg(test)]
#[path = "batches_tests.rs"]
mod router_tests;
