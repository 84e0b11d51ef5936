//! Batches: thousands of stateless runs created at once
//! (`POST /runs/batch`) and followed as one resource: counts by status
//! (`GET /batches/{id}`) and results page by page
//! (`GET /batches/{id}/runs?offset=&limit=`).

use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use chrono::Utc;
use deepfleet_proto::api::batch::BatchRunError;
use deepfleet_proto::api::{
    BatchCounts, BatchResponse, BatchRun, BatchRunsQuery, BatchRunsResponse, Run, RunCreateParams,
};
use deepfleet_proto::keys::records::batch_members;
use deepfleet_proto::{Caller, TenantId};
use deepfleet_store::Order;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, Body, QueryString};
use crate::routes::{READ, Routes, SUBMIT};
use crate::state::ApiState;
use deepfleet_scheduler::lifecycle::status::api_status;
use deepfleet_scheduler::repo::batches::{BatchHeader, BatchMember, batches, members};
use deepfleet_scheduler::repo::runs::{RunMeta, runs_of};
use deepfleet_scheduler::runs::create::create_checked;
use deepfleet_scheduler::runs::created_resource;
use deepfleet_scheduler::runs::in_flight;
use deepfleet_scheduler::runs::request::{self as run_request, CheckedRun};
use deepfleet_scheduler::runs::run_resource;

/// Most results per page.
const MAX_PAGE: usize = 1000;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .post("/runs/batch", SUBMIT, create_batch)
        .get("/batches/{batch_id}", READ, counts)
        .get("/batches/{batch_id}/runs", READ, page)
}

/// The most runs one `POST /runs/batch` creates: each is checked, then
/// created, within the request's head timeout, so a larger batch could
/// be cut off part-way and duplicated by the client's retry.
pub const MAX_BATCH_RUNS: usize = 1_000;

/// The request header that makes `POST /runs/batch` idempotent: a retry
/// with the same key (and the same runs) answers the batch the first
/// request made instead of making another.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The longest idempotency key taken.
const MAX_KEY_LEN: usize = 255;

/// Creates every run of the array (stateless, each on its own thread) and
/// records them as one batch, followed with `GET /batches/{batch_id}`.
/// With an `Idempotency-Key`, the batch's id follows from the tenant and
/// the key, so a retry finds the batch the first request made.
async fn create_batch(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
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
    let key = idempotency_key(&headers)?;
    let (batch_id, fingerprint) = match key {
        Some(key) => (
            keyed_batch_id(&caller.tenant, key),
            Some(fingerprint(&bodies)),
        ),
        None => (uuid::Uuid::now_v7().to_string(), None),
    };
    if let Some(fingerprint) = &fingerprint
        && let Some(made) = batches(state.store())
            .get_owned(&batch_id, &caller.tenant)
            .await?
    {
        return Ok(Json(made_before(&state, &made, fingerprint).await?));
    }
    let metas = create(&state, &caller.tenant, &batch_id, &bodies, fingerprint).await?;
    Ok(Json(
        metas.iter().map(|m| batch_run(m, &batch_id)).collect(),
    ))
}

/// The Run resource of a batch's run, naming its batch.
fn batch_run(meta: &RunMeta, batch_id: &str) -> Run {
    let mut run = created_resource(meta);
    run.metadata
        .insert("batch_id".into(), Value::String(batch_id.to_owned()));
    run
}

/// The request's idempotency key: 1 to [`MAX_KEY_LEN`] visible ASCII
/// characters, or none.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let key = value.to_str().ok().map(str::trim).filter(|k| {
        !k.is_empty() && k.len() <= MAX_KEY_LEN && k.bytes().all(|b| b.is_ascii_graphic())
    });
    key.map(Some).ok_or_else(|| {
        ApiError::unprocessable(format!(
            "Idempotency-Key: 1 to {MAX_KEY_LEN} visible ASCII characters"
        ))
    })
}

/// The id of `tenant`'s batch made with idempotency key `key`: another
/// tenant's same key names another batch.
fn keyed_batch_id(tenant: &TenantId, key: &str) -> String {
    let name = format!(
        "deepfleet/api-batch/{}:{tenant}/{key}",
        tenant.as_str().len()
    );
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string()
}

/// The SHA-256 of the runs a request asks for, as JSON.
fn fingerprint(bodies: &[RunCreateParams]) -> String {
    let bytes = serde_json::to_vec(bodies).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The answer to a retry of the request that made `made`: its runs as
/// the first answer gave them, once all of them exist. A retry that asks
/// for other runs is a 422; one that arrives while the first request is
/// still making them (or after it was cut off) is a 409 that says how far
/// it got, and makes nothing.
async fn made_before(
    state: &ApiState,
    made: &BatchHeader,
    fingerprint: &str,
) -> Result<Vec<Run>, ApiError> {
    let batch_id = &made.batch_id;
    if made.fingerprint.as_deref() != Some(fingerprint) {
        return Err(ApiError::unprocessable(format!(
            "Idempotency-Key: batch {batch_id} was made with this key for other runs"
        )));
    }
    let list: Vec<BatchMember> = members(state.store(), batch_id)
        .walk(batch_members(batch_id), Order::Ascending)
        .all()
        .await?;
    if list.len() < made.total {
        return Err(ApiError::conflict(format!(
            "Batch {batch_id} of this Idempotency-Key has {} of its {} runs: it is being made, \
             or its request was cut off; GET /batches/{batch_id} follows what exists",
            list.len(),
            made.total
        )));
    }
    let mut runs = Vec::with_capacity(list.len());
    for member in &list {
        if let Some(meta) = runs_of(state.store(), &member.thread_id)
            .get(&member.run_id)
            .await?
        {
            runs.push(batch_run(&meta, batch_id));
        }
    }
    Ok(runs)
}

/// Creates the runs of a batch and records them under `batch_id`. Every
/// request is checked first: one bad run refuses the batch, and nothing
/// of it is written.
async fn create(
    state: &ApiState,
    tenant: &TenantId,
    batch_id: &str,
    bodies: &[RunCreateParams],
    fingerprint: Option<String>,
) -> Result<Vec<RunMeta>, ApiError> {
    let mut requests: Vec<(RunCreateParams, CheckedRun)> = Vec::with_capacity(bodies.len());
    for (index, body) in bodies.iter().enumerate() {
        let mut body = body.clone();
        body.metadata
            .get_or_insert_with(Map::new)
            .insert("batch_id".into(), Value::String(batch_id.to_owned()));
        let checked = run_request::check(&state.runs, tenant, None, &body)
            .await
            .map_err(|e| ApiError::from(e).within(&format!("runs[{index}]")))?;
        requests.push((body, checked));
    }
    in_flight::check(&state.runs, tenant, requests.len()).await?;
    let header = BatchHeader {
        batch_id: batch_id.to_owned(),
        tenant: tenant.clone(),
        total: bodies.len(),
        created_at: Utc::now(),
        fingerprint,
    };
    let repo = batches(state.store());
    if header.fingerprint.is_some() {
        // Two requests with one key at once: the one that made the header
        // makes the runs; the other answers as a retry would.
        if !repo.insert(batch_id, &header).await? {
            return Err(ApiError::conflict(format!(
                "Batch {batch_id} of this Idempotency-Key is being made; retry to get its runs"
            )));
        }
    } else {
        repo.put(batch_id, &header).await?;
    }
    let roster = members(state.store(), batch_id);
    let mut metas = Vec::with_capacity(bodies.len());
    for (index, (body, checked)) in (0u64..).zip(requests) {
        let meta = create_checked(
            &state.runs,
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
            counts.add(run_resource(&state.runs, &meta).await?.status);
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
