//! A run request checked whole before anything is written: every field a
//! create route reads (stream modes, the run options of
//! [`super::options`], `if_not_exists`, a resume command's
//! decisions, the input, the assistant, the runtime context, sealed) is
//! checked here, so a refused request has created no thread, no
//! run and no queued step. What remains for [`super::create`] can only
//! fail on the state of the thread (busy, missing) or of the back ends.

use std::collections::BTreeMap;

use chrono::Utc;
use deepfleet_proto::api::{Assistant, CheckpointPointer, ResumeDecisions, RunCreateParams};
use deepfleet_proto::{Decision, FileData, InputLimits, Message, SealedContext, TenantId};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::Runs;
use super::assistants::{self, Given};
use super::error::RunsError;
use super::modes::Modes;
use super::options::{self as run_options, RunOptions};
use super::state_values::{checkpoint_of, state_edit};
use crate::convert::{input_files, input_messages};
use crate::state_edit::{Rewind, StateEdit};

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
    /// Answers the thread's interrupted run.
    Resume(Resume),
    /// Starts a new run.
    Start(Box<NewRun>),
}

/// A checked `command.resume`.
pub struct Resume {
    /// The human's decisions.
    pub decisions: Vec<Decision>,
    /// The command's update, written first.
    pub update: Option<StateEdit>,
    /// With `strict_resume`, the interrupt ids the answer names: each must
    /// be the pending one.
    pub strict_ids: Vec<String>,
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
    /// The checkpoint it starts from and the update it writes first.
    pub rewind: Option<Rewind>,
}

/// Checks `tenant`'s `body` (for `thread_id`, or stateless) without
/// writing anything.
pub async fn check(
    runs: &Runs,
    tenant: &TenantId,
    thread_id: Option<&str>,
    body: &RunCreateParams,
) -> Result<CheckedRun, RunsError> {
    let mut modes = Modes::parse(body.stream_mode.as_ref())?;
    modes.subgraphs = body.stream_subgraphs.unwrap_or(false);
    let options = run_options::check(body)?;
    let create_missing = match body.if_not_exists.as_deref() {
        None | Some("reject") => false,
        Some("create") => true,
        Some(other) => {
            return Err(RunsError::invalid(format!(
                "if_not_exists must be create or reject; got '{other}'"
            )));
        }
    };
    let limits = runs.life.intake().limits();
    let from = checkpoint_of(
        checkpoint_id_of(body.rest.get("checkpoint_id"))?,
        pointer_of(body.rest.get("checkpoint"))?.as_ref(),
    )?;
    let update = match body.command.as_ref().and_then(|c| c.update.as_ref()) {
        Some(values) if !values.is_null() => Some(state_edit("command.update", values, limits)?),
        _ => None,
    };
    if let Some(resume) = body.command.as_ref().and_then(|c| c.resume.as_ref()) {
        if thread_id.is_none() {
            return Err(RunsError::malformed(
                "You must provide a thread_id when resuming.",
            ));
        }
        // UIs name the newest checkpoint they read, the one the run waits
        // at; any other is refused.
        if let (Some(id), Some(thread_id)) = (from, thread_id)
            && runs.store().load_thread(thread_id).await?.step != id
        {
            return Err(RunsError::invalid(
                "a resume answers the thread's pending interrupt: it cannot start from \
                 an earlier checkpoint",
            ));
        }
        let strict_ids = if strict_resume(body)? {
            named_interrupts(resume)
        } else {
            Vec::new()
        };
        let action = RunAction::Resume(Resume {
            decisions: decisions_of(resume)?,
            update,
            strict_ids,
        });
        return Ok(CheckedRun {
            modes,
            action,
            options,
        });
    }
    if body.command.is_some() && update.is_none() {
        return Err(RunsError::invalid(
            "command must carry `resume` or `update`",
        ));
    }
    if (from.is_some() || update.is_some()) && thread_id.is_none() {
        return Err(RunsError::invalid(
            "a stateless run has no checkpoint to start from or update: name a thread",
        ));
    }
    let rewind = (from.is_some() || update.is_some()).then_some(Rewind {
        checkpoint: from,
        edit: update,
    });
    // A run from a checkpoint or an update may bring no new input.
    let (input, files) = if body.input.is_none() && rewind.is_some() {
        Default::default()
    } else {
        run_input(body, limits)?
    };
    let webhook = webhook_of(runs, tenant, body)?;
    let (assistant, given) = assistants::find_for_run(runs, tenant, &body.assistant_id).await?;
    let context = merged_context(&given, body);
    let intake = runs.life.intake();
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
        rewind,
    };
    Ok(CheckedRun {
        modes,
        action: RunAction::Start(Box::new(run)),
        options,
    })
}

/// The messages and files a request brings, checked.
fn run_input(
    body: &RunCreateParams,
    limits: &InputLimits,
) -> Result<(Vec<Message>, BTreeMap<String, FileData>), RunsError> {
    let configurable = body.config.as_ref().and_then(|c| c.get("configurable"));
    if body.context.is_some()
        && configurable.is_some_and(|c| c.as_object().is_some_and(|o| !o.is_empty()))
    {
        return Err(RunsError::malformed(
            "Cannot specify both configurable and context. Prefer setting context alone.",
        ));
    }
    let Some(input) = &body.input else {
        return Err(RunsError::invalid("input is required"));
    };
    let messages = input_messages(input).map_err(|e| RunsError::invalid(e.0))?;
    let files = input_files(input, Utc::now()).map_err(|e| RunsError::invalid(e.0))?;
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
    runs: &Runs,
    tenant: &TenantId,
    body: &RunCreateParams,
) -> Result<Option<String>, RunsError> {
    let url = match body.rest.get("webhook") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(url)) => url,
        Some(other) => {
            return Err(RunsError::invalid(format!(
                "webhook must be a URL string, not {other}"
            )));
        }
    };
    let webhooks = runs.life.intake().webhooks();
    let url = webhooks
        .check(tenant, url)
        .map_err(|e| RunsError::invalid(e.to_string()))?;
    Ok(Some(url))
}

/// The assistant's context and `configurable` (as `given`, its secrets
/// opened), overridden key by key by the request's.
fn merged_context(given: &Given, body: &RunCreateParams) -> Option<Value> {
    let mut context = Map::new();
    for layer in [
        Some(&given.context),
        given.config.get("configurable"),
        body.config.as_ref().and_then(|c| c.get("configurable")),
        body.context.as_ref(),
    ] {
        if let Some(Value::Object(map)) = layer {
            context.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
    }
    (!context.is_empty()).then_some(Value::Object(context))
}

/// A run's `checkpoint_id` option, which must be a string, if set.
fn checkpoint_id_of(value: Option<&Value>) -> Result<Option<&str>, RunsError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(RunsError::invalid(format!(
            "checkpoint_id must be a string, not {other}"
        ))),
    }
}

/// A run's `checkpoint` option (an address, or an id), if set.
fn pointer_of(value: Option<&Value>) -> Result<Option<CheckpointPointer>, RunsError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => CheckpointPointer::deserialize(value)
            .map(Some)
            .map_err(|e| RunsError::invalid(format!("checkpoint: {e}"))),
    }
}

/// The request's `strict_resume` (false when unset).
fn strict_resume(body: &RunCreateParams) -> Result<bool, RunsError> {
    match body.rest.get("strict_resume") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(strict)) => Ok(*strict),
        Some(other) => Err(RunsError::invalid(format!(
            "strict_resume must be a boolean, not {other}"
        ))),
    }
}

/// The interrupt ids a resume value names: the keys of a map of
/// interrupt id to answer (none for a bare answer).
fn named_interrupts(resume: &Value) -> Vec<String> {
    match resume.as_object() {
        Some(map) if !map.contains_key("decisions") => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The decisions of a resume value: `{"decisions": [...]}`, or a map of
/// interrupt id to that (one interrupt is pending at a time).
pub fn decisions_of(resume: &Value) -> Result<Vec<Decision>, RunsError> {
    let value = if resume.get("decisions").is_some() {
        resume
    } else {
        match resume.as_object().and_then(|m| m.values().next()) {
            Some(inner) if inner.get("decisions").is_some() => inner,
            _ => {
                return Err(RunsError::invalid("resume must be {\"decisions\": [...]}"));
            }
        }
    };
    ResumeDecisions::deserialize(value)
        .map(|r| r.decisions)
        .map_err(|e| RunsError::invalid(format!("decisions: {e}")))
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
        assert_eq!(named_interrupts(&by_id), vec!["int-1".to_owned()]);
        assert!(named_interrupts(&plain).is_empty());
    }
}
