//! The protocol's messages on the wire: commands in, their responses and
//! the events out (`@langchain/protocol`'s `Command`, `CommandResponse`,
//! `ErrorResponse` and `Event`).

use serde::Serialize;
use serde_json::{Map, Value, json};

/// A command as a client sends it: `{id, method, params}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The client's number for it, echoed in the response.
    pub id: u64,
    /// What it asks for, e.g. `run.start`.
    pub method: String,
    /// Its parameters (an object; empty when absent).
    pub params: Map<String, Value>,
}

impl Command {
    /// Reads a command from a request body, or says why it is not one.
    pub fn parse(body: &Value) -> Result<Command, String> {
        let Some(object) = body.as_object() else {
            return Err("a command must be a JSON object".to_owned());
        };
        let id = object
            .get("id")
            .and_then(Value::as_u64)
            .ok_or("a command needs a non-negative integer `id`")?;
        let method = object
            .get("method")
            .and_then(Value::as_str)
            .ok_or("a command needs a string `method`")?
            .to_owned();
        let params = match object.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params.clone(),
            Some(_) => return Err("a command's `params` must be an object".to_owned()),
        };
        Ok(Command { id, method, params })
    }
}

/// Why a command failed, as the protocol names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The parameters are wrong.
    InvalidArgument,
    /// No such method.
    UnknownCommand,
    /// Something failed on the server's side.
    UnknownError,
    /// The run named does not exist.
    NoSuchRun,
    /// The namespace named does not exist.
    NoSuchNamespace,
    /// No interrupt with that id is pending.
    NoSuchInterrupt,
    /// The checkpoint named does not exist.
    NoSuchCheckpoint,
    /// The method exists but this server does not offer it here.
    NotSupported,
}

/// A failed command: its code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    /// The protocol's code.
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
}

impl CommandError {
    /// A failure with `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        CommandError {
            code,
            message: message.into(),
        }
    }

    /// Bad parameters.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }
}

/// The response to command `id`: its result, or its error.
pub fn response(id: u64, outcome: Result<Value, CommandError>) -> Value {
    match outcome {
        Ok(result) => json!({"type": "success", "id": id, "result": result}),
        Err(e) => json!({
            "type": "error",
            "id": id,
            "error": e.code,
            "message": e.message,
        }),
    }
}

/// One event before the stream numbers it: which method (and so which
/// channel) it is on, where in the agent tree it happened, and its data.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolEvent {
    /// `values`, `updates`, `messages`, `tools`, `lifecycle`,
    /// `input.requested`, `checkpoints`, `tasks` or `custom`.
    pub method: &'static str,
    /// Empty for the root agent; `["task:<tool call id>"]` for a subagent.
    pub namespace: Vec<String>,
    /// The graph node that produced it, where one did.
    pub node: Option<&'static str>,
    /// The method's payload.
    pub data: Value,
}

impl ProtocolEvent {
    /// An event of the root agent.
    pub fn root(method: &'static str, data: Value) -> Self {
        ProtocolEvent {
            method,
            namespace: Vec::new(),
            node: None,
            data,
        }
    }

    /// The channel a subscription names to receive it.
    pub fn channel(&self) -> &'static str {
        match self.method {
            "input.requested" | "input.answered" => "input",
            other => other,
        }
    }

    /// The event as sent: numbered `seq`, identified by `event_id` (the
    /// SSE id a reconnecting client dedupes by), stamped `timestamp`
    /// (milliseconds since the epoch).
    pub fn envelope(&self, seq: u64, event_id: &str, timestamp: i64) -> Value {
        let mut params = Map::new();
        params.insert("namespace".into(), json!(self.namespace));
        params.insert("timestamp".into(), json!(timestamp));
        if let Some(node) = self.node {
            params.insert("node".into(), json!(node));
        }
        params.insert("data".into(), self.data.clone());
        json!({
            "type": "event",
            "method": self.method,
            "params": params,
            "seq": seq,
            "event_id": event_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_or_say_what_is_wrong() {
        let command = Command::parse(&json!({"id": 3, "method": "state.get"})).unwrap();
        assert_eq!(command.id, 3);
        assert!(command.params.is_empty());
        assert!(Command::parse(&json!([1])).is_err());
        assert!(Command::parse(&json!({"id": -1, "method": "x"})).is_err());
        assert!(Command::parse(&json!({"id": 1})).is_err());
        assert!(Command::parse(&json!({"id": 1, "method": "x", "params": 2})).is_err());
    }

    #[test]
    fn responses_and_events_have_the_protocol_shapes() {
        assert_eq!(
            response(1, Ok(json!({"run_id": "r"}))),
            json!({"type": "success", "id": 1, "result": {"run_id": "r"}})
        );
        let failed = response(2, Err(CommandError::invalid("no")));
        assert_eq!(failed["error"], "invalid_argument");
        let event = ProtocolEvent::root("input.requested", json!({"interrupt_id": "i"}));
        assert_eq!(event.channel(), "input");
        let sent = event.envelope(7, "e-7", 1000);
        assert_eq!(sent["params"]["namespace"], json!([]));
        assert_eq!(sent["seq"], 7);
        assert!(sent["params"].get("node").is_none());
    }
}
