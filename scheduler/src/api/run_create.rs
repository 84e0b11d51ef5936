//! Creating runs: a request becomes a run on its thread (or, stateless,
//! on a temporary one), admitted by the lifecycle's multitask rules; a
//! `command.resume` answers the thread's interrupted run instead.

use std::collections::BTreeMap;

use chrono::Utc;
use deepfleet_proto::api::{Assistant, ResumeDecisions, RunCommand, RunCreateParams};
use deepfleet_proto::{Decision, FileData, Message};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::assistants;
use super::convert::{input_files, input_messages, to_json};
use super::error::ApiError;
use super::run_resource::load_run;
use super::state::ApiState;
use super::threads;
use crate::lifecycle::multitask::Admission;
use crate::repo::runs::RunMeta;

/// Creates a run from `body`, on `thread_id` or (stateless) on a new
/// temporary thread; starts or queues it per its multitask strategy.
pub async fn create_run(
    state: &ApiState,
    thread_id: Option<&str>,
    body: &RunCreateParams,
    batch_id: Option<String>,
) -> Result<RunMeta, ApiError> {
    if let Some(command) = &body.command {
        let Some(thread_id) = thread_id else {
            return Err(ApiError::bad_request(
                "You must provide a thread_id when resuming.",
            ));
        };
        return resume_run(state, thread_id, command).await;
    }
    let (input, files) = run_input(body)?;
    let assistant = assistants::find(state, &body.assistant_id).await?;
    let create_missing = body.if_not_exists.as_deref() == Some("create");
    let thread = state
        .life
        .thread_for_run(thread_id, create_missing)
        .await?
        .ok_or_else(|| ApiError::not_found("Thread or assistant not found."))?;
    let strategy = body.multitask_strategy.unwrap_or_default();
    let admission = state.life.admit(&thread, strategy).await?;
    let mut metadata = body.metadata.clone().unwrap_or_default();
    metadata
        .entry("assistant_id")
        .or_insert_with(|| Value::String(assistant.assistant_id.clone()));
    let meta = RunMeta {
        run_id: uuid::Uuid::now_v7().to_string(),
        thread_id: thread.thread_id.clone(),
        assistant_id: assistant.assistant_id.clone(),
        graph_id: assistant.graph_id.clone(),
        metadata,
        kwargs: kwargs(body),
        multitask_strategy: strategy,
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

/// The messages and files a request brings, checked.
fn run_input(
    body: &RunCreateParams,
) -> Result<(Vec<Message>, BTreeMap<String, FileData>), ApiError> {
    let configurable = body.config.as_ref().and_then(|c| c.get("configurable"));
    if body.context.is_some()
        && configurable.is_some_and(|c| c.as_object().is_some_and(|o| !o.is_empty()))
    {
        return Err(ApiError::bad_request(
            "Cannot specify both configurable and context. Prefer setting context alone.",
        ));
    }
    let Some(input) = &body.input else {
        return Err(ApiError::unprocessable("input is required"));
    };
    let messages = input_messages(input).map_err(|e| ApiError::unprocessable(e.0))?;
    let files = input_files(input, Utc::now()).map_err(|e| ApiError::unprocessable(e.0))?;
    Ok((messages, files))
}

/// The assistant's context (and `configurable`), overridden key by key by
/// the request's.
fn merged_context(assistant: &Assistant, body: &RunCreateParams) -> Option<Value> {
    let mut context = Map::new();
    for layer in [
        Some(&assistant.context),
        assistant.config.get("configurable"),
        body.config.as_ref().and_then(|c| c.get("configurable")),
        body.context.as_ref(),
    ] {
        if let Some(Value::Object(map)) = layer {
            context.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    (!context.is_empty()).then_some(Value::Object(context))
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
/// and the response follows it.
async fn resume_run(
    state: &ApiState,
    thread_id: &str,
    command: &RunCommand,
) -> Result<RunMeta, ApiError> {
    let Some(resume) = &command.resume else {
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
        state.store(),
        state.life.intake().queue().as_ref(),
        thread_id,
        &run_id,
        decisions,
    )
    .await?;
    load_run(state, thread_id, &run_id).await
}

/// The decisions of a resume value: `{"decisions": [...]}`, or a map of
/// interrupt id to that (one interrupt is pending at a time).
pub fn decisions_of(resume: &Value) -> Result<Vec<Decision>, ApiError> {
    let value = if resume.get("decisions").is_some() {
        resume
    } else {
        match resume.as_object().and_then(|m| m.values().next()) {
            Some(inner) if inner.get("decisions").is_some() => inner,
            _ => {
                return Err(ApiError::unprocessable(
                    "resume must be {\"decisions\": [...]}",
                ));
            }
        }
    };
    ResumeDecisions::deserialize(value)
        .map(|r| r.decisions)
        .map_err(|e| ApiError::unprocessable(format!("decisions: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resume_values_take_both_shapes() {
        let plain = json!({"decisions": [{"type": "approve"}]});
        assert_eq!(decisions_of(&plain).unwrap(), vec![Decision::Approve]);
        let by_id = json!({"int-1": {"decisions": [{"type": "reject", "message": "no"}]}});
        assert_eq!(decisions_of(&by_id).unwrap().len(), 1);
        assert!(decisions_of(&json!("yes")).is_err());
        assert!(decisions_of(&json!({"decisions": [{"type": "maybe"}]})).is_err());
    }
}
