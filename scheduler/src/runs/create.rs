//! Creating runs: a request checked whole by [`super::request`]
//! becomes a run on its thread (or, stateless, on a temporary one),
//! admitted by the lifecycle's multitask rules; a `command.resume`
//! answers the thread's interrupted run instead.

use chrono::Utc;
use deepfleet_proto::api::RunCreateParams;
use deepfleet_proto::{Priority, RunStatus, TenantId};
use serde_json::{Map, Value};

use super::Runs;
use super::error::RunsError;
use super::in_flight;
use super::request::{self, CheckedRun, NewRun, Resume, RunAction};
use super::resource::load_run;
use super::threads;
use crate::convert::to_json;
use crate::error::SchedulerError;
use crate::repo::runs::{RunMeta, TIMEOUT_SECS};
use crate::repo::threads::{ThreadRecord, threads};
use crate::repo::webhooks::{WebhookRecord, webhooks};
use crate::state_edit::Rewind;

/// Checks `body`, then creates its run on `thread_id` or (stateless) on a
/// new temporary thread; starts or queues it per its multitask strategy.
/// A refused request has written nothing.
pub async fn create_run(
    runs: &Runs,
    tenant: &TenantId,
    thread_id: Option<&str>,
    body: &RunCreateParams,
    batch_id: Option<String>,
) -> Result<RunMeta, RunsError> {
    let checked = request::check(runs, tenant, thread_id, body).await?;
    if checked.starts_a_run() {
        in_flight::check(runs, tenant, 1).await?;
    }
    create_checked(runs, tenant, thread_id, body, checked, batch_id).await
}

/// Creates `tenant`'s run of `body`, which [`request::check`]
/// accepted as `checked`.
pub async fn create_checked(
    runs: &Runs,
    tenant: &TenantId,
    thread_id: Option<&str>,
    body: &RunCreateParams,
    checked: CheckedRun,
    batch_id: Option<String>,
) -> Result<RunMeta, RunsError> {
    let delay = checked.options.delay;
    let run = match checked.action {
        RunAction::Resume(resume) => {
            let Some(thread_id) = thread_id else {
                return Err(RunsError::malformed(
                    "You must provide a thread_id when resuming.",
                ));
            };
            return resume_run(runs, tenant, thread_id, resume).await;
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
    let mut thread = runs
        .life
        .thread_for_run(tenant, thread_id, create_missing)
        .await?
        .ok_or_else(|| RunsError::not_found("Thread or assistant not found."))?;
    check_checkpoint(runs, &thread.thread_id, rewind.as_ref()).await?;
    if keep {
        // `on_completion: keep`: the stateless run's thread stays, as any
        // thread does.
        thread.temporary = false;
        threads(runs.store())
            .put(&thread.thread_id, &thread)
            .await?;
    }
    let strategy = body.multitask_strategy.unwrap_or_default();
    let make = |thread: ThreadRecord| async move {
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
            webhooks(runs.store()).put(&meta.run_id, &record).await?;
        }
        Ok::<_, RunsError>(meta)
    };
    let meta = runs
        .life
        .admit_run(&thread.thread_id, strategy, make)
        .await?;
    in_flight::track(runs, &meta).await?;
    Ok(meta)
}

/// Refuses a run from a checkpoint its thread does not have now, rather
/// than when the run starts, which may be later.
async fn check_checkpoint(
    runs: &Runs,
    thread_id: &str,
    rewind: Option<&Rewind>,
) -> Result<(), RunsError> {
    let Some(id) = rewind.and_then(|r| r.checkpoint) else {
        return Ok(());
    };
    match runs.store().checkpoint_at(thread_id, id).await? {
        Some(_) => Ok(()),
        None => Err(SchedulerError::UnknownCheckpoint(id).into()),
    }
}

/// Whether a stateless request keeps its thread once the run ends:
/// `on_completion` is `delete` (the default) or `keep`.
fn keeps_its_thread(body: &RunCreateParams) -> Result<bool, RunsError> {
    match body.rest.get("on_completion") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(s)) if s == "delete" => Ok(false),
        Some(Value::String(s)) if s == "keep" => Ok(true),
        Some(other) => Err(RunsError::invalid(format!(
            "on_completion must be \"delete\" or \"keep\", not {other}"
        ))),
    }
}

/// deepfleet's `timeout_secs` (kept in `kwargs`, read when the run
/// starts): seconds the run may take, a whole number of at least 1.
fn check_timeout(body: &RunCreateParams) -> Result<(), RunsError> {
    match body.rest.get(TIMEOUT_SECS) {
        None | Some(Value::Null) => Ok(()),
        Some(value) if value.as_u64().is_some_and(|secs| secs >= 1) => Ok(()),
        Some(other) => Err(RunsError::invalid(format!(
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
    runs: &Runs,
    tenant: &TenantId,
    thread_id: &str,
    resume: Resume,
) -> Result<RunMeta, RunsError> {
    let Resume {
        decisions,
        update,
        strict_ids,
    } = resume;
    let thread = threads::load(runs, tenant, thread_id).await?;
    let Some(run_id) = thread.active_run.clone() else {
        return Err(RunsError::conflict(
            "Thread has no interrupted run to resume.",
        ));
    };
    // The pending interrupt's id is its run's.
    if let Some(unknown) = strict_ids.iter().find(|id| **id != run_id) {
        return Err(RunsError::conflict(format!(
            "UnknownInterruptError: interrupt '{unknown}' is not pending on this thread \
             (strict_resume)"
        )));
    }
    if let Some(edit) = update {
        let waiting = runs.store().get_run(thread_id, &run_id).await?;
        if waiting.is_none_or(|run| run.status != RunStatus::AwaitingHuman) {
            return Err(RunsError::conflict(
                "Thread has no interrupted run to resume.",
            ));
        }
        runs.life.update_state(thread_id, None, &edit).await?;
    }
    crate::resume::resume(
        runs.store(),
        runs.life.intake().queue().as_ref(),
        thread_id,
        &run_id,
        decisions,
    )
    .await?;
    load_run(runs, tenant, thread_id, &run_id).await
}
