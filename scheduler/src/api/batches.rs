//! Batches: thousands of stateless runs created at once
//! (`POST /runs/batch`) and followed as one resource: counts by status
//! (`GET /batches/{id}`) and results page by page
//! (`GET /batches/{id}/runs?offset=&limit=`).

use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::ApiState;
use super::error::ApiError;
use super::runs::{RunCreate, create_run, run_json};
use crate::lifecycle::{RunMeta, thread_runs};

/// Record kind of batch headers.
const BATCHES: &str = "batches";
/// Most results per page.
const MAX_PAGE: usize = 1000;

fn members(batch_id: &str) -> String {
    format!("batch/{batch_id}")
}

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/batches/{batch_id}", get(counts))
        .route("/batches/{batch_id}/runs", get(page))
}

/// Creates the runs of a batch and records them under `batch_id`.
pub async fn create(
    state: &ApiState,
    batch_id: &str,
    bodies: &[RunCreate],
) -> Result<Vec<RunMeta>, ApiError> {
    let header = json!({"batch_id": batch_id, "total": bodies.len(), "created_at": Utc::now()});
    state
        .life
        .store()
        .put_record(BATCHES, batch_id, &header)
        .await?;
    let mut metas = Vec::with_capacity(bodies.len());
    for (i, body) in bodies.iter().enumerate() {
        let mut body = body.clone();
        body.metadata
            .get_or_insert_with(Map::new)
            .insert("batch_id".into(), Value::String(batch_id.to_owned()));
        let meta = create_run(state, None, &body, Some(batch_id.to_owned())).await?;
        let member = json!({"index": i, "run_id": meta.run_id, "thread_id": meta.thread_id});
        state
            .life
            .store()
            .put_record(&members(batch_id), &meta.run_id, &member)
            .await?;
        metas.push(meta);
    }
    Ok(metas)
}

/// The batch's members in submission order.
async fn load_members(state: &ApiState, batch_id: &str) -> Result<Vec<(String, String)>, ApiError> {
    if state
        .life
        .store()
        .get_record(BATCHES, batch_id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(format!(
            "Batch '{batch_id}' not found."
        )));
    }
    let mut list: Vec<(u64, String, String)> = state
        .life
        .store()
        .list_records(&members(batch_id))
        .await?
        .into_iter()
        .filter_map(|m| {
            Some((
                m["index"].as_u64()?,
                m["run_id"].as_str()?.to_owned(),
                m["thread_id"].as_str()?.to_owned(),
            ))
        })
        .collect();
    list.sort();
    Ok(list.into_iter().map(|(_, r, t)| (r, t)).collect())
}

async fn counts(
    State(state): State<ApiState>,
    Path(batch_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let list = load_members(&state, &batch_id).await?;
    let mut counts: Map<String, Value> = ["pending", "running", "success", "error", "interrupted"]
        .iter()
        .map(|s| ((*s).to_owned(), json!(0)))
        .collect();
    for (run_id, thread_id) in &list {
        if let Some(meta) = state
            .life
            .record::<RunMeta>(&thread_runs(thread_id), run_id)
            .await?
        {
            let run = run_json(&state, &meta).await?;
            let status = run["status"].as_str().unwrap_or("pending").to_owned();
            let n = counts.get(&status).and_then(Value::as_u64).unwrap_or(0);
            counts.insert(status, json!(n + 1));
        }
    }
    Ok(Json(
        json!({"batch_id": batch_id, "total": list.len(), "counts": counts}),
    ))
}

#[derive(Deserialize)]
struct PageQuery {
    offset: Option<usize>,
    limit: Option<usize>,
}

async fn page(
    State(state): State<ApiState>,
    Path(batch_id): Path<String>,
    Query(query): Query<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let list = load_members(&state, &batch_id).await?;
    let offset = query.offset.unwrap_or(0);
    let limit = query.limit.unwrap_or(100).clamp(1, MAX_PAGE);
    let mut runs = Vec::new();
    for (run_id, thread_id) in list.iter().skip(offset).take(limit) {
        let record = state.life.store().get_run(thread_id, run_id).await?;
        let status = record
            .as_ref()
            .map(|r| crate::lifecycle::api_status(r.status))
            .unwrap_or("pending");
        runs.push(json!({
            "run_id": run_id,
            "thread_id": thread_id,
            "status": status,
            "output": record.as_ref().and_then(|r| r.output.clone()),
            "error": record.as_ref().and_then(|r| r.error.as_ref().map(|e| json!({"code": e.code, "message": e.message}))),
            "usage": record.as_ref().map(|r| r.usage),
        }));
    }
    let next = offset + runs.len();
    Ok(Json(json!({
        "runs": runs,
        "next_offset": (next < list.len()).then_some(next),
    })))
}
