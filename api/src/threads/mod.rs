//! Threads: create, get, search, delete and the current state (history
//! and earlier states: `history.rs`; updates: `state_update.rs`).

pub mod copy;
pub mod count;
pub mod history;
pub mod patch;
pub mod prune;
pub mod state_notes;
pub mod state_update;

use std::collections::BTreeMap;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use deepfleet_proto::api::{
    Thread, ThreadCreateParams, ThreadSearchParams, ThreadSortBy, ThreadState, ThreadStatus,
    ThreadSuperstep,
};
use deepfleet_proto::keys::records::tenant_threads;
use deepfleet_proto::{Caller, InputLimits};
use deepfleet_store::{Checkpoint, Order};
use serde_json::{Map, Value, json};

use crate::assistants::graph::is_node;
use crate::checkpoint_ref::{checkpoint_ref, current_metadata, current_parent_ref};
use crate::error::{ApiError, Body, query_list};
use crate::routes::{READ, Routes, SUBMIT};
use crate::search::{Paging, metadata_matches, page_size, values_match};
use crate::select::{Select, fields_of};
use crate::sort::{MAX_SORTED, Sort};
use crate::state::ApiState;
use deepfleet_scheduler::convert::{
    self, Waiting, show_waiting, thread_values, to_json, values_if_any,
};
use deepfleet_scheduler::ids::check_id;
use deepfleet_scheduler::repo::threads::{ThreadRecord, threads};
use deepfleet_scheduler::runs::state_values::state_edit;
use deepfleet_scheduler::runs::threads::load;
use deepfleet_scheduler::state_edit::StateEdit;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .post("/threads", SUBMIT, create)
        .post("/threads/search", READ, search)
        .get("/threads/{thread_id}", READ, get_one)
        .delete("/threads/{thread_id}", SUBMIT, delete)
        .get("/threads/{thread_id}/state", READ, state_of)
}

async fn create(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ThreadCreateParams>,
) -> Result<Json<Thread>, ApiError> {
    // Checked whole before the thread is made: a refused request makes
    // nothing.
    let supersteps = body
        .supersteps
        .as_deref()
        .map(|steps| superstep_edits(steps, state.runs.life.intake().limits()))
        .transpose()?
        .unwrap_or_default();
    let id = body
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    check_id("thread_id", &id).map_err(ApiError::unprocessable)?;
    let record = ThreadRecord {
        ttl: body.ttl,
        ..ThreadRecord::new(
            caller.tenant.clone(),
            id.clone(),
            body.metadata.unwrap_or_default(),
        )
    };
    // An id the store already holds without a record is someone's (a
    // batch's or a subagent's thread): taken, as an existing thread is.
    let unowned = state.runs.life.unowned_thread(&id).await?;
    if !unowned && threads(state.store()).insert(&id, &record).await? {
        for edit in &supersteps {
            state.runs.life.update_state(&id, None, edit).await?;
        }
        state.runs.life.schedule_ttl(&record).await?;
    } else {
        match body.if_exists.as_deref() {
            Some("do_nothing") => {}
            _ => return Err(ApiError::conflict(format!("Thread '{id}' already exists."))),
        }
    }
    let record = load(&state.runs, &caller.tenant, &id).await?;
    Ok(Json(thread_resource(&state, &record).await?))
}

/// Each superstep's updates as one edit, in order; a node that is not the
/// agent loop's, or a command that is more than an update, is a 422.
fn superstep_edits(
    steps: &[ThreadSuperstep],
    limits: &InputLimits,
) -> Result<Vec<StateEdit>, ApiError> {
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let mut edit = StateEdit::default();
            for (j, update) in step.updates.iter().enumerate() {
                let field = format!("supersteps[{i}].updates[{j}]");
                if !is_node(&update.as_node) {
                    return Err(ApiError::unprocessable(format!(
                        "{field}.as_node: node '{}' does not exist",
                        update.as_node
                    )));
                }
                let command = update.command.as_ref();
                if command.is_some_and(|c| c.resume.is_some() || c.goto.is_some()) {
                    return Err(ApiError::unprocessable(format!(
                        "{field}.command: a new thread has nothing to resume or jump in; \
                         only an update applies"
                    )));
                }
                let values = [
                    update.values.as_ref(),
                    command.and_then(|c| c.update.as_ref()),
                ];
                for values in values.into_iter().flatten() {
                    edit.extend(state_edit(&field, values, limits)?);
                }
            }
            Ok(edit)
        })
        .collect()
}

async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<ThreadSearchParams>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let select = Select::parse(
        body.select.as_deref(),
        &fields_of::<Thread>(),
        "a thread",
        false,
    )?;
    if body.extract.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(ApiError::unprocessable(
            "extract is not supported: select the values wanted with select: [\"values.<key>\"]",
        ));
    }
    let sort = Sort::asked(body.sort_by, body.sort_order, ThreadSortBy::as_str);
    let Some(sort) = sort else {
        let filtered = body.metadata.is_some()
            || body.status.is_some()
            || body.values.is_some()
            || body.ids.is_some();
        let paging = Paging::new(body.offset, body.limit, filtered);
        let found = matching_threads(&state, &caller, &body, paging, |thread| thread).await?;
        return Ok(Json(select.apply_all(&found)));
    };
    // Each match is held as its sort key and id alone, and only the page
    // is rendered again whole: a sorted search over thousands of threads
    // never holds their states at once.
    let every = Paging::first(MAX_SORTED + 1);
    let field = sort.field();
    let keys = matching_threads(&state, &caller, &body, every, |thread| {
        let id = thread.thread_id.clone();
        let key = to_json(&thread).get(field).cloned().unwrap_or(Value::Null);
        json!({ field: key, "thread_id": id })
    })
    .await?;
    let page = sort.page(keys, body.offset.unwrap_or(0), page_size(body.limit))?;
    let mut out = Vec::with_capacity(page.len());
    for key in page {
        let Some(id) = key["thread_id"].as_str() else {
            continue;
        };
        // A thread deleted since it matched is left out of the page.
        let Some(record) = threads(state.store()).get_owned(id, &caller.tenant).await? else {
            continue;
        };
        out.push(select.apply(&to_json(&thread_resource(&state, &record).await?)));
    }
    Ok(Json(out))
}

/// `tenant`'s threads that `body` matches, newest first, the page
/// `paging` says, each as `keep` makes it.
async fn matching_threads<T>(
    state: &ApiState,
    caller: &Caller,
    body: &ThreadSearchParams,
    mut paging: Paging,
    mut keep: impl FnMut(Thread) -> T,
) -> Result<Vec<T>, ApiError> {
    let repo = threads(state.store());
    // Newest first, as the reference sorts by default.
    let mut walk = repo
        .walk(tenant_threads(caller.tenant.as_str()), Order::Descending)
        .from(paging.from)
        .chunk(paging.chunk());
    let mut out = Vec::new();
    while out.len() < paging.limit {
        let Some(record) = walk.next().await? else {
            break;
        };
        if record.tenant != caller.tenant
            || !metadata_matches(body.metadata.as_ref(), &record.metadata)
            || body
                .ids
                .as_ref()
                .is_some_and(|ids| !ids.contains(&record.thread_id))
        {
            continue;
        }
        if body.status.is_none() && body.values.is_none() && paging.skips() {
            continue;
        }
        let thread = thread_resource(state, &record).await?;
        if body
            .status
            .as_ref()
            .is_some_and(|s| thread.status.as_str() != s)
            || !values_match(body.values.as_ref(), thread.values.as_ref())
        {
            continue;
        }
        if !paging.skips() {
            out.push(keep(thread));
        }
    }
    Ok(out)
}

/// The fields `GET /threads/{id}?include=` may ask for. The Thread
/// resource always carries them when the thread has them.
const INCLUDABLE: [&str; 1] = ["ttl"];

async fn get_one(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Thread>, ApiError> {
    check_include(query.as_deref())?;
    let record = load(&state.runs, &caller.tenant, &id).await?;
    Ok(Json(thread_resource(&state, &record).await?))
}

/// Refuses an `include` (repeated, or comma-separated) naming a field
/// that is not [`INCLUDABLE`].
fn check_include(query: Option<&str>) -> Result<(), ApiError> {
    for field in query_list(query, "include") {
        if !INCLUDABLE.contains(&field.as_str()) {
            return Err(ApiError::unprocessable(format!(
                "include: '{field}' is not a field to include; expected one of {INCLUDABLE:?}"
            )));
        }
    }
    Ok(())
}

async fn delete(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<Map<String, Value>>, ApiError> {
    let record = load(&state.runs, &caller.tenant, &id).await?;
    state.runs.life.delete_thread(&record).await?;
    Ok(Json(Map::new()))
}

async fn state_of(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let select = state_select(Select::from_query(query.as_deref()).as_deref())?;
    let record = load(&state.runs, &caller.tenant, &id).await?;
    Ok(Json(select.apply(&thread_state(&state, &record).await?)))
}

/// A `select` of a thread state's fields (`values.<key>` narrows its
/// values).
pub fn state_select(select: Option<&[String]>) -> Result<Select, ApiError> {
    Select::parse(select, &fields_of::<ThreadState>(), "a thread state", true)
}

/// What `record`'s thread waits on while it is `interrupted`.
fn waiting_in(
    status: ThreadStatus,
    record: &ThreadRecord,
    checkpoint: &Checkpoint,
) -> Option<Waiting> {
    match (status, &record.active_run) {
        (ThreadStatus::Interrupted, Some(run_id)) => {
            convert::interrupts(checkpoint, run_id).map(|interrupts| Waiting {
                run_id: run_id.clone(),
                step: checkpoint.step,
                interrupts,
            })
        }
        _ => None,
    }
}

/// What `record`'s thread waits on now, if anything.
pub async fn waiting(state: &ApiState, record: &ThreadRecord) -> Result<Option<Waiting>, ApiError> {
    let status = state.runs.life.thread_status(record).await?;
    let checkpoint = state.store().load_thread(&record.thread_id).await?;
    Ok(waiting_in(status, record, &checkpoint))
}

/// The Thread resource.
pub async fn thread_resource(state: &ApiState, record: &ThreadRecord) -> Result<Thread, ApiError> {
    let status = state.runs.life.thread_status(record).await?;
    let checkpoint = state.store().load_thread(&record.thread_id).await?;
    let values = values_if_any(&record.thread_id, &checkpoint);
    let interrupts = waiting_in(status, record, &checkpoint)
        .map(|waiting| BTreeMap::from([(waiting.run_id, waiting.interrupts)]));
    Ok(Thread {
        thread_id: record.thread_id.clone(),
        created_at: record.created_at,
        updated_at: record.updated_at,
        metadata: record.metadata.clone(),
        status,
        values,
        interrupts: interrupts.unwrap_or_default(),
        ttl: record.ttl,
    })
}

/// The ThreadState resource of the thread's current checkpoint.
pub async fn thread_state(
    state: &ApiState,
    record: &ThreadRecord,
) -> Result<ThreadState, ApiError> {
    let status = state.runs.life.thread_status(record).await?;
    let checkpoint = state.store().load_thread(&record.thread_id).await?;
    let mut current = ThreadState {
        values: thread_values(&record.thread_id, &checkpoint),
        next: Vec::new(),
        checkpoint: checkpoint_ref(&record.thread_id, checkpoint.step),
        metadata: current_metadata(&checkpoint),
        created_at: record.updated_at,
        parent_checkpoint: current_parent_ref(&record.thread_id, &checkpoint),
        tasks: Vec::new(),
        interrupts: Vec::new(),
    };
    show_waiting(
        &mut current,
        waiting_in(status, record, &checkpoint).as_ref(),
    );
    Ok(current)
}

#[cfg(test)]
#[path = "threads_tests.rs"]
mod router_tests;

#[cfg(test)]
#[path = "thread_ttl_tests.rs"]
mod ttl_tests;
