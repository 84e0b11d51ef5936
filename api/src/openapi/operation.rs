//! One operation of the description and what it answers.

use schemars::{Schema, json_schema};
use serde_json::Value;

/// What an operation answers when it succeeds.
pub(super) enum Success {
    /// JSON of this schema, with this status.
    Json(u16, Schema),
    /// No body.
    Empty(u16),
    /// A body of this media type, described as a string.
    Text(u16, &'static str),
    /// JSON of this schema, or events, as the request asks (JSON-RPC
    /// methods that stream).
    JsonOrEvents(u16, Schema),
}

/// One operation: a method on a path.
pub(super) struct Operation {
    pub(super) method: &'static str,
    pub(super) path: &'static str,
    pub(super) summary: &'static str,
    pub(super) body: Option<Schema>,
    pub(super) query: Vec<Value>,
    pub(super) success: Vec<Success>,
    /// Needs an API key (when keys are configured).
    pub(super) keyed: bool,
}

/// An operation that needs a key, has no query parameters.
pub(super) fn op(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: Option<Schema>,
    success: Vec<Success>,
) -> Operation {
    Operation {
        method,
        path,
        summary,
        body,
        query: Vec::new(),
        success,
        keyed: true,
    }
}

pub(super) fn any() -> Schema {
    Schema::from(true)
}

pub(super) fn object() -> Schema {
    json_schema!({"type": "object"})
}

pub(super) fn stream() -> Vec<Success> {
    vec![Success::Text(200, "text/event-stream")]
}

/// `/wait` and `/join` answer the thread's values (or the failure) in a
/// JSON body, kept alive with blank lines while the run goes on.
pub(super) fn values() -> Vec<Success> {
    vec![Success::Json(200, any())]
}

/// An answer `select` may narrow: the whole resource, or the fields it
/// named.
pub(super) fn selectable(full: Schema) -> Schema {
    json_schema!({
        "anyOf": [full, {"type": "object", "description": "The fields `select` named."}],
    })
}

/// A list of answers `select` may narrow.
pub(super) fn selectable_list(item: Schema) -> Schema {
    json_schema!({"type": "array", "items": selectable(item)})
}

/// The `select` query parameter: fields to answer with (repeated, or
/// comma-separated).
pub(super) fn select_query() -> Value {
    serde_json::json!({
        "name": "select",
        "in": "query",
        "required": false,
        "description": "Only these fields (all when absent); a thread state's `values.<key>` narrows its values",
        "schema": {"type": "array", "items": {"type": "string"}},
        "style": "form",
        "explode": true,
    })
}
