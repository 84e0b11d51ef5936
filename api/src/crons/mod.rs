//! Crons: create (stateless, or for a thread), get, change, delete,
//! search and count. Firing them is [`deepfleet_scheduler::crons`]'s; a handler writes
//! the record and sets when it fires next in the due index.

pub mod search;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, NaiveDateTime, Utc};
use deepfleet_proto::api::{
    Cron, CronCountParams, CronCreateParams, CronSearchParams, CronUpdateParams, RunCreateParams,
};
use deepfleet_proto::keys::records::tenant_crons;
use deepfleet_proto::{Caller, TenantId};
use deepfleet_store::Order;
use serde_json::{Map, Value};

use crate::error::{ApiError, Body};
use crate::routes::{READ, Routes, SUBMIT};
use crate::search::page_size;
use crate::select::{Select, fields_of};
use crate::sort::Sort;
use crate::state::ApiState;
use deepfleet_scheduler::convert::to_json;
use deepfleet_scheduler::crons::Schedule;
use deepfleet_scheduler::crons::following;
use deepfleet_scheduler::repo::crons::{CronRecord, crons, next_run, set_next_run};
use deepfleet_scheduler::runs::request as run_request;
use deepfleet_scheduler::runs::threads as owned_threads;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .post("/runs/crons", SUBMIT, create_stateless)
        .post("/threads/{thread_id}/runs/crons", SUBMIT, create_for_thread)
        .post("/runs/crons/search", READ, search)
        .post("/runs/crons/count", READ, count)
        .get("/runs/crons/{cron_id}", READ, get_one)
        .patch("/runs/crons/{cron_id}", SUBMIT, update)
        .delete("/runs/crons/{cron_id}", SUBMIT, delete)
}

async fn create_stateless(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<CronCreateParams>,
) -> Result<Json<Cron>, ApiError> {
    create(&state, &caller.tenant, None, body).await
}

async fn create_for_thread(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    Body(body): Body<CronCreateParams>,
) -> Result<Json<Cron>, ApiError> {
    owned_threads::load(&state.runs, &caller.tenant, &thread_id).await?;
    create(&state, &caller.tenant, Some(thread_id), body).await
}

async fn create(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: Option<String>,
    body: CronCreateParams,
) -> Result<Json<Cron>, ApiError> {
    check_schedule(&body.schedule, body.timezone.as_deref())?;
    let end_time = body.end_time.as_deref().map(parse_end_time).transpose()?;
    let on_run_completed = match &thread_id {
        None => Some(on_run_completed(body.on_run_completed.as_deref())?),
        Some(_) => None,
    };
    let (payload, context) = checked_payload(state, tenant, thread_id.as_deref(), body.run).await?;
    let now = Utc::now();
    let cron = CronRecord {
        cron_id: uuid::Uuid::now_v7().to_string(),
        tenant: tenant.clone(),
        thread_id,
        schedule: body.schedule,
        timezone: body.timezone,
        end_time,
        enabled: body.enabled.unwrap_or(true),
        on_run_completed,
        metadata: payload.metadata.clone().unwrap_or_default(),
        payload,
        context,
        created_at: now,
        updated_at: now,
    };
    crons(state.store()).put(&cron.cron_id, &cron).await?;
    set_next_run(state.store(), &cron.cron_id, following(&cron, now)).await?;
    Ok(Json(cron_resource(state, &cron).await?))
}

async fn get_one(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(cron_id): Path<String>,
) -> Result<Json<Cron>, ApiError> {
    let cron = load(&state, &caller.tenant, &cron_id).await?;
    Ok(Json(cron_resource(&state, &cron).await?))
}

async fn update(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(cron_id): Path<String>,
    Body(body): Body<CronUpdateParams>,
) -> Result<Json<Cron>, ApiError> {
    let mut cron = load(&state, &caller.tenant, &cron_id).await?;
    let schedule = body.schedule.unwrap_or_else(|| cron.schedule.clone());
    let timezone = body.timezone.or_else(|| cron.timezone.clone());
    check_schedule(&schedule, timezone.as_deref())?;
    if let Some(end) = body.end_time {
        cron.end_time = end.as_deref().map(parse_end_time).transpose()?;
    }
    if body.on_run_completed.is_some() {
        if cron.thread_id.is_some() {
            return Err(ApiError::unprocessable(
                "on_run_completed applies to stateless crons only",
            ));
        }
        cron.on_run_completed = Some(on_run_completed(body.on_run_completed.as_deref())?);
    }
    if !body.payload.is_empty() {
        let mut run = merged_payload(&cron.payload, body.payload)?;
        let configurable = run.config.as_ref().and_then(|c| c.get("configurable"));
        if let (None, None, Some(sealed)) = (&run.context, configurable, &cron.context) {
            // A change that brings no context keeps the cron's.
            run.context = Some(state.runs.life.intake().open_context(sealed)?);
        }
        let (payload, context) =
            checked_payload(&state, &caller.tenant, cron.thread_id.as_deref(), run).await?;
        if let Some(metadata) = &payload.metadata {
            cron.metadata.clone_from(metadata);
        }
        cron.payload = payload;
        cron.context = context;
    }
    cron.schedule = schedule;
    cron.timezone = timezone;
    cron.enabled = body.enabled.unwrap_or(cron.enabled);
    let now = Utc::now();
    cron.updated_at = now;
    crons(state.store()).put(&cron.cron_id, &cron).await?;
    set_next_run(state.store(), &cron.cron_id, following(&cron, now)).await?;
    Ok(Json(cron_resource(&state, &cron).await?))
}

async fn delete(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(cron_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let cron = load(&state, &caller.tenant, &cron_id).await?;
    crons(state.store()).delete(&cron.cron_id).await?;
    set_next_run(state.store(), &cron.cron_id, None).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<CronSearchParams>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let sort = Sort::new(body.sort_by.unwrap_or_default().as_str(), body.sort_order);
    let select = Select::parse(
        body.select.as_deref(),
        &fields_of::<Cron>(),
        "a cron",
        false,
    )?;
    let filter = search::Filter {
        assistant_id: body.assistant_id,
        thread_id: body.thread_id,
        enabled: body.enabled,
        metadata: body.metadata,
    };
    let mut found = Vec::new();
    for cron in all_of(&state, &caller.tenant).await? {
        if filter.matches(&cron) {
            found.push(to_json(&cron_resource(&state, &cron).await?));
        }
    }
    // Every cron is read anyway, so unlike other sorted searches this one
    // has no bound on the matches it sorts.
    sort.sort(&mut found);
    let page = found
        .into_iter()
        .skip(body.offset.unwrap_or(0))
        .take(page_size(body.limit))
        .map(|cron| select.apply(&cron))
        .collect();
    Ok(Json(page))
}

async fn count(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Body(body): Body<CronCountParams>,
) -> Result<Json<usize>, ApiError> {
    let filter = search::Filter {
        assistant_id: body.assistant_id,
        thread_id: body.thread_id,
        enabled: None,
        metadata: body.metadata,
    };
    let crons = all_of(&state, &caller.tenant).await?;
    Ok(Json(crons.iter().filter(|c| filter.matches(c)).count()))
}

/// Every cron of `tenant`, newest first. A tenant keeps its schedules in
/// the tens or hundreds, so searches sort and page them in memory (by
/// any field the reference sorts by).
async fn all_of(state: &ApiState, tenant: &TenantId) -> Result<Vec<CronRecord>, ApiError> {
    let repo = crons(state.store());
    let mut walk = repo.walk(tenant_crons(tenant.as_str()), Order::Descending);
    let mut out = Vec::new();
    while let Some(cron) = walk.next().await? {
        if cron.tenant == *tenant {
            out.push(cron);
        }
    }
    Ok(out)
}

/// Loads `tenant`'s cron or answers 404 (another tenant's is not found,
/// as an unknown one is not).
async fn load(state: &ApiState, tenant: &TenantId, id: &str) -> Result<CronRecord, ApiError> {
    crons(state.store())
        .get_owned(id, tenant)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Cron '{id}' not found.")))
}

/// The Cron resource.
async fn cron_resource(state: &ApiState, cron: &CronRecord) -> Result<Cron, ApiError> {
    let mut payload = match serde_json::to_value(&cron.payload) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    // The fields the request left out, as the SDK leaves them out.
    payload.retain(|_, value| !value.is_null());
    Ok(Cron {
        cron_id: cron.cron_id.clone(),
        assistant_id: cron.payload.assistant_id.clone(),
        thread_id: cron.thread_id.clone(),
        on_run_completed: cron.on_run_completed.clone(),
        end_time: cron.end_time,
        schedule: cron.schedule.clone(),
        timezone: cron.timezone.clone(),
        created_at: cron.created_at,
        updated_at: cron.updated_at,
        payload,
        user_id: None,
        next_run_date: next_run_date(state, cron).await?,
        metadata: cron.metadata.clone(),
        enabled: cron.enabled,
    })
}

/// When `cron` fires next: its due index score, unless a scheduler
/// holds it while making a run (a lease, never a whole second): then the
/// schedule's next time from now.
async fn next_run_date(
    state: &ApiState,
    cron: &CronRecord,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    Ok(match next_run(state.store(), &cron.cron_id).await? {
        Some(at) if at.timestamp_subsec_micros() != 0 => following(cron, Utc::now()),
        other => other,
    })
}

/// A schedule and time zone that parse, or 422.
fn check_schedule(schedule: &str, timezone: Option<&str>) -> Result<(), ApiError> {
    Schedule::parse(schedule, timezone)
        .map(|_| ())
        .map_err(|e| ApiError::unprocessable(e.to_string()))
}

/// An end time as the SDK sends it: RFC 3339, or without an offset (a
/// naive `datetime.isoformat()`), read as UTC.
fn parse_end_time(text: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .map_err(|_| {
            ApiError::unprocessable(format!("end_time must be an ISO 8601 time, not '{text}'"))
        })
}

/// `on_run_completed`: `delete` (the default) or `keep`.
fn on_run_completed(value: Option<&str>) -> Result<String, ApiError> {
    match value {
        None | Some("delete") => Ok("delete".to_owned()),
        Some("keep") => Ok("keep".to_owned()),
        Some(other) => Err(ApiError::unprocessable(format!(
            "on_run_completed must be delete or keep; got '{other}'"
        ))),
    }
}

/// The run a cron creates, checked as a run request is (assistant,
/// input, context): a payload refused now would be refused at every
/// fire. Returns it without its context and `configurable`, and those
/// sealed.
async fn checked_payload(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: Option<&str>,
    mut run: RunCreateParams,
) -> Result<(RunCreateParams, Option<deepfleet_proto::SealedContext>), ApiError> {
    if run.command.is_some() {
        return Err(ApiError::unprocessable(
            "a cron creates new runs: its payload cannot carry a command",
        ));
    }
    // The thread is checked when the cron is made; at each fire it must
    // still be there.
    run.if_not_exists = None;
    run_request::check(&state.runs, tenant, thread_id, &run).await?;
    let mut context = Map::new();
    if let Some(Value::Object(configurable)) = run
        .config
        .as_mut()
        .and_then(Value::as_object_mut)
        .and_then(|config| config.remove("configurable"))
    {
        context.extend(configurable);
    }
    if let Some(Value::Object(given)) = run.context.take() {
        context.extend(given);
    }
    let sealed = if context.is_empty() {
        None
    } else {
        state
            .runs
            .life
            .intake()
            .seal_context(&run.assistant_id, Some(&Value::Object(context)))?
    };
    Ok((run, sealed))
}

/// `payload` with the fields of a `PATCH` body replacing its own.
fn merged_payload(
    payload: &RunCreateParams,
    changes: Map<String, Value>,
) -> Result<RunCreateParams, ApiError> {
    let Ok(Value::Object(mut merged)) = serde_json::to_value(payload) else {
        return Err(ApiError::unprocessable(
            "the cron's payload is not an object",
        ));
    };
    merged.extend(changes);
    serde_json::from_value(Value::Object(merged))
        .map_err(|e| ApiError::unprocessable(format!("payload: {e}")))
}

#[cfg(test)]
#[path = "crons_tests.rs"]
mod router_tests;
