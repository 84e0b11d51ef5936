//! Threads: create, get, search, delete, state and history.

use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use deepfleet_proto::RunStatus;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::ApiState;
use super::convert::{self, thread_values};
use super::error::{ApiError, Body};
use crate::lifecycle::{THREADS, ThreadRecord, occupies_thread};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/threads", post(create))
        .route("/threads/search", post(search))
        .route("/threads/{thread_id}", get(get_one).delete(delete))
        .route("/threads/{thread_id}/state", get(state_of))
        .route("/threads/{thread_id}/history", get(history).post(history))
}

#[derive(Deserialize, Default)]
struct ThreadCreate {
    thread_id: Option<String>,
    metadata: Option<Map<String, Value>>,
    if_exists: Option<String>,
}

async fn create(
    State(state): State<ApiState>,
    Body(body): Body<ThreadCreate>,
) -> Result<Json<Value>, ApiError> {
    let id = body
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let record = ThreadRecord::new(id.clone(), body.metadata.unwrap_or_default());
    let value = serde_json::to_value(&record)
        .map_err(|e| ApiError::unprocessable(format!("thread: {e}")))?;
    if !state
        .life
        .store()
        .insert_record(THREADS, &id, &value)
        .await?
    {
        match body.if_exists.as_deref() {
            Some("do_nothing") => {}
            _ => return Err(ApiError::conflict(format!("Thread '{id}' already exists."))),
        }
    }
    let record = load(&state, &id).await?;
    Ok(Json(thread_json(&state, &record).await?))
}

#[derive(Deserialize, Default)]
struct ThreadSearch {
    metadata: Option<Map<String, Value>>,
    status: Option<String>,
    limit: Option<usize>,
    offset: Option<usize>,
}

async fn search(
    State(state): State<ApiState>,
    Body(body): Body<ThreadSearch>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let mut records: Vec<ThreadRecord> = state
        .life
        .store()
        .list_records(THREADS)
        .await?
        .into_iter()
        .filter_map(|v| serde_json::from_value::<ThreadRecord>(v).ok())
        .filter(|t| !t.temporary)
        .filter(|t| {
            body.metadata
                .as_ref()
                .is_none_or(|m| m.iter().all(|(k, v)| t.metadata.get(k) == Some(v)))
        })
        .collect();
    // Newest first, as the reference sorts by default.
    records.sort_by_key(|t| std::cmp::Reverse(t.created_at));
    let mut out = Vec::new();
    for record in records {
        let thread = thread_json(&state, &record).await?;
        if body.status.as_ref().is_none_or(|s| thread["status"] == *s) {
            out.push(thread);
        }
    }
    Ok(Json(
        out.into_iter()
            .skip(body.offset.unwrap_or(0))
            .take(body.limit.unwrap_or(10))
            .collect(),
    ))
}

async fn get_one(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = load(&state, &id).await?;
    Ok(Json(thread_json(&state, &record).await?))
}

async fn delete(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = load(&state, &id).await?;
    if let Some(run) = state.life.active_run(&record).await? {
        state.life.store().request_cancel(&id, &run.run_id).await?;
    }
    state.life.store().delete_record(THREADS, &id).await?;
    Ok(Json(json!({})))
}

async fn state_of(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let record = load(&state, &id).await?;
    Ok(Json(thread_state(&state, &record).await?))
}

/// The history holds one checkpoint, the current one: the message log is
/// append-only, so earlier states are prefixes of it, but they are not
/// kept as separate checkpoints.
async fn history(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let record = load(&state, &id).await?;
    Ok(Json(vec![thread_state(&state, &record).await?]))
}

/// Loads a thread record or answers 404.
pub async fn load(state: &ApiState, id: &str) -> Result<ThreadRecord, ApiError> {
    state
        .life
        .record::<ThreadRecord>(THREADS, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Thread '{id}' not found.")))
}

/// `idle`, `busy` (a run in flight or queued), `interrupted` (the last run
/// waits for a human) or `error`.
pub async fn thread_status(
    state: &ApiState,
    record: &ThreadRecord,
) -> Result<&'static str, ApiError> {
    let Some(run_id) = &record.active_run else {
        let queued = state.life.queued(&record.thread_id).await?;
        return Ok(if queued.is_empty() { "idle" } else { "busy" });
    };
    let run = state
        .life
        .store()
        .get_run(&record.thread_id, run_id)
        .await?;
    let status = run.map(|r| r.status);
    if status.is_some_and(occupies_thread)
        || !state.life.queued(&record.thread_id).await?.is_empty()
    {
        return Ok("busy");
    }
    Ok(match status {
        Some(RunStatus::Interrupted) => "interrupted",
        Some(RunStatus::Error) => "error",
        _ => "idle",
    })
}

/// The Thread resource.
pub async fn thread_json(state: &ApiState, record: &ThreadRecord) -> Result<Value, ApiError> {
    let status = thread_status(state, record).await?;
    let checkpoint = state.life.store().load_thread(&record.thread_id).await?;
    let values = if checkpoint.messages.is_empty() && checkpoint.files.is_empty() {
        Value::Null
    } else {
        thread_values(&record.thread_id, &checkpoint)
    };
    let interrupts = match (status, &record.active_run) {
        ("interrupted", Some(run_id)) => {
            convert::interrupts(&checkpoint, run_id).map(|i| json!({ run_id.as_str(): i }))
        }
        _ => None,
    };
    Ok(json!({
        "thread_id": record.thread_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "metadata": record.metadata,
        "status": status,
        "values": values,
        "interrupts": interrupts.unwrap_or_else(|| json!({})),
    }))
}

/// The ThreadState resource of the thread's current checkpoint.
pub async fn thread_state(state: &ApiState, record: &ThreadRecord) -> Result<Value, ApiError> {
    let checkpoint = state.life.store().load_thread(&record.thread_id).await?;
    let checkpoint_id = format!("{}", checkpoint.step);
    Ok(json!({
        "values": thread_values(&record.thread_id, &checkpoint),
        "next": [],
        "checkpoint": {
            "thread_id": record.thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
            "checkpoint_map": null,
        },
        "metadata": {"step": checkpoint.step},
        "created_at": record.updated_at,
        "parent_checkpoint": null,
        "tasks": [],
        "interrupts": [],
    }))
}
