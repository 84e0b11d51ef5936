//! The A2A protocol's JSON-RPC 2.0 wire, without IO: reading a request
//! envelope and a method's params, and writing tasks, their status and
//! artifact events, and errors, as the A2A specification (v0.3) names
//! them. [`crate::a2a`] serves it; keeping the wire here lets every
//! mapping be tested without a server.

use chrono::{DateTime, SecondsFormat, Utc};
use deepfleet_proto::{Role, RunStatus};
use serde_json::{Map, Value, json};

/// JSON-RPC: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: JSON, but not a request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the method's params are wrong.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the server failed.
pub const INTERNAL_ERROR: i64 = -32603;
/// A2A: the task is not there (or belongs to someone else).
pub const TASK_NOT_FOUND: i64 = -32001;
/// A2A: the task has ended and cannot be cancelled.
pub const TASK_NOT_CANCELABLE: i64 = -32002;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code (the constants above).
    pub code: i64,
    /// What the caller reads.
    pub message: String,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// `-32602` saying what is wrong with the params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// `-32001` for task `id`.
    pub fn task_not_found(id: &str) -> Self {
        Self::new(TASK_NOT_FOUND, format!("Task '{id}' not found."))
    }
}

/// The methods served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `message/send`: run the assistant, answer the task once it ends.
    Send,
    /// `message/stream`: run the assistant, stream the task's events.
    Stream,
    /// `tasks/get`: the task as it is now.
    Get,
    /// `tasks/cancel`: cancel the task's run.
    Cancel,
}

impl Method {
    /// The method named `name`, if served.
    pub fn of(name: &str) -> Option<Self> {
        match name {
            "message/send" => Some(Method::Send),
            "message/stream" => Some(Method::Stream),
            "tasks/get" => Some(Method::Get),
            "tasks/cancel" => Some(Method::Cancel),
            _ => None,
        }
    }

    /// The role the method needs, whatever the URL it came to: starting
    /// or cancelling a run is a write, reading a task is a read.
    pub fn needs(self) -> Role {
        match self {
            Method::Send | Method::Stream | Method::Cancel => Role::Submit,
            Method::Get => Role::Read,
        }
    }
}

/// A request envelope, read.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcRequest {
    /// The request's id, echoed in the answer (`null` when absent).
    pub id: Value,
    /// The method named.
    pub method: String,
    /// The params (`null` when absent).
    pub params: Value,
}

/// Reads a request envelope from a body; a failure carries the id to
/// answer with (`null` when it could not be read).
pub fn parse_request(body: &[u8]) -> Result<RpcRequest, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::new(PARSE_ERROR, format!("Parse error: {e}")),
        )
    })?;
    let Value::Object(mut object) = value else {
        return Err((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "A JSON-RPC request is an object."),
        ));
    };
    let id = object.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Err((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "id must be a string, a number or null."),
        ));
    }
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            RpcError::new(INVALID_REQUEST, "jsonrpc must be \"2.0\"."),
        ));
    }
    let Some(Value::String(method)) = object.remove("method") else {
        return Err((
            id,
            RpcError::new(INVALID_REQUEST, "method must be a string."),
        ));
    };
    let params = object.remove("params").unwrap_or(Value::Null);
    Ok(RpcRequest { id, method, params })
}

/// A success answer to request `id`.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error answer to request `id`.
pub fn error(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": error.code, "message": error.message}})
}

/// What a `message/send` or `message/stream` asks, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SendParams {
    /// The user message's text: its text parts, then its data parts as
    /// JSON, one paragraph each.
    pub text: String,
    /// The conversation (a thread id), if the client continues one.
    pub context_id: Option<String>,
    /// Whether the client waits for the end (`configuration.blocking`,
    /// true unless it says false).
    pub blocking: bool,
    /// The task the message answers (`message.taskId`), if any.
    pub task_id: Option<String>,
    /// A data part's `{"decisions": [...]}`: the answer to a task that
    /// waits for a human decision.
    pub decisions: Option<Value>,
}

/// Reads a `message/send` or `message/stream`'s params.
pub fn send_params(params: &Value) -> Result<SendParams, RpcError> {
    let Some(message) = params.get("message").filter(|m| m.is_object()) else {
        return Err(RpcError::invalid_params(
            "params.message must be an object.",
        ));
    };
    match message.get("role").and_then(Value::as_str) {
        Some("user") => {}
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "message.role must be \"user\", not \"{other}\"."
            )));
        }
        None => return Err(RpcError::invalid_params("message.role is required.")),
    }
    if message
        .get("messageId")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(RpcError::invalid_params(
            "message.messageId must be a non-empty string.",
        ));
    }
    let context_id = optional_id(message, "contextId")?;
    let task_id = optional_id(message, "taskId")?;
    let Some(parts) = message.get("parts").and_then(Value::as_array) else {
        return Err(RpcError::invalid_params("message.parts must be a list."));
    };
    let mut paragraphs = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        paragraphs.push(part_text(index, part)?);
    }
    let text = paragraphs.join("\n\n");
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts must carry some text or data.",
        ));
    }
    let blocking = params
        .pointer("/configuration/blocking")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let decisions = parts
        .iter()
        .filter(|part| part.get("kind").and_then(Value::as_str) == Some("data"))
        .find_map(|part| part.get("data").filter(|d| d.get("decisions").is_some()))
        .cloned();
    Ok(SendParams {
        text,
        context_id,
        blocking,
        task_id,
        decisions,
    })
}

/// The message's id field `name`, if set: a non-empty string.
fn optional_id(message: &Value, name: &str) -> Result<Option<String>, RpcError> {
    match message.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) if !id.is_empty() => Ok(Some(id.clone())),
        Some(_) => Err(RpcError::invalid_params(format!(
            "message.{name} must be a non-empty string."
        ))),
    }
}

/// One part as text: a text part's text, a data part's JSON. Files have
/// no counterpart in a deep agent's input.
fn part_text(index: usize, part: &Value) -> Result<String, RpcError> {
    let kind = part.get("kind").and_then(Value::as_str);
    match kind {
        Some("text") => part
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                RpcError::invalid_params(format!("message.parts[{index}].text must be a string."))
            }),
        Some("data") => match part.get("data") {
            Some(data @ Value::Object(_)) => Ok(data.to_string()),
            _ => Err(RpcError::invalid_params(format!(
                "message.parts[{index}].data must be an object."
            ))),
        },
        Some("file") => Err(RpcError::invalid_params(format!(
            "message.parts[{index}]: file parts are not supported; send text or data."
        ))),
        _ => Err(RpcError::invalid_params(format!(
            "message.parts[{index}].kind must be \"text\" or \"data\"."
        ))),
    }
}

/// Reads the task id of a `tasks/get` or `tasks/cancel`.
pub fn task_id(params: &Value) -> Result<String, RpcError> {
    match params.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        _ => Err(RpcError::invalid_params(
            "params.id must be the task's id (a non-empty string).",
        )),
    }
}

/// A task's state, as A2A names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Accepted, not started.
    Submitted,
    /// Running.
    Working,
    /// Waiting for a human decision on a gated tool call.
    InputRequired,
    /// Ended with an answer.
    Completed,
    /// Cancelled.
    Canceled,
    /// Failed or timed out.
    Failed,
}

impl TaskState {
    /// The state of a run whose record has `status` (`None` before it
    /// started) and that was `cancelled` before it started.
    pub fn of(status: Option<RunStatus>, cancelled: bool) -> Self {
        match status {
            None if cancelled => TaskState::Canceled,
            None | Some(RunStatus::Pending) => TaskState::Submitted,
            Some(RunStatus::Running | RunStatus::Waiting) => TaskState::Working,
            Some(RunStatus::AwaitingHuman) => TaskState::InputRequired,
            Some(RunStatus::Success) => TaskState::Completed,
            Some(RunStatus::Cancelled) => TaskState::Canceled,
            Some(RunStatus::Error | RunStatus::Timeout) => TaskState::Failed,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
        }
    }

    /// Whether the task will not change by itself any more (a task that
    /// waits for input is final for a stream: the client must act).
    pub fn is_final(self) -> bool {
        !matches!(self, TaskState::Submitted | TaskState::Working)
    }
}

/// A task as it is now: what every answer about it is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    /// The task id (the run id).
    pub id: String,
    /// The context id (the thread id).
    pub context_id: String,
    /// Its state.
    pub state: TaskState,
    /// When its state last changed.
    pub timestamp: DateTime<Utc>,
    /// The run's final answer, once it has one.
    pub answer: Option<String>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

impl TaskView {
    /// The Task object.
    pub fn task(&self) -> Value {
        let mut task = json!({
            "kind": "task",
            "id": self.id,
            "contextId": self.context_id,
            "status": self.status(),
        });
        if let Some(artifact) = self.artifact() {
            task["artifacts"] = json!([artifact]);
        }
        task
    }

    /// A `status-update` event; `final` ends a stream.
    pub fn status_update(&self, last: bool) -> Value {
        json!({
            "kind": "status-update",
            "taskId": self.id,
            "contextId": self.context_id,
            "status": self.status(),
            "final": last,
        })
    }

    /// An `artifact-update` event carrying the answer, once there is one.
    pub fn artifact_update(&self) -> Option<Value> {
        Some(json!({
            "kind": "artifact-update",
            "taskId": self.id,
            "contextId": self.context_id,
            "artifact": self.artifact()?,
            "append": false,
            "lastChunk": true,
        }))
    }

    /// The status: state, timestamp and, once there is something to
    /// say, the agent's message.
    fn status(&self) -> Value {
        let mut status = Map::new();
        status.insert("state".into(), self.state.as_str().into());
        status.insert(
            "timestamp".into(),
            self.timestamp
                .to_rfc3339_opts(SecondsFormat::Millis, true)
                .into(),
        );
        if let Some(text) = self.status_text() {
            status.insert("message".into(), self.agent_message(text));
        }
        Value::Object(status)
    }

    fn status_text(&self) -> Option<&str> {
        match self.state {
            TaskState::Submitted | TaskState::Working => None,
            TaskState::Completed => self.answer.as_deref(),
            TaskState::Failed => Some(self.error.as_deref().unwrap_or("The run failed.")),
            TaskState::Canceled => Some("The run was cancelled."),
            TaskState::InputRequired => Some(
                "The agent waits for a human decision on a tool call: send a message \
                 naming this task with a data part {\"decisions\": [...]}.",
            ),
        }
    }

    fn agent_message(&self, text: &str) -> Value {
        json!({
            "kind": "message",
            "role": "agent",
            "messageId": format!("{}-{}", self.id, self.state.as_str()),
            "taskId": self.id,
            "contextId": self.context_id,
            "parts": [{"kind": "text", "text": text}],
        })
    }

    fn artifact(&self) -> Option<Value> {
        let answer = self.answer.as_ref()?;
        Some(json!({
            "artifactId": format!("{}-answer", self.id),
            "name": "answer",
            "parts": [{"kind": "text", "text": answer}],
        }))
    }
}

#[cfg(test)]
#[path = "a2a_wire_tests.rs"]
mod tests;
