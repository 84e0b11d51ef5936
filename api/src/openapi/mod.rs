//! The API's OpenAPI 3.1 description, served at `/openapi.json`, and
//! `/docs`, a page that renders it without any outside script (nothing
//! beyond the server may be reachable).
//!
//! Bodies, answers and query strings are the wire types of
//! `deepfleet_proto::api`, described by their `JsonSchema` derives, so a
//! field added there is described at once; only the operations are
//! written by hand, one module per resource (`assistants`, `threads`,
//! `runs`, `following`, `thread_protocol`, `crons_and_store`, `protocols`
//! (A2A and MCP), `system`), with the schemas' generators in `schemas`,
//! the links between operations in `links` and the page in `docs_page`. A
//! test checks them against the router both ways, so a route added
//! without a description (or a described one left unrouted) fails by
//! name.

mod assistants;
mod crons_and_store;
mod docs_page;
mod following;
mod links;
mod operation;
mod protocols;
mod runs;
mod schemas;
mod system;
mod thread_protocol;
mod threads;

use std::sync::OnceLock;

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::routes::{PUBLIC, Routes};
use docs_page::{DOCS_PAGE, script_safe};
use links::{example, links};
use operation::{Operation, Success};
use schemas::Schemas;

/// The routes of the description; like `/ok`, they need no key.
pub(super) fn routes() -> Routes {
    Routes::new()
        .get("/openapi.json", PUBLIC, openapi_json)
        .get("/docs", PUBLIC, docs)
}

async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        description().to_string(),
    )
        .into_response()
}

async fn docs() -> Html<String> {
    Html(DOCS_PAGE.replace("__DESCRIPTION__", &script_safe(&description().to_string())))
}

/// The description, built once.
pub fn description() -> &'static Value {
    static DESCRIPTION: OnceLock<Value> = OnceLock::new();
    DESCRIPTION.get_or_init(build)
}

fn build() -> Value {
    let mut schemas = Schemas::new();
    let operations = operations(&mut schemas);
    let mut paths = Map::new();
    for operation in &operations {
        let entry = paths.entry(operation.path).or_insert_with(|| json!({}));
        let mut described = operation_json(operation);
        let links = links(operation, &operations);
        if !links.is_empty() {
            described["responses"]["200"]["links"] = Value::Object(links);
        }
        entry[operation.method] = described;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "deepfleet",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The LangGraph Agent Server API, as deepfleet's scheduler serves it.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas.into_components(),
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
            },
        },
        "security": [{"apiKey": []}],
    })
}

fn operation_json(operation: &Operation) -> Value {
    let mut parameters: Vec<Value> = path_parameters(operation.path)
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    parameters.extend(operation.query.iter().cloned());
    let error = json!({
        "description": "Refused: the body says why.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    });
    let mut responses = Map::new();
    for success in &operation.success {
        let (status, answer) = match success {
            Success::Json(status, schema) => (
                status,
                json!({"description": "Done.", "content": {"application/json": {"schema": schema}}}),
            ),
            Success::Empty(status) => (status, json!({"description": "Done, no body."})),
            // An event stream is described event by event (what
            // schemathesis checks each event against).
            Success::Text(status, "text/event-stream") => (
                status,
                json!({"description": "Events, until the run ends.", "content": {"text/event-stream": {"schema": {
                    "type": "object",
                    "required": ["event", "data"],
                    "properties": {
                        "event": {"type": "string"},
                        "data": {"type": "string", "description": "JSON"},
                        "id": {"type": "string"},
                    },
                }}}}),
            ),
            // JSON-RPC over HTTP: one answer, or (a streaming method)
            // events whose data are answers, with no event names.
            Success::JsonOrEvents(status, schema) => (
                status,
                json!({"description": "The JSON-RPC answer, or its events.", "content": {
                    "application/json": {"schema": schema},
                    "text/event-stream": {"schema": {
                        "type": "object",
                        "properties": {
                            "data": {"type": "string", "description": "A JSON-RPC answer"},
                            "id": {"type": "string"},
                        },
                    }},
                }}),
            ),
            Success::Text(status, media) => (
                status,
                json!({"description": "Done.", "content": {*media: {"schema": {"type": "string"}}}}),
            ),
        };
        responses.insert(status.to_string(), answer);
    }
    responses.insert("4XX".into(), error);
    let mut out = json!({
        "operationId": operation_id(operation),
        "summary": operation.summary,
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(body) = &operation.body {
        let mut content = json!({"schema": body});
        if let Some(example) = example(operation.method, operation.path) {
            content["example"] = example;
        }
        out["requestBody"] = json!({
            "required": true,
            "content": {"application/json": content},
        });
    }
    if !operation.keyed {
        out["security"] = json!([]);
    }
    out
}

/// The `{name}` segments of a path.
pub(crate) fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

/// A unique id: the method and the path's words (`post_threads_runs_wait`
/// for `POST /threads/{thread_id}/runs/wait`, parameters marked `by_`, a
/// trailing slash `_slash`).
fn operation_id(operation: &Operation) -> String {
    let mut id = operation.method.to_owned();
    for segment in operation.path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => {
                id.push_str("by_");
                id.push_str(name);
            }
            None => id.push_str(&segment.replace(['.', '-'], "_")),
        }
    }
    // `/mcp/` beside `/mcp`.
    if operation.path.len() > 1 && operation.path.ends_with('/') {
        id.push_str("_slash");
    }
    id
}

/// Every operation of the router.
fn operations(s: &mut Schemas) -> Vec<Operation> {
    let mut all = system::operations(s);
    all.extend(assistants::operations(s));
    all.extend(assistants::graph_operations(s));
    all.extend(threads::operations(s));
    all.extend(threads::state_operations(s));
    all.extend(runs::operations(s));
    all.extend(following::operations(s));
    all.extend(thread_protocol::operations());
    all.extend(crons_and_store::operations(s));
    all.extend(protocols::operations(s));
    all.sort_by_key(|o| (o.path, o.method));
    all
}

#[cfg(test)]
mod tests;
