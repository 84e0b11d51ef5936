//! Creating runs: a request checked whole by [`super::run_request`]
//! becomes a run on its thread (or, stateless, on a temporary one),
//! admitted by the lifecycle's multitask rules; a `command.resume`
//! answers the thread's interrupted run instead.

use chrono::Utc;
use deepfleet_proto::api::RunCreateParams;
use deepfleet_proto::{Priority, RunStatus, TenantId};
use serde_json::{Map, Value};

use super::convert::to_json;
use super::error::ApiError;
use super::in_flight;
use super::run_request::{self, CheckedRun, NewRun, Resume, RunAction};
use super::run_resource::load_run;
use super::state::ApiState;
use super::threads;
use crate::error::SchedulerError;
use crate::lifecycle::multitask::Admission;
use crate::repo::runs::{RunMeta, TIMEOUT_SECS};
use crate::repo::threads::threads;
use crate::repo::webhooks::{WebhookRecord, webhooks};
use crate::state_edit::Rewind;

/// Checks `body`, then creates its run on `thread_id` or (stateless) on a
/// new temporary thread; starts or queues it per its multitask strategy.
/// A refused request has written nothing.
pub async fn create_run(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: Option<&str>,
    body: &RunCreateParams,
    batch_id: Option<String>,
) -> Result<RunMeta, ApiError> {
    let checked = run_request::check(state, tenant, thread_id, body).await?;
    if checked.starts_a_run() {
        in_flight::check(state, tenant, 1).await?;
    }
    create_checked(state, tenant, thread_id, body, checked, batch_id).await
}

/// Creates `tenant`'s run of `body`, which [`run_request::check`]
/// accepted as `checked`.
pub async fn create_checked(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: Option<&str>,
    body: &RunCreateParams,
    checked: CheckedRun,
    batch_id: Option<String>,
) -> Result<RunMeta, ApiError> {
    let delay = checked.options.delay;
    let run = match checked.action {
        RunAction::Resume(resume) => {
            let Some(thread_id) = thread_id else {
                return Err(ApiError::bad_request(
                    "You must provide a thread_id when resuming.",
                ));
            };
            return resume_run(state, tenant, thread_id, resume).await;
        }
        RunAction::Start(run) => *run,
    };
    let NewRun {
        assistant,
        input,
        files,
        context,
        create_missing,
        webhook,
        rewind,
    } = run;
    let keep = thread_id.is_none() && keeps_its_thread(body)?;
    check_timeout(body)?;
    let mut thread = state
        .life
        .thread_for_run(tenant, thread_id, create_missing)
        .await?
        .ok_or_else(|| ApiError::not_found("Thread or assistant not found."))?;
    check_checkpoint(state, &thread.thread_id, rewind.as_ref()).await?;
    if keep {
        // `on_completion: keep`: the stateless run's thread stays, as any
        // thread does.
        thread.temporary = false;
        threads(state.store())
            .put(&thread.thread_id, &thread)
            .await?;
    }
    let strategy = body.multitask_strategy.unwrap_or_default();
    // One admission at a time per thread, and on the thread as it is once
    // the lease is held: a request that raced this one has started or
    // queued its run by then (see `lifecycle::thread_lease`).
    let lease = state.life.lease_thread(&thread.thread_id).await?;
    let admitted = async {
        let thread = threads(state.store())
            .get(&thread.thread_id)
            .await?
            .ok_or_else(|| ApiError::not_found("Thread or assistant not found."))?;
        let admission = state.life.admit(&thread, strategy).await?;
        let mut metadata = body.metadata.clone().unwrap_or_default();
        metadata
            .entry("assistant_id")
            .or_insert_with(|| Value::String(assistant.assistant_id.clone()));
        // Someone waits for a single run; an API batch queues with batches.
        let priority = body.priority.unwrap_or(if batch_id.is_some() {
            Priority::Batch
        } else {
            Priority::Interactive
        });
        let meta = RunMeta {
            run_id: uuid::Uuid::now_v7().to_string(),
            thread_id: thread.thread_id.clone(),
            tenant: tenant.clone(),
            assistant_id: assistant.assistant_id.clone(),
            graph_id: assistant.graph_id.clone(),
            metadata,
            kwargs: kwargs(body),
            multitask_strategy: strategy,
            batch_id,
            input,
            files,
            context,
            cancelled: false,
            priority,
            created_at: Utc::now(),
            not_before: delay
                .and_then(|d| chrono::Duration::from_std(d).ok().map(|d| Utc::now() + d)),
            rewind,
        };
        // Before the run: a crash in between leaves a delivery whose run never
        // comes (dropped by the delivery loop), never a run whose webhook is
        // lost.
        if let Some(url) = webhook {
            let record = WebhookRecord::waiting(&meta, url);
            webhooks(state.store()).put(&meta.run_id, &record).await?;
        }
        // A delayed run waits in the thread's queue like one behind a
        // busy thread; the starter leaves it there until its time.
        state
            .life
            .submit(
                &meta,
                admission != Admission::Start || meta.not_before.is_some(),
            )
            .await?;
        Ok::<_, ApiError>(meta)
    }
    .await;
    state.life.release_thread(lease).await;
    let meta = admitted?;
    in_flight::track(state, &meta).await?;
    Ok(meta)
}

/// Refuses a run from a checkpoint its thread does not have now, rather
/// than when the run starts, which may be later.
async fn check_checkpoint(
    state: &ApiState,
    thread_id: &str,
    rewind: Option<&Rewind>,
) -> Result<(), ApiError> {
    let Some(id) = rewind.and_then(|r| r.checkpoint) else {
        return Ok(());
    };
    match state.store().checkpoint_at(thread_id, id).await? {
        Some(_) => Ok(()),
        None => Err(SchedulerError::UnknownCheckpoint(id).into()),
    }
}

/// Whether a stateless request keeps its thread once the run ends:
/// `on_completion` is `delete` (the default) or `keep`.
fn keeps_its_thread(body: &RunCreateParams) -> Result<bool, ApiError> {
    match body.rest.get("on_completion") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(s)) if s == "delete" => Ok(false),
        Some(Value::String(s)) if s == "keep" => Ok(true),
        Some(other) => Err(ApiError::unprocessable(format!(
            "on_completion must be \"delete\" or \"keep\", not {other}"
        ))),
    }
}

/// deepfleet's `timeout_secs` (kept in `kwargs`, read when the run
/// starts): seconds the run may take, a whole number of at least 1.
fn check_timeout(body: &RunCreateParams) -> Result<(), ApiError> {
    match body.rest.get(TIMEOUT_SECS) {
        None | Some(Value::Null) => Ok(()),
        Some(value) if value.as_u64().is_some_and(|secs| secs >= 1) => Ok(()),
        Some(other) => Err(ApiError::unprocessable(format!(
            "timeout_secs must be a whole number of seconds of at least 1, not {other}"
        ))),
    }
}

/// The run's `kwargs`: the request's arguments without what may carry
/// keys (context and `configurable` are sealed with the run and never
/// echoed).
fn kwargs(body: &RunCreateParams) -> Map<String, Value> {
    let mut kwargs = body.rest.clone();
    let mut config = body
        .config
        .clone()
        .unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(config) = config.as_object_mut() {
        config.remove("configurable");
    }
    for (key, value) in [
        ("input", body.input.clone().unwrap_or(Value::Null)),
        ("config", config),
        ("stream_mode", to_json(&body.stream_mode)),
    ] {
        kwargs.insert(key.into(), value);
    }
    kwargs
}

/// `command.resume` on a thread whose last run waits for a human: the
/// decisions resume *that* run (deepfleet keeps one run per invocation),
/// and the response follows it. A `command.update` beside it is written
/// first, once the run is known to wait.
async fn resume_run(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: &str,
    resume: Resume,
) -> Result<RunMeta, ApiError> {
    let Resume {
        decisions,
        update,
        strict_ids,
    } = resume;
    let thread = threads::load(state, tenant, thread_id).await?;
    let Some(run_id) = thread.active_run.clone() else {
        return Err(ApiError::conflict(
            "Thread has no interrupted run to resume.",
        ));
    };
    // The pending interrupt's id is its run's.
    if let Some(unknown) = strict_ids.iter().find(|id| **id != run_id) {
        return Err(ApiError::conflict(format!(
            "UnknownInterruptError: interrupt '{unknown}' is not pending on this thread \
             (strict_resume)"
        )));
    }
    if let Some(edit) = update {
        let waiting = state.store().get_run(thread_id, &run_id).await?;
        if waiting.is_none_or(|run| run.status != RunStatus::Interrupted) {
            return Err(ApiError::conflict(
                "Thread has no interrupted run to resume.",
            ));
        }
        state.life.update_state(thread_id, None, &edit).await?;
    }
    crate::resume::resume(
        state.store(),
        state.life.intake().queue().as_ref(),
        thread_id,
        &run_id,
        decisions,
    )
    .await?;
    load_run(state, tenant, thread_id, &run_id).await
}
