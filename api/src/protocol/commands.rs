//! `POST /threads/{id}/commands`: the protocol's commands over HTTP, one
//! per request, answered in the body (`success` with a result, or
//! `error` with the protocol's code). Each maps onto what the Agent
//! Server API already does, so the same checks guard both:
//!
//! - `run.start` starts a run on the thread (made on first use), resumes
//!   it when it waits for a human (the input is the answer), or, while a
//!   run is going, queues the input as the next run (the thread's
//!   multitask strategy; this engine does not inject input into a run
//!   mid-step). `config.configurable.checkpoint_id` starts from that
//!   checkpoint (a fork).
//! - `input.respond` answers the pending interrupt by its id.
//! - `state.get`, `state.listCheckpoints` and `state.fork` read the
//!   thread, its history, and start a run from a checkpoint.
//! - `agent.getTree` tells a run and the subagents it started.
//!
//! `input.inject` and the WebSocket-only `subscription.*` commands answer
//! `not_supported`; an unknown method, `unknown_command`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::{Extension, Json};
use deepfleet_proto::api::RunCreateParams;
use deepfleet_proto::{Caller, Role, RunStatus};
use deepfleet_store::HistoryQuery;
use serde_json::{Map, Value, json};

use super::wire::{Command, CommandError, ErrorCode, response};
use crate::checkpoint_ref::metadata;
use crate::error::ApiError;
use crate::routes::require;
use crate::state::ApiState;
use crate::threads::history::MAX_HISTORY_LIMIT;
use crate::threads::{thread_state, waiting};
use deepfleet_scheduler::convert::to_json;
use deepfleet_scheduler::repo::runs::RunMeta;
use deepfleet_scheduler::repo::threads::{ThreadRecord, threads};
use deepfleet_scheduler::runs::create::create_run;
use deepfleet_scheduler::runs::load_run;
use deepfleet_scheduler::runs::thread_runs::newest_run;

/// Checkpoints a `state.listCheckpoints` answers by default.
const DEFAULT_CHECKPOINTS: usize = 10;

/// The handler: a 422 for a body that is not a command, a 404 for another
/// tenant's thread, else the command's response.
pub(super) async fn command(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(thread_id): Path<String>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let body: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::unprocessable(format!("the body is not JSON: {e}")))?;
    let command = Command::parse(&body).map_err(ApiError::unprocessable)?;
    require(&caller, needs(&command.method))?;
    let record = threads(state.store()).get(&thread_id).await?;
    if record.as_ref().is_some_and(|r| r.tenant != caller.tenant) {
        return Err(ApiError::not_found(format!(
            "Thread '{thread_id}' not found."
        )));
    }
    let thread = Thread {
        state: &state,
        caller: &caller,
        id: &thread_id,
        record,
    };
    let outcome = thread.run(&command).await;
    Ok(Json(response(command.id, outcome)))
}

/// The role a command needs, whatever the URL it came to: the commands
/// that start, resume or fork a run are writes; reading state, history
/// and the run tree (and the commands that answer `not_supported` or
/// `unknown_command`, which change nothing) are reads.
fn needs(method: &str) -> Role {
    match method {
        "run.start" | "input.respond" | "state.fork" | "input.inject" => Role::Submit,
        _ => Role::Read,
    }
}

/// The thread a command is for (`record` is `None` until it exists).
struct Thread<'a> {
    state: &'a ApiState,
    caller: &'a Caller,
    id: &'a str,
    record: Option<ThreadRecord>,
}

impl Thread<'_> {
    async fn run(&self, command: &Command) -> Result<Value, CommandError> {
        let params = &command.params;
        match command.method.as_str() {
            "run.start" => self.run_start(params).await,
            "input.respond" => self.input_respond(params).await,
            "state.get" => self.state_get(params).await,
            "state.listCheckpoints" => self.list_checkpoints(params).await,
            "state.fork" => self.fork(params).await,
            "agent.getTree" => self.tree(params).await,
            "input.inject" => Err(CommandError::new(
                ErrorCode::NotSupported,
                "input cannot be injected into a running step; run.start queues it as the \
                 thread's next run",
            )),
            "subscription.subscribe" | "subscription.unsubscribe" | "subscription.reconnect" => {
                Err(CommandError::new(
                    ErrorCode::NotSupported,
                    "subscriptions are the WebSocket transport's; over HTTP each POST \
                     /threads/{thread_id}/stream/events is one",
                ))
            }
            other => Err(CommandError::new(
                ErrorCode::UnknownCommand,
                format!("unknown command '{other}'"),
            )),
        }
    }

    /// The thread, which must exist for reads.
    fn existing(&self) -> Result<&ThreadRecord, CommandError> {
        self.record
            .as_ref()
            .ok_or_else(|| CommandError::invalid(format!("thread '{}' has no state yet", self.id)))
    }

    async fn run_start(&self, params: &Map<String, Value>) -> Result<Value, CommandError> {
        if params.contains_key("langsmith_tracer") {
            return Err(CommandError::new(
                ErrorCode::NotSupported,
                "LangSmith tracing is not available; runs are traced over OpenTelemetry",
            ));
        }
        let assistant_id = required_str(params, "assistant_id")?;
        let input = params.get("input").cloned().unwrap_or(Value::Null);
        let waiting = match &self.record {
            Some(record) => waiting(self.state, record).await.map_err(from_api)?,
            None => None,
        };
        let mut body = json!({"assistant_id": assistant_id});
        if waiting.is_some() {
            body["command"] = json!({"resume": input});
        } else {
            body["input"] = input;
            body["if_not_exists"] = json!("create");
            let (config, checkpoint_id) = split_checkpoint(params.get("config"))?;
            if let Some(config) = config {
                body["config"] = config;
            }
            if let Some(id) = checkpoint_id {
                body["checkpoint_id"] = json!(id);
            }
            if let Some(strategy) = params.get("multitask_strategy") {
                body["multitask_strategy"] = strategy.clone();
            }
        }
        if let Some(metadata) = params.get("metadata") {
            body["metadata"] = metadata.clone();
        }
        let meta = self.create(body).await?;
        Ok(json!({"run_id": meta.run_id}))
    }

    async fn input_respond(&self, params: &Map<String, Value>) -> Result<Value, CommandError> {
        if params.get("goto").is_some_and(|g| !g.is_null()) {
            return Err(CommandError::new(
                ErrorCode::NotSupported,
                "goto: a deep agent's graph has no node to jump to",
            ));
        }
        let (namespace, interrupt_id, answer) = match params.get("responses") {
            Some(Value::Array(entries)) => match entries.as_slice() {
                [one] => respond_entry(
                    one.as_object()
                        .ok_or_else(|| CommandError::invalid("each response must be an object"))?,
                )?,
                _ => {
                    return Err(CommandError::invalid(
                        "one interrupt is pending at a time: send one response",
                    ));
                }
            },
            Some(_) => return Err(CommandError::invalid("`responses` must be an array")),
            None => respond_entry(params)?,
        };
        if !namespace.is_empty() {
            return Err(CommandError::new(
                ErrorCode::NoSuchNamespace,
                "interrupts are answered on the root agent (namespace [])",
            ));
        }
        let record = self.existing()?;
        let waiting = waiting(self.state, record).await.map_err(from_api)?;
        let Some(waiting) = waiting.filter(|w| w.interrupts.iter().any(|i| i.id == interrupt_id))
        else {
            return Err(CommandError::new(
                ErrorCode::NoSuchInterrupt,
                format!("no interrupt '{interrupt_id}' is pending on this thread"),
            ));
        };
        let interrupted = load_run(
            &self.state.runs,
            &self.caller.tenant,
            self.id,
            &waiting.run_id,
        )
        .await
        .map_err(from_api)?;
        let mut command = json!({"resume": answer});
        if let Some(update) = params.get("update").filter(|u| !u.is_null()) {
            command["update"] = update.clone();
        }
        let mut body = json!({"assistant_id": interrupted.assistant_id, "command": command});
        if let Some(metadata) = params.get("metadata") {
            body["metadata"] = metadata.clone();
        }
        self.create(body).await?;
        Ok(json!({}))
    }

    async fn state_get(&self, params: &Map<String, Value>) -> Result<Value, CommandError> {
        root_only(params)?;
        let state = thread_state(self.state, self.existing()?)
            .await
            .map_err(from_api)?;
        let mut values = state.values;
        if let Some(keys) = params.get("keys").filter(|k| !k.is_null()) {
            let keys: Vec<String> = serde_json::from_value(keys.clone())
                .map_err(|_| CommandError::invalid("`keys` must be an array of strings"))?;
            if let Value::Object(map) = &mut values {
                map.retain(|k, _| keys.contains(k));
            }
        }
        Ok(json!({"values": values, "checkpoint": {"id": state.checkpoint.checkpoint_id}}))
    }

    async fn list_checkpoints(&self, params: &Map<String, Value>) -> Result<Value, CommandError> {
        root_only(params)?;
        let limit = match params.get("limit") {
            None | Some(Value::Null) => DEFAULT_CHECKPOINTS,
            Some(value) => value
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n <= MAX_HISTORY_LIMIT)
                .ok_or_else(|| {
                    CommandError::invalid(format!(
                        "`limit` must be an integer from 0 to {MAX_HISTORY_LIMIT}"
                    ))
                })?,
        };
        let mut query = HistoryQuery::newest(limit);
        if let Some(before) = params.get("before").filter(|b| !b.is_null()) {
            query.before = Some(checkpoint_number(before)?);
        }
        let record = self.existing()?;
        let found = self
            .state
            .store()
            .checkpoints(&record.thread_id, &query)
            .await
            .map_err(from_api)?;
        let checkpoints: Vec<Value> = found
            .iter()
            .map(|c| {
                json!({
                    "id": c.id.to_string(),
                    "timestamp": c.created_at.to_rfc3339(),
                    "step": c.id,
                    "metadata": to_json(&metadata(c)),
                })
            })
            .collect();
        Ok(json!({"checkpoints": checkpoints}))
    }

    async fn fork(&self, params: &Map<String, Value>) -> Result<Value, CommandError> {
        let raw = params
            .get("checkpoint_id")
            .ok_or_else(|| CommandError::invalid("`checkpoint_id` is required"))?;
        let number = checkpoint_number(raw)?;
        let record = self.existing()?;
        let found = self
            .state
            .store()
            .checkpoint_at(&record.thread_id, number)
            .await
            .map_err(from_api)?
            .ok_or_else(|| {
                CommandError::new(
                    ErrorCode::NoSuchCheckpoint,
                    format!("checkpoint '{number}' is not kept on this thread"),
                )
            })?;
        // The fork runs the assistant that made the checkpoint, else the
        // thread's newest.
        let assistant_id = match self.run_meta(&found.run_id).await {
            Some(meta) => meta.assistant_id,
            None => {
                self.newest_run()
                    .await?
                    .ok_or_else(|| {
                        CommandError::invalid(
                            "no run on this thread names an assistant to fork with; use run.start \
                         with config.configurable.checkpoint_id",
                        )
                    })?
                    .assistant_id
            }
        };
        let mut body = json!({"assistant_id": assistant_id, "checkpoint_id": number.to_string()});
        if let Some(input) = params.get("input").filter(|i| !i.is_null()) {
            body["input"] = input.clone();
        }
        let (config, _) = split_checkpoint(params.get("config"))?;
        if let Some(config) = config {
            body["config"] = config;
        }
        let meta = self.create(body).await?;
        Ok(json!({"run_id": meta.run_id, "thread_id": meta.thread_id}))
    }

    async fn tree(&self, params: &Map<String, Value>) -> Result<Value, CommandError> {
        let meta = match params.get("run_id").and_then(Value::as_str) {
            Some(run_id) => load_run(&self.state.runs, &self.caller.tenant, self.id, run_id)
                .await
                .map_err(|_| {
                    CommandError::new(
                        ErrorCode::NoSuchRun,
                        format!("no run '{run_id}' on this thread"),
                    )
                })?,
            None => self.newest_run().await?.ok_or_else(|| {
                CommandError::new(ErrorCode::NoSuchRun, "this thread has no run yet")
            })?,
        };
        let (_, status) = self
            .state
            .runs
            .life
            .finished(&meta)
            .await
            .map_err(from_api)?;
        let status = agent_status(status);
        let events = self
            .state
            .store()
            .run_events(&meta.run_id, None, MAX_TREE_EVENTS)
            .await
            .map_err(from_api)?;
        let mut children: Vec<Vec<String>> = Vec::new();
        for (_, event) in events {
            if !event.namespace.is_empty() && !children.contains(&event.namespace) {
                children.push(event.namespace);
            }
        }
        let child_status = if matches!(status, "completed" | "failed") {
            "completed"
        } else {
            "running"
        };
        let children: Vec<Value> = children
            .into_iter()
            .map(|ns| json!({"namespace": ns, "status": child_status, "graph_name": "task"}))
            .collect();
        Ok(json!({"tree": {
            "namespace": [],
            "status": status,
            "graph_name": meta.graph_id,
            "children": children,
        }}))
    }

    /// Creates a run (or resumes one) from an Agent Server run body.
    async fn create(&self, body: Value) -> Result<RunMeta, CommandError> {
        let body: RunCreateParams =
            serde_json::from_value(body).map_err(|e| CommandError::invalid(e.to_string()))?;
        create_run(
            &self.state.runs,
            &self.caller.tenant,
            Some(self.id),
            &body,
            None,
        )
        .await
        .map_err(from_api)
    }

    async fn run_meta(&self, run_id: &str) -> Option<RunMeta> {
        if run_id.is_empty() {
            return None;
        }
        load_run(&self.state.runs, &self.caller.tenant, self.id, run_id)
            .await
            .ok()
    }

    async fn newest_run(&self) -> Result<Option<RunMeta>, CommandError> {
        newest_run(&self.state.runs, self.id)
            .await
            .map_err(from_api)
    }
}

/// Run events read to find a run's subagents.
const MAX_TREE_EVENTS: usize = 1024;

/// The protocol's status of a run in `status`.
fn agent_status(status: Option<RunStatus>) -> &'static str {
    match status {
        None | Some(RunStatus::Pending) => "started",
        Some(RunStatus::Running | RunStatus::Waiting) => "running",
        Some(RunStatus::AwaitingHuman) => "interrupted",
        Some(RunStatus::Success) => "completed",
        Some(RunStatus::Error | RunStatus::Cancelled | RunStatus::Timeout) => "failed",
    }
}

/// A required string parameter.
fn required_str<'p>(params: &'p Map<String, Value>, name: &str) -> Result<&'p str, CommandError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| CommandError::invalid(format!("`{name}` must be a string")))
}

/// One response of `input.respond`: its namespace, interrupt id, answer.
fn respond_entry(entry: &Map<String, Value>) -> Result<(Vec<String>, String, Value), CommandError> {
    let namespace: Vec<String> = match entry.get("namespace") {
        None | Some(Value::Null) => Vec::new(),
        Some(value) => serde_json::from_value(value.clone())
            .map_err(|_| CommandError::invalid("`namespace` must be an array of strings"))?,
    };
    let interrupt_id = required_str(entry, "interrupt_id")?.to_owned();
    let answer = entry
        .get("response")
        .cloned()
        .ok_or_else(|| CommandError::invalid("`response` is required"))?;
    Ok((namespace, interrupt_id, answer))
}

/// Refuses a namespace other than the root's: subagents keep no state of
/// their own between calls.
fn root_only(params: &Map<String, Value>) -> Result<(), CommandError> {
    match params.get("namespace") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(items)) if items.is_empty() => Ok(()),
        Some(Value::Array(_)) => Err(CommandError::new(
            ErrorCode::NoSuchNamespace,
            "only the root agent's state is kept (namespace [])",
        )),
        Some(_) => Err(CommandError::invalid(
            "`namespace` must be an array of strings",
        )),
    }
}

/// A checkpoint id as a number (ids are strings on the wire).
fn checkpoint_number(raw: &Value) -> Result<u64, CommandError> {
    raw.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| raw.as_u64())
        .ok_or_else(|| {
            CommandError::new(
                ErrorCode::NoSuchCheckpoint,
                format!("{raw} is not a checkpoint id of this thread"),
            )
        })
}

/// A run's `config` without `configurable.checkpoint_id` (which the SDK
/// puts there for a fork), and that id.
fn split_checkpoint(
    config: Option<&Value>,
) -> Result<(Option<Value>, Option<String>), CommandError> {
    let Some(config) = config.filter(|c| !c.is_null()) else {
        return Ok((None, None));
    };
    let mut config = config.clone();
    let Some(object) = config.as_object_mut() else {
        return Err(CommandError::invalid("`config` must be an object"));
    };
    let checkpoint = match object
        .get_mut("configurable")
        .and_then(Value::as_object_mut)
    {
        Some(configurable) => configurable.remove("checkpoint_id"),
        None => None,
    };
    let checkpoint = match checkpoint {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(_) => return Err(CommandError::invalid("checkpoint_id must be a string")),
    };
    Ok((Some(config), checkpoint))
}

/// A failed API call as a command error: the client's mistakes are
/// `invalid_argument`, the server's `unknown_error`.
fn from_api(error: impl Into<ApiError>) -> CommandError {
    let error = error.into();
    let code = if error.status.is_client_error() {
        ErrorCode::InvalidArgument
    } else {
        ErrorCode::UnknownError
    };
    CommandError::new(code, error.detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_in_config_is_taken_out_of_the_context() {
        let config = json!({"configurable": {"checkpoint_id": "4", "user": "u"}, "tags": ["a"]});
        let (rest, id) = split_checkpoint(Some(&config)).unwrap();
        assert_eq!(id.as_deref(), Some("4"));
        assert_eq!(
            rest.unwrap(),
            json!({"configurable": {"user": "u"}, "tags": ["a"]})
        );
        assert!(split_checkpoint(Some(&json!(3))).is_err());
        assert_eq!(split_checkpoint(None).unwrap(), (None, None));
    }

    #[test]
    fn responses_name_an_interrupt_and_an_answer() {
        let one = json!({"namespace": [], "interrupt_id": "r1", "response": {"decisions": []}});
        let (ns, id, answer) = respond_entry(one.as_object().unwrap()).unwrap();
        assert!(ns.is_empty());
        assert_eq!(id, "r1");
        assert_eq!(answer, json!({"decisions": []}));
        assert!(respond_entry(json!({"interrupt_id": "r1"}).as_object().unwrap()).is_err());
        assert!(root_only(json!({"namespace": ["task:x"]}).as_object().unwrap()).is_err());
        assert_eq!(checkpoint_number(&json!("12")).unwrap(), 12);
        assert_eq!(
            checkpoint_number(&json!("x")).unwrap_err().code,
            ErrorCode::NoSuchCheckpoint
        );
        assert_eq!(agent_status(Some(RunStatus::Timeout)), "failed");
    }
}
