//! The thread streaming protocol's two HTTP endpoints (`@langchain/protocol`):
//! commands and filtered event streams of a thread.

use schemars::json_schema;

use super::operation::Operation;
use super::operation::{Success, op, stream};

/// `POST /threads/{id}/commands` and `POST /threads/{id}/stream/events`.
pub(super) fn operations() -> Vec<Operation> {
    let command = json_schema!({
        "type": "object",
        "required": ["id", "method"],
        "properties": {
            "id": {"type": "integer", "minimum": 0},
            "method": {"type": "string"},
            "params": {"type": "object"},
        },
    });
    let answer = json_schema!({
        "type": "object",
        "required": ["type", "id"],
        "properties": {
            "type": {"type": "string", "enum": ["success", "error"]},
            "id": {"type": ["integer", "null"]},
            "result": {"type": "object"},
            "error": {"type": "string"},
            "message": {"type": "string"},
        },
    });
    let request = json_schema!({
        "type": "object",
        "required": ["channels"],
        "properties": {
            "channels": {"type": "array", "items": {"type": "string"}},
            "namespaces": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "string"}},
            },
            "depth": {"type": "integer", "minimum": 0},
            "since": {"type": "integer", "minimum": 0},
        },
    });
    vec![
        op(
            "post",
            "/threads/{thread_id}/commands",
            "Send a streaming-protocol command (run.start, input.respond, state.*)",
            Some(command),
            vec![Success::Json(200, answer)],
        ),
        op(
            "post",
            "/threads/{thread_id}/stream/events",
            "Stream a thread's protocol events, filtered by channel and namespace",
            Some(request),
            stream(),
        ),
    ]
}
