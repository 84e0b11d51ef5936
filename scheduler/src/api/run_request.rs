//! A run request checked whole before anything is written: every field a
//! create route reads (stream modes, the run options of
//! [`super::run_options`], `if_not_exists`, a resume command's
//! decisions, the input, the assistant, the runtime context, sealed) is
//! checked here, so a request refused with 4xx has created no thread, no
//! run and no queued step. What remains for [`super::run_create`] can only
//! fail on the state of the thread (busy, missing) or of the back ends.

use std::collections::BTreeMap;

use chrono::Utc;
use deepfleet_proto::api::{Assistant, ResumeDecisions, RunCommand, RunCreateParams};
use deepfleet_proto::{Decision, FileData, InputLimits, Message, SealedContext, TenantId};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::assistants;
use super::convert::{input_files, input_messages};
use super::error::ApiError;
use super::modes::Modes;
use super::run_options::{self, RunOptions};
use super::state::ApiState;

/// A request that passed every check.
pub struct CheckedRun {
    /// The stream modes asked for (`values` by default), with
    /// `stream_subgraphs`.
    pub modes: Modes,
    /// What the request does.
    pub action: RunAction,
    /// How it is served.
    pub options: RunOptions,
}

impl CheckedRun {
    /// Whether the request starts a new run (rather than resuming one).
    pub fn starts_a_run(&self) -> bool {
        matches!(self.action, RunAction::Start(_))
    }
}

/// What a checked request does.
pub enum RunAction {
    /// Answers the thread's interrupted run with these decisions.
    Resume(Vec<Decision>),
    /// Starts a new run.
    Start(Box<NewRun>),
}

/// A new run's checked parts.
pub struct NewRun {
    /// The assistant the request names.
    pub assistant: Assistant,
    /// The input messages.
    pub input: Vec<Message>,
    /// The input files.
    pub files: BTreeMap<String, FileData>,
    /// The runtime context (the assistant's, overridden by the request's),
    /// sealed.
    pub context: Option<SealedContext>,
    /// `if_not_exists: create`: a missing thread is made.
    pub create_missing: bool,
    /// Where the run's end is POSTed, checked.
    pub webhook: Option<String>,
}

/// Checks `tenant`'s `body` (for `thread_id`, or stateless) without
/// writing anything.
pub async fn check(
    state: &ApiState,
    tenant: &TenantId,
    thread_id: Option<&str>,
    body: &RunCreateParams,
) -> Result<CheckedRun, ApiError> {
    let mut modes = Modes::parse(body.stream_mode.as_ref())?;
    modes.subgraphs = body.stream_subgraphs.unwrap_or(false);
    let options = run_options::check(body)?;
    if let Some(named) = options.checkpoint {
        current_checkpoint(state, thread_id, named).await?;
    }
    let create_missing = match body.if_not_exists.as_deref() {
        None | Some("reject") => false,
        Some("create") => true,
        Some(other) => {
            return Err(ApiError::unprocessable(format!(
                "if_not_exists must be create or reject; got '{other}'"
            )));
        }
    };
    if let Some(command) = &body.command {
        if thread_id.is_none() {
            return Err(ApiError::bad_request(
                "You must provide a thread_id when resuming.",
            ));
        }
        let action = RunAction::Resume(command_decisions(command)?);
        return Ok(CheckedRun {
            modes,
            action,
            options,
        });
    }
    let (input, files) = run_input(body, state.life.intake().limits())?;
    let webhook = webhook_of(state, tenant, body)?;
    let (assistant, assistant_context) =
        assistants::find_for_run(state, tenant, &body.assistant_id).await?;
    let context = merged_context(&assistant, &assistant_context, body);
    let intake = state.life.intake();
    intake
        .check_context(&assistant.graph_id, &body.assistant_id, context.as_ref())
        .await?;
    let context = intake.seal_context(&body.assistant_id, context.as_ref())?;
    let run = NewRun {
        assistant,
        input,
        files,
        context,
        create_missing,
        webhook,
    };
    Ok(CheckedRun {
        modes,
        action: RunAction::Start(Box::new(run)),
        options,
    })
}

/// Refuses a run from any checkpoint but `thread_id`'s current one, which
/// is where every run starts: the JavaScript SDK's `useStream` (the Agent
/// Chat UI's) names the newest checkpoint it read on each submit.
async fn current_checkpoint(
    state: &ApiState,
    thread_id: Option<&str>,
    named: u64,
) -> Result<(), ApiError> {
    let current = match thread_id {
        Some(thread_id) => Some(state.store().load_thread(thread_id).await?.step),
        None => None,
    };
    if current == Some(named) {
        return Ok(());
    }
    Err(ApiError::unprocessable(format!(
        "checkpoint {named} is not the thread's current one: runs from an earlier \
         checkpoint are not supported yet; read an earlier state with /threads/{{id}}/history"
    )))
}

/// The messages and files a request brings, checked.
fn run_input(
    body: &RunCreateParams,
    limits: &InputLimits,
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
    for (index, message) in messages.iter().enumerate() {
        // The content as sent (text and any image or file blocks).
        let bytes = serde_json::to_vec(message.content()).map_or(usize::MAX, |m| m.len());
        limits.check_message(format!("message {index}"), bytes)?;
    }
    limits.check_file_count(files.len())?;
    for (path, file) in &files {
        limits.check_file(path, file.content.len())?;
    }
    Ok((messages, files))
}

/// The request's `webhook`, checked: a URL a delivery can go to and a
/// secret for `tenant` to sign it with.
fn webhook_of(
    state: &ApiState,
    tenant: &TenantId,
    body: &RunCreateParams,
) -> Result<Option<String>, ApiError> {
    let url = match body.rest.get("webhook") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(url)) => url,
        Some(other) => {
            return Err(ApiError::unprocessable(format!(
                "webhook must be a URL string, not {other}"
            )));
        }
    };
    let webhooks = state.life.intake().webhooks();
    let url = webhooks
        .check(tenant, url)
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    Ok(Some(url))
}

/// The assistant's context (`assistant_context`, its secrets opened) and
/// `configurable`, overridden key by key by the request's.
fn merged_context(
    assistant: &Assistant,
    assistant_context: &Value,
    body: &RunCreateParams,
) -> Option<Value> {
    let mut context = Map::new();
    for layer in [
        Some(assistant_context),
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

/// The decisions of a `command`, which must carry `resume`.
fn command_decisions(command: &RunCommand) -> Result<Vec<Decision>, ApiError> {
    let Some(resume) = &command.resume else {
        return Err(ApiError::unprocessable("command must carry `resume`"));
    };
    decisions_of(resume)
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

#[cfg(test)]
#[path = "run_request_tests.rs"]
mod router_tests;
