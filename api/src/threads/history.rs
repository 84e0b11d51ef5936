//! Time travel, the read side: a thread's checkpoints newest first
//! (`/threads/{id}/history`) and its state at one of them
//! (`/threads/{id}/state/{checkpoint_id}`, `/state/checkpoint`). A
//! checkpoint id is the thread's step right after the step that made it
//! (see `deepfleet_store::history`).

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, RawQuery, State};
use axum::{Extension, Json};
use deepfleet_proto::Caller;
use deepfleet_proto::api::{
    CheckpointPointer, ThreadHistoryParams, ThreadState, ThreadStateCheckpointParams,
};
use deepfleet_store::{CheckpointState, HistoryQuery};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::checkpoint_ref::{checkpoint_ref, metadata, parent_ref, source_named};
use crate::error::{ApiError, Body};
use crate::routes::{READ, Routes};
use crate::search::DEFAULT_LIMIT;
use crate::select::Select;
use crate::state::ApiState;
use crate::threads::{state_select, thread_state, waiting};
use deepfleet_scheduler::convert::{Waiting, show_waiting, thread_values};
use deepfleet_scheduler::runs::threads::load;

/// The most checkpoints one history page holds: each is the whole
/// thread as it was then.
pub const MAX_HISTORY_LIMIT: usize = 1000;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .get("/threads/{thread_id}/history", READ, history_get)
        .post("/threads/{thread_id}/history", READ, history_post)
        .post("/threads/{thread_id}/state/checkpoint", READ, state_at_post)
        .get(
            "/threads/{thread_id}/state/{checkpoint_id}",
            READ,
            state_at_get,
        )
}

/// `GET /threads/{id}/history`'s query parameters.
#[derive(Debug, Default, Deserialize)]
struct HistoryGetQuery {
    limit: Option<usize>,
    before: Option<String>,
}

async fn history_get(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: Result<Query<HistoryGetQuery>, QueryRejection>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Vec<Value>>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::unprocessable(e.body_text()))?;
    let params = ThreadHistoryParams {
        limit: query.limit,
        before: query.before.map(CheckpointPointer::Id),
        select: Select::from_query(raw.as_deref()),
        ..ThreadHistoryParams::default()
    };
    history(&state, &caller, &id, &params).await
}

/// The body is optional: none is the default page.
async fn history_post(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Vec<Value>>, ApiError> {
    let params = if body.iter().all(u8::is_ascii_whitespace) {
        ThreadHistoryParams::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => ApiError::unprocessable(e.to_string()),
            _ => ApiError::bad_request(e.to_string()),
        })?
    };
    history(&state, &caller, &id, &params).await
}

async fn history(
    state: &ApiState,
    caller: &Caller,
    id: &str,
    params: &ThreadHistoryParams,
) -> Result<Json<Vec<Value>>, ApiError> {
    let select = state_select(params.select.as_deref())?;
    let record = load(&state.runs, &caller.tenant, id).await?;
    let Some((mut query, notes)) = history_query(params)? else {
        return Ok(Json(Vec::new()));
    };
    let limit = query.limit;
    if !notes.is_empty() {
        // Notes are matched here, so the store pages over all it may.
        query.limit = MAX_HISTORY_LIMIT;
    }
    let mut found = state.store().checkpoints(&record.thread_id, &query).await?;
    found.retain(|c| noted(c, &notes));
    found.truncate(limit);
    let waiting = waiting(state, &record).await?;
    Ok(Json(
        found
            .iter()
            .map(|c| select.apply(&checkpoint_state(&record.thread_id, c, waiting.as_ref())))
            .collect(),
    ))
}

async fn state_at_get(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((id, checkpoint_id)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let select = Select::from_query(raw.as_deref());
    state_at(
        &state,
        &caller,
        &id,
        Some(&checkpoint_id),
        select.as_deref(),
    )
    .await
}

async fn state_at_post(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Body(body): Body<ThreadStateCheckpointParams>,
) -> Result<Json<Value>, ApiError> {
    let select = body.select.as_deref();
    state_at(&state, &caller, &id, body.checkpoint.id(), select).await
}

/// The thread at `checkpoint_id`, or as it is now when none is named,
/// with the fields `select` names.
async fn state_at(
    state: &ApiState,
    caller: &Caller,
    id: &str,
    checkpoint_id: Option<&str>,
    select: Option<&[String]>,
) -> Result<Json<Value>, ApiError> {
    let select = state_select(select)?;
    let record = load(&state.runs, &caller.tenant, id).await?;
    let Some(checkpoint_id) = checkpoint_id else {
        return Ok(Json(select.apply(&thread_state(state, &record).await?)));
    };
    let not_found = || ApiError::not_found(format!("Checkpoint '{checkpoint_id}' not found."));
    let number = checkpoint_number(checkpoint_id).ok_or_else(not_found)?;
    let found = state
        .store()
        .checkpoint_at(&record.thread_id, number)
        .await?
        .ok_or_else(not_found)?;
    let waiting = waiting(state, &record).await?;
    Ok(Json(select.apply(&checkpoint_state(
        &record.thread_id,
        &found,
        waiting.as_ref(),
    ))))
}

/// Note keys and the values a checkpoint's notes must hold.
type NoteFilter = Map<String, Value>;

/// The store query a history request asks for and the notes its
/// metadata filter wants, or `None` when the filter can match no
/// checkpoint.
fn history_query(
    params: &ThreadHistoryParams,
) -> Result<Option<(HistoryQuery, NoteFilter)>, ApiError> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if limit > MAX_HISTORY_LIMIT {
        return Err(ApiError::unprocessable(format!(
            "limit must be at most {MAX_HISTORY_LIMIT}, got {limit}"
        )));
    }
    let mut query = HistoryQuery::newest(limit);
    query.before = pointed(params.before.as_ref(), "before")?;
    if let Some(at) = pointed(params.checkpoint.as_ref(), "checkpoint")? {
        // That checkpoint and older ones.
        let bound = at.saturating_add(1);
        query.before = Some(query.before.map_or(bound, |b| b.min(bound)));
    }
    let mut notes = Map::new();
    let narrowed = params
        .metadata
        .as_ref()
        .is_none_or(|filter| narrow(filter, &mut query, &mut notes));
    Ok(narrowed.then_some((query, notes)))
}

/// Whether `found`'s notes hold every key of `wanted` with its value.
fn noted(found: &CheckpointState, wanted: &Map<String, Value>) -> bool {
    let notes = found.checkpoint.notes.as_ref().map(|n| &n.metadata);
    wanted
        .iter()
        .all(|(key, value)| notes.and_then(|n| n.get(key)) == Some(value))
}

/// The checkpoint number a request's pointer names (`None` when it names
/// none); a malformed id is a 422 naming `field`.
fn pointed(pointer: Option<&CheckpointPointer>, field: &str) -> Result<Option<u64>, ApiError> {
    pointer
        .and_then(CheckpointPointer::id)
        .map(|raw| {
            checkpoint_number(raw).ok_or_else(|| {
                ApiError::unprocessable(format!("{field}: '{raw}' is not a checkpoint id"))
            })
        })
        .transpose()
}

/// A checkpoint id's number.
fn checkpoint_number(raw: &str) -> Option<u64> {
    raw.parse().ok()
}

/// Narrows `query` by a metadata filter over the keys that say what made
/// a checkpoint (`source`, `step`, `run_id`), and puts the others in
/// `notes` (clients' notes must match them); false when no checkpoint can
/// match (another value of `source`, a step that is not a number).
fn narrow(
    filter: &Map<String, Value>,
    query: &mut HistoryQuery,
    notes: &mut Map<String, Value>,
) -> bool {
    filter
        .iter()
        .all(|(key, value)| match (key.as_str(), value) {
            ("source", Value::String(name)) => match source_named(name) {
                Some(source) if query.source.is_none_or(|s| s == source) => {
                    query.source = Some(source);
                    true
                }
                _ => false,
            },
            ("step", step) => match step.as_u64() {
                Some(step) if query.id.is_none_or(|id| id == step) => {
                    query.id = Some(step);
                    true
                }
                _ => false,
            },
            ("run_id", Value::String(run)) => {
                query.run_id = Some(run.clone());
                true
            }
            ("source" | "run_id", _) => false,
            (key, value) => {
                notes.insert(key.to_owned(), value.clone());
                true
            }
        })
}

/// The ThreadState resource of one checkpoint; the one a run stopped at
/// shows what it waits on.
fn checkpoint_state(
    thread_id: &str,
    found: &CheckpointState,
    waiting: Option<&Waiting>,
) -> ThreadState {
    let mut at = ThreadState {
        values: thread_values(thread_id, &found.checkpoint),
        next: Vec::new(),
        checkpoint: checkpoint_ref(thread_id, found.id),
        metadata: metadata(found),
        created_at: found.created_at,
        parent_checkpoint: parent_ref(thread_id, found),
        tasks: Vec::new(),
        interrupts: Vec::new(),
    };
    show_waiting(&mut at, waiting);
    at
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod router_tests;
