//! Runs: create (stateful on a thread, or stateless on a temporary one),
//! list, get, delete, cancel, and `POST /runs/batch`.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::Utc;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::ApiState;
use super::assistants;
use super::convert::{input_files, input_messages};
use super::error::{ApiError, Body};
use super::multitask::{Admission, Strategy, admit};
use super::threads;
use crate::lifecycle::{QUEUED, RunMeta, THREADS, ThreadRecord, api_status, thread_runs};

pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route(
            "/threads/{thread_id}/runs",
            post(create_background).get(list),
        )
        .route(
            "/threads/{thread_id}/runs/{run_id}",
            get(get_one).delete(delete),
        )
        .route("/threads/{thread_id}/runs/{run_id}/cancel", post(cancel))
        .route("/runs", post(create_stateless))
        .route("/runs/batch", post(batch))
}

/// The body of every run-creating request (stateful and stateless).
#[derive(Debug, Clone, Deserialize, Default)]
pub struct RunCreate {
    /// An assistant id or a graph name.
    pub assistant_id: String,
    /// `{"messages": [...]}`.
    #[serde(default)]
    pub input: Option<Value>,
    /// `{resume?, update?, goto?}`.
    #[serde(default)]
    pub command: Option<Value>,
    /// Caller metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// `{configurable?, tags?, recursion_limit?}`.
    #[serde(default)]
    pub config: Option<Value>,
    /// Runtime context.
    #[serde(default)]
    pub context: Option<Value>,
    /// reject | enqueue (default) | interrupt | rollback.
    #[serde(default)]
    pub multitask_strategy: Option<String>,
    /// reject (default) | create.
    #[serde(default)]
    pub if_not_exists: Option<String>,
    /// Stream modes for `/stream` (default `values`).
    #[serde(default)]
    pub stream_mode: Option<Value>,
    /// Namespaced subagent events.
    #[serde(default)]
    pub stream_subgraphs: Option<bool>,
    /// Every other field, echoed in `kwargs`.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Creates a run from `body`, on `thread_id` or (stateless) on a new
/// temporary thread; starts or queues it per its multitask strategy.
pub async fn create_run(
    state: &ApiState,
    thread_id: Option<&str>,
    body: &RunCreate,
    batch_id: Option<String>,
) -> Result<RunMeta, ApiError> {
    let strategy = Strategy::parse(body.multitask_strategy.as_deref())?;
    if let Some(command) = &body.command {
        let Some(thread_id) = thread_id else {
            return Err(ApiError::bad_request(
                "You must provide a thread_id when resuming.",
            ));
        };
        return resume_run(state, thread_id, command).await;
    }
    let configurable = body.config.as_ref().and_then(|c| c.get("configurable"));
    if body.context.is_some()
        && configurable.is_some_and(|c| c.as_object().is_some_and(|o| !o.is_empty()))
    {
        return Err(ApiError::bad_request(
            "Cannot specify both configurable and context. Prefer setting context alone.",
        ));
    }
    let input = match &body.input {
        Some(input) => input_messages(input).map_err(|e| ApiError::unprocessable(e.0))?,
        None => return Err(ApiError::unprocessable("input is required")),
    };
    let files = body
        .input
        .as_ref()
        .map(|input| input_files(input, Utc::now()))
        .transpose()
        .map_err(|e| ApiError::unprocessable(e.0))?
        .unwrap_or_default();
    let assistant = assistants::find(state, &body.assistant_id).await?;
    let graph_id = assistant["graph_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let thread = match thread_id {
        Some(id) => match state.life.record::<ThreadRecord>(THREADS, id).await? {
            Some(thread) => thread,
            None if body.if_not_exists.as_deref() == Some("create") => {
                let record = ThreadRecord::new(id.to_owned(), Map::new());
                state.life.save(THREADS, id, &record).await?;
                record
            }
            None => return Err(ApiError::not_found("Thread or assistant not found.")),
        },
        None => {
            let mut record = ThreadRecord::new(uuid::Uuid::now_v7().to_string(), Map::new());
            record.temporary = true;
            state.life.save(THREADS, &record.thread_id, &record).await?;
            record
        }
    };
    let mut ahead = state.life.queued(&thread.thread_id).await?;
    let active = state.life.active_run(&thread).await?;
    let admission = admit(strategy, ahead.len() + usize::from(active.is_some()))?;
    if let Admission::Supersede { rollback } = admission {
        if let Some(run) = &active {
            state
                .life
                .store()
                .request_cancel(&run.thread_id, &run.run_id)
                .await?;
            if rollback {
                state
                    .life
                    .store()
                    .delete_record(&thread_runs(&run.thread_id), &run.run_id)
                    .await?;
            }
        }
        for meta in &mut ahead {
            state
                .life
                .store()
                .delete_record(QUEUED, &meta.run_id)
                .await?;
            if rollback {
                state
                    .life
                    .store()
                    .delete_record(&thread_runs(&meta.thread_id), &meta.run_id)
                    .await?;
            } else {
                meta.cancelled = true;
                state
                    .life
                    .save(&thread_runs(&meta.thread_id), &meta.run_id, &*meta)
                    .await?;
            }
        }
    }
    let mut metadata = body.metadata.clone().unwrap_or_default();
    metadata
        .entry("assistant_id")
        .or_insert_with(|| assistant["assistant_id"].clone());
    let meta = RunMeta {
        run_id: uuid::Uuid::now_v7().to_string(),
        thread_id: thread.thread_id.clone(),
        assistant_id: assistant["assistant_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        graph_id,
        metadata,
        kwargs: kwargs(body),
        multitask_strategy: strategy.as_str().to_owned(),
        batch_id,
        input,
        files,
        context: state.life.intake().seal_context(
            &body.assistant_id,
            merged_context(&assistant, body).as_ref(),
        )?,
        cancelled: false,
        created_at: Utc::now(),
    };
    state
        .life
        .submit(&meta, admission != Admission::Start)
        .await?;
    Ok(meta)
}

/// The assistant's context (and `configurable`), overridden key by key by
/// the request's.
fn merged_context(assistant: &Value, body: &RunCreate) -> Option<Value> {
    let mut context = Map::new();
    for layer in [
        assistant.get("context"),
        assistant.get("config").and_then(|c| c.get("configurable")),
        body.config.as_ref().and_then(|c| c.get("configurable")),
        body.context.as_ref(),
    ] {
        if let Some(Value::Object(map)) = layer {
            context.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    (!context.is_empty()).then_some(Value::Object(context))
}

fn kwargs(body: &RunCreate) -> Map<String, Value> {
    let mut kwargs = body.rest.clone();
    // Context and `configurable` may carry keys: they are sealed with the
    // run and never echoed.
    let mut config = body.config.clone().unwrap_or_else(|| json!({}));
    if let Some(config) = config.as_object_mut() {
        config.remove("configurable");
    }
    for (key, value) in [
        ("input", body.input.clone()),
        ("config", Some(config)),
        ("stream_mode", body.stream_mode.clone()),
    ] {
        kwargs.insert(key.into(), value.unwrap_or(Value::Null));
    }
    kwargs
}

/// The Run resource.
pub async fn run_json(state: &ApiState, meta: &RunMeta) -> Result<Value, ApiError> {
    let record = state
        .life
        .store()
        .get_run(&meta.thread_id, &meta.run_id)
        .await?;
    let (status, updated_at) = match &record {
        Some(run) => (api_status(run.status), run.updated_at),
        None if meta.cancelled => ("interrupted", meta.created_at),
        None => ("pending", meta.created_at),
    };
    Ok(json!({
        "run_id": meta.run_id,
        "thread_id": meta.thread_id,
        "assistant_id": meta.assistant_id,
        "created_at": meta.created_at,
        "updated_at": updated_at,
        "status": status,
        "metadata": meta.metadata,
        "kwargs": meta.kwargs,
        "multitask_strategy": meta.multitask_strategy,
    }))
}

/// `Content-Location` (and `Location`, when given) of a run response.
pub fn run_headers(meta: &RunMeta, location_suffix: Option<&str>) -> HeaderMap {
    let base = format!("/threads/{}/runs/{}", meta.thread_id, meta.run_id);
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&base) {
        headers.insert(header::CONTENT_LOCATION, v);
    }
    if let Some(suffix) = location_suffix
        && let Ok(v) = HeaderValue::from_str(&format!("{base}{suffix}"))
    {
        headers.insert(header::LOCATION, v);
    }
    headers
}

/// Loads a run's metadata or answers 404.
pub async fn load(state: &ApiState, thread_id: &str, run_id: &str) -> Result<RunMeta, ApiError> {
    state
        .life
        .record::<RunMeta>(&thread_runs(thread_id), run_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Run '{run_id}' not found.")))
}

async fn create_background(
    State(state): State<ApiState>,
    Path(thread_id): Path<String>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let meta = create_run(&state, Some(&thread_id), &body, None).await?;
    Ok((
        run_headers(&meta, None),
        Json(run_json(&state, &meta).await?),
    )
        .into_response())
}

async fn create_stateless(
    State(state): State<ApiState>,
    Body(body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    let meta = create_run(&state, None, &body, None).await?;
    Ok((
        run_headers(&meta, None),
        Json(run_json(&state, &meta).await?),
    )
        .into_response())
}

/// Creates every run of the array (stateless, each on its own thread) and
/// records them as one batch, followed with `GET /batches/{batch_id}`.
async fn batch(
    State(state): State<ApiState>,
    Body(bodies): Body<Vec<RunCreate>>,
) -> Result<Json<Vec<Value>>, ApiError> {
    if bodies.is_empty() {
        return Err(ApiError::unprocessable("a batch needs at least one run"));
    }
    let batch_id = uuid::Uuid::now_v7().to_string();
    let metas = super::batches::create(&state, &batch_id, &bodies).await?;
    let mut out = Vec::with_capacity(metas.len());
    for meta in &metas {
        let mut run = run_json(&state, meta).await?;
        run["metadata"]["batch_id"] = Value::String(batch_id.clone());
        out.push(run);
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<usize>,
    offset: Option<usize>,
    status: Option<String>,
}

async fn list(
    State(state): State<ApiState>,
    Path(thread_id): Path<String>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Vec<Value>>, ApiError> {
    threads::load(&state, &thread_id).await?;
    let mut metas: Vec<RunMeta> = state
        .life
        .store()
        .list_records(&thread_runs(&thread_id))
        .await?
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    metas.sort_by(|a, b| (b.created_at, &b.run_id).cmp(&(a.created_at, &a.run_id)));
    let mut out = Vec::new();
    for meta in &metas {
        let run = run_json(&state, meta).await?;
        if query.status.as_ref().is_none_or(|s| run["status"] == *s) {
            out.push(run);
        }
    }
    Ok(Json(
        out.into_iter()
            .skip(query.offset.unwrap_or(0))
            .take(query.limit.unwrap_or(10))
            .collect(),
    ))
}

async fn get_one(
    State(state): State<ApiState>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let meta = load(&state, &thread_id, &run_id).await?;
    Ok(Json(run_json(&state, &meta).await?))
}

async fn delete(
    State(state): State<ApiState>,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let meta = load(&state, &thread_id, &run_id).await?;
    if run_json(&state, &meta).await?["status"] == "running" {
        return Err(ApiError::conflict("Run is still running; cancel it first."));
    }
    state.life.store().delete_record(QUEUED, &run_id).await?;
    state
        .life
        .store()
        .delete_record(&thread_runs(&thread_id), &run_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct CancelQuery {
    /// `1`/`true` or `0`/`false` (the SDK sends numbers).
    wait: Option<String>,
    action: Option<String>,
}

/// A query flag as the SDK sends it.
fn flag(value: Option<&str>) -> Result<bool, ApiError> {
    match value {
        None | Some("0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(other) => Err(ApiError::unprocessable(format!(
            "expected a boolean (true/false/1/0), got '{other}'"
        ))),
    }
}

async fn cancel(
    State(state): State<ApiState>,
    Path((thread_id, run_id)): Path<(String, String)>,
    Query(query): Query<CancelQuery>,
) -> Result<Response, ApiError> {
    let mut meta = load(&state, &thread_id, &run_id).await?;
    let rollback = match query.action.as_deref() {
        None | Some("interrupt") => false,
        Some("rollback") => true,
        Some(other) => {
            return Err(ApiError::unprocessable(format!(
                "action must be interrupt or rollback; got '{other}'"
            )));
        }
    };
    state
        .life
        .store()
        .request_cancel(&thread_id, &run_id)
        .await?;
    if state.life.store().delete_record(QUEUED, &run_id).await? {
        meta.cancelled = true;
        state
            .life
            .save(&thread_runs(&thread_id), &run_id, &meta)
            .await?;
    }
    if flag(query.wait.as_deref())? {
        let response = super::follow::wait_response(state.clone(), meta.clone(), "/join").await;
        if rollback {
            state
                .life
                .store()
                .delete_record(&thread_runs(&thread_id), &run_id)
                .await?;
        }
        return Ok(response);
    }
    if rollback {
        state
            .life
            .store()
            .delete_record(&thread_runs(&thread_id), &run_id)
            .await?;
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

/// `command.resume` on a thread whose last run waits for a human: the
/// decisions resume *that* run (deepfleet keeps one run per invocation),
/// and the response follows it.
async fn resume_run(
    state: &ApiState,
    thread_id: &str,
    command: &Value,
) -> Result<RunMeta, ApiError> {
    let Some(resume) = command.get("resume") else {
        return Err(ApiError::unprocessable("command must carry `resume`"));
    };
    let thread = threads::load(state, thread_id).await?;
    let Some(run_id) = thread.active_run.clone() else {
        return Err(ApiError::conflict(
            "Thread has no interrupted run to resume.",
        ));
    };
    let decisions = decisions_of(resume)?;
    crate::resume::resume(
        state.life.store().as_ref(),
        state.life.intake().queue().as_ref(),
        thread_id,
        &run_id,
        decisions,
    )
    .await?;
    load(state, thread_id, &run_id).await
}

/// The decisions of a resume value: `{"decisions": [...]}`, or a map of
/// interrupt id to that (one interrupt is pending at a time).
pub fn decisions_of(resume: &Value) -> Result<Vec<deepfleet_proto::Decision>, ApiError> {
    let value = match resume.get("decisions") {
        Some(decisions) => decisions.clone(),
        None => match resume.as_object().and_then(|m| m.values().next()) {
            Some(inner) if inner.get("decisions").is_some() => inner["decisions"].clone(),
            _ => {
                return Err(ApiError::unprocessable(
                    "resume must be {\"decisions\": [...]}",
                ));
            }
        },
    };
    serde_json::from_value(value).map_err(|e| ApiError::unprocessable(format!("decisions: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_values_take_both_shapes() {
        let plain = json!({"decisions": [{"type": "approve"}]});
        assert_eq!(
            decisions_of(&plain).unwrap(),
            vec![deepfleet_proto::Decision::Approve]
        );
        let by_id = json!({"int-1": {"decisions": [{"type": "reject", "message": "no"}]}});
        assert_eq!(decisions_of(&by_id).unwrap().len(), 1);
        assert!(decisions_of(&json!("yes")).is_err());
        assert!(flag(Some("1")).unwrap() && !flag(Some("0")).unwrap() && !flag(None).unwrap());
        assert!(flag(Some("maybe")).is_err());
        assert!(decisions_of(&json!({"decisions": [{"type": "maybe"}]})).is_err());
    }
}
