//! The API's OpenAPI 3.1 description, served at `/openapi.json`, and
//! `/docs`, a page that renders it without any outside script (nothing
//! beyond the server may be reachable).
//!
//! Bodies, answers and query strings are the wire types of
//! `deepfleet_proto::api`, described by their `JsonSchema` derives, so a
//! field added there is described at once; only the list of operations
//! is written here. A test checks it against the router both ways, so a
//! route added without a description (or a described one left unrouted)
//! fails by name.

use std::sync::OnceLock;

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use deepfleet_proto::Item;
use deepfleet_proto::api::{
    Assistant, AssistantCountParams, AssistantCreateParams, AssistantLatestParams,
    AssistantPatchParams, AssistantSearchParams, AssistantVersionsParams, BatchResponse,
    BatchRunsQuery, BatchRunsResponse, Cron, CronCountParams, CronCreateParams, CronSearchParams,
    CronUpdateParams, ErrorResponse, InfoResponse, ItemDeleteParams, ItemGetQuery, ItemPutParams,
    ItemSearchParams, ItemSearchResponse, NamespaceListParams, NamespaceListResponse, OkResponse,
    Run, RunCancelManyParams, RunCancelManyQuery, RunCancelQuery, RunCreateParams, RunListQuery,
    RunStreamQuery, Thread, ThreadCountParams, ThreadCreateParams, ThreadHistoryParams,
    ThreadPatchParams, ThreadPruneParams, ThreadPruneResponse, ThreadSearchParams, ThreadState,
    ThreadStateCheckpointParams,
};
use schemars::generate::{Contract, SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema, json_schema};
use serde_json::{Map, Value, json};

use super::state::ApiState;

/// The routes of the description; like `/ok`, they need no key.
pub(super) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/openapi.json", get(openapi_json))
        .route("/docs", get(docs))
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

/// JSON that can sit inside a `<script>` element: `<` never appears raw,
/// so no `</script>` closes it early.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

/// The description, built once.
pub fn description() -> &'static Value {
    static DESCRIPTION: OnceLock<Value> = OnceLock::new();
    DESCRIPTION.get_or_init(build)
}

/// What an operation answers when it succeeds.
enum Success {
    /// JSON of this schema, with this status.
    Json(u16, Schema),
    /// No body.
    Empty(u16),
    /// A body of this media type, described as a string.
    Text(u16, &'static str),
}

/// One operation: a method on a path.
struct Operation {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: Option<Schema>,
    query: Vec<Value>,
    success: Vec<Success>,
    /// Needs an API key (when keys are configured).
    keyed: bool,
}

/// The schemas of bodies (as they are read) and of answers (as they are
/// written), collected into `components.schemas`.
struct Schemas {
    requests: SchemaGenerator,
    responses: SchemaGenerator,
    inline: SchemaGenerator,
}

impl Schemas {
    fn new() -> Self {
        let settings = |contract: Contract, inline: bool| {
            let mut s = SchemaSettings::draft2020_12();
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
            s.contract = contract;
            s.inline_subschemas = inline;
            s.into_generator()
        };
        Schemas {
            requests: settings(Contract::Deserialize, false),
            responses: settings(Contract::Serialize, false),
            inline: settings(Contract::Deserialize, true),
        }
    }

    fn request<T: JsonSchema>(&mut self) -> Option<Schema> {
        Some(self.requests.subschema_for::<T>())
    }

    fn response<T: JsonSchema>(&mut self) -> Schema {
        self.responses.subschema_for::<T>()
    }

    /// The query parameters of the query-string type `T`: one per field.
    /// A query value is absent rather than `null`, so `null` is dropped
    /// from their types and defaults.
    fn query<T: JsonSchema>(&mut self) -> Vec<Value> {
        let root = self.inline.root_schema_for::<T>();
        let required: Vec<&str> = root
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = root.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        properties
            .iter()
            .map(|(name, schema)| {
                let mut schema = schema.clone();
                let description = schema
                    .as_object_mut()
                    .and_then(|s| s.remove("description"))
                    .unwrap_or(Value::Null);
                drop_null_type(&mut schema);
                let mut param = json!({
                    "name": name,
                    "in": "query",
                    "required": required.contains(&name.as_str()),
                    "schema": schema,
                });
                if let Some(object) = param.as_object_mut()
                    && !description.is_null()
                {
                    object.insert("description".into(), description);
                }
                param
            })
            .collect()
    }

    /// Every collected definition, with `ErrorResponse` (every refusal's
    /// body). A name both contracts describe is kept once: the tests
    /// check that both describe it alike.
    fn into_components(mut self) -> Map<String, Value> {
        self.responses.subschema_for::<ErrorResponse>();
        let mut all = self.requests.take_definitions(true);
        for (name, schema) in self.responses.take_definitions(true) {
            all.entry(name).or_insert(schema);
        }
        all
    }
}

fn drop_null_type(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut()
        && object.get("default") == Some(&Value::Null)
    {
        object.remove("default");
    }
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema["type"] = only;
        }
    }
}

/// Every operation of the router.
fn operations(s: &mut Schemas) -> Vec<Operation> {
    let mut all = system(s);
    all.extend(assistants(s));
    all.extend(threads(s));
    all.extend(runs(s));
    all.extend(following(s));
    all.extend(crons_and_store(s));
    all.sort_by_key(|o| (o.path, o.method));
    all
}

/// An operation that needs a key, has no query parameters.
fn op(
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

fn any() -> Schema {
    Schema::from(true)
}

fn object() -> Schema {
    json_schema!({"type": "object"})
}

fn stream() -> Vec<Success> {
    vec![Success::Text(200, "text/event-stream")]
}

/// `/wait` and `/join` answer the thread's values (or the failure) in a
/// JSON body, kept alive with blank lines while the run goes on.
fn values() -> Vec<Success> {
    vec![Success::Json(200, any())]
}

/// The routes that need no key.
fn system(s: &mut Schemas) -> Vec<Operation> {
    vec![
        Operation {
            keyed: false,
            ..op(
                "get",
                "/ok",
                "Liveness",
                None,
                vec![Success::Json(200, s.response::<OkResponse>())],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/info",
                "Server information",
                None,
                vec![Success::Json(200, s.response::<InfoResponse>())],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/metrics",
                "Prometheus metrics",
                None,
                vec![Success::Text(200, "text/plain")],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/openapi.json",
                "This description",
                None,
                vec![Success::Json(200, object())],
            )
        },
        Operation {
            keyed: false,
            ..op(
                "get",
                "/docs",
                "This description, rendered",
                None,
                vec![Success::Text(200, "text/html")],
            )
        },
    ]
}

/// Assistants.
fn assistants(s: &mut Schemas) -> Vec<Operation> {
    vec![
        op(
            "post",
            "/assistants",
            "Create an assistant",
            s.request::<AssistantCreateParams>(),
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "post",
            "/assistants/search",
            "Search assistants",
            s.request::<AssistantSearchParams>(),
            vec![Success::Json(200, s.response::<Vec<Assistant>>())],
        ),
        op(
            "post",
            "/assistants/count",
            "Count assistants",
            s.request::<AssistantCountParams>(),
            vec![Success::Json(200, s.response::<u64>())],
        ),
        op(
            "get",
            "/assistants/{assistant_id}",
            "Get an assistant",
            None,
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "patch",
            "/assistants/{assistant_id}",
            "Change an assistant (a new version)",
            s.request::<AssistantPatchParams>(),
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "post",
            "/assistants/{assistant_id}/versions",
            "An assistant's versions, newest first",
            s.request::<AssistantVersionsParams>(),
            vec![Success::Json(200, s.response::<Vec<Assistant>>())],
        ),
        op(
            "post",
            "/assistants/{assistant_id}/latest",
            "Show and run another version of an assistant",
            s.request::<AssistantLatestParams>(),
            vec![Success::Json(200, s.response::<Assistant>())],
        ),
        op(
            "delete",
            "/assistants/{assistant_id}",
            "Delete an assistant",
            None,
            vec![Success::Json(200, object())],
        ),
    ]
}

/// Threads, their state and history.
fn threads(s: &mut Schemas) -> Vec<Operation> {
    vec![
        op(
            "post",
            "/threads",
            "Create a thread",
            s.request::<ThreadCreateParams>(),
            vec![Success::Json(200, s.response::<Thread>())],
        ),
        op(
            "post",
            "/threads/search",
            "Search threads",
            s.request::<ThreadSearchParams>(),
            vec![Success::Json(200, s.response::<Vec<Thread>>())],
        ),
        op(
            "get",
            "/threads/{thread_id}",
            "Get a thread",
            None,
            vec![Success::Json(200, s.response::<Thread>())],
        ),
        op(
            "delete",
            "/threads/{thread_id}",
            "Delete a thread",
            None,
            vec![Success::Json(200, object())],
        ),
        op(
            "patch",
            "/threads/{thread_id}",
            "Update a thread's metadata",
            s.request::<ThreadPatchParams>(),
            vec![Success::Json(200, s.response::<Thread>())],
        ),
        op(
            "post",
            "/threads/count",
            "Count threads",
            s.request::<ThreadCountParams>(),
            vec![Success::Json(200, s.response::<u64>())],
        ),
        op(
            "post",
            "/threads/{thread_id}/copy",
            "Copy a thread",
            None,
            vec![Success::Json(200, s.response::<Thread>())],
        ),
        op(
            "post",
            "/threads/prune",
            "Delete threads, or drop their older checkpoints",
            s.request::<ThreadPruneParams>(),
            vec![Success::Json(200, s.response::<ThreadPruneResponse>())],
        ),
        op(
            "get",
            "/threads/{thread_id}/state",
            "A thread's state",
            None,
            vec![Success::Json(200, s.response::<ThreadState>())],
        ),
        op(
            "get",
            "/threads/{thread_id}/history",
            "A thread's past states",
            None,
            vec![Success::Json(200, s.response::<Vec<ThreadState>>())],
        ),
        op(
            "post",
            "/threads/{thread_id}/history",
            "A thread's past states",
            s.request::<ThreadHistoryParams>(),
            vec![Success::Json(200, s.response::<Vec<ThreadState>>())],
        ),
        op(
            "get",
            "/threads/{thread_id}/state/{checkpoint_id}",
            "A thread's state at a checkpoint",
            None,
            vec![Success::Json(200, s.response::<ThreadState>())],
        ),
        op(
            "post",
            "/threads/{thread_id}/state/checkpoint",
            "A thread's state at a checkpoint",
            s.request::<ThreadStateCheckpointParams>(),
            vec![Success::Json(200, s.response::<ThreadState>())],
        ),
    ]
}

/// Runs: creation, listing, cancel.
fn runs(s: &mut Schemas) -> Vec<Operation> {
    let run_params = s.request::<RunCreateParams>();
    let run = s.response::<Run>();
    let runs = s.response::<Vec<Run>>();
    vec![
        op(
            "post",
            "/threads/{thread_id}/runs",
            "Create a background run",
            run_params.clone(),
            vec![Success::Json(200, run.clone())],
        ),
        Operation {
            query: s.query::<RunListQuery>(),
            ..op(
                "get",
                "/threads/{thread_id}/runs",
                "List a thread's runs",
                None,
                vec![Success::Json(200, runs.clone())],
            )
        },
        op(
            "get",
            "/threads/{thread_id}/runs/{run_id}",
            "Get a run",
            None,
            vec![Success::Json(200, run.clone())],
        ),
        op(
            "delete",
            "/threads/{thread_id}/runs/{run_id}",
            "Delete a finished run",
            None,
            vec![Success::Empty(204)],
        ),
        Operation {
            query: s.query::<RunCancelQuery>(),
            ..op(
                "post",
                "/threads/{thread_id}/runs/{run_id}/cancel",
                "Cancel a run",
                None,
                vec![Success::Empty(202), Success::Json(200, any())],
            )
        },
        Operation {
            query: s.query::<RunCancelManyQuery>(),
            ..op(
                "post",
                "/runs/cancel",
                "Cancel many runs",
                s.request::<RunCancelManyParams>(),
                vec![Success::Empty(204)],
            )
        },
        op(
            "post",
            "/runs",
            "Create a stateless background run",
            run_params.clone(),
            vec![Success::Json(200, run.clone())],
        ),
    ]
}

/// Following runs: waits, joins, streams, batches.
fn following(s: &mut Schemas) -> Vec<Operation> {
    let run_params = s.request::<RunCreateParams>();
    let runs = s.response::<Vec<Run>>();
    vec![
        op(
            "post",
            "/threads/{thread_id}/runs/wait",
            "Create a run and wait for its end",
            run_params.clone(),
            values(),
        ),
        op(
            "post",
            "/runs/wait",
            "Create a stateless run and wait for its end",
            run_params.clone(),
            values(),
        ),
        op(
            "get",
            "/threads/{thread_id}/runs/{run_id}/join",
            "Wait for a run's end",
            None,
            values(),
        ),
        op(
            "post",
            "/threads/{thread_id}/runs/stream",
            "Create a run and stream its events",
            run_params.clone(),
            stream(),
        ),
        op(
            "post",
            "/runs/stream",
            "Create a stateless run and stream its events",
            run_params.clone(),
            stream(),
        ),
        Operation {
            query: s.query::<RunStreamQuery>(),
            ..op(
                "get",
                "/threads/{thread_id}/runs/{run_id}/stream",
                "Stream a run's events",
                None,
                stream(),
            )
        },
        Operation {
            query: s.query::<RunStreamQuery>(),
            ..op(
                "get",
                "/threads/{thread_id}/stream",
                "Stream the events of each run on a thread, in turn",
                None,
                stream(),
            )
        },
        op(
            "post",
            "/runs/batch",
            "Create many stateless runs",
            s.request::<Vec<RunCreateParams>>(),
            vec![Success::Json(200, runs)],
        ),
        op(
            "get",
            "/batches/{batch_id}",
            "A batch's counts",
            None,
            vec![Success::Json(200, s.response::<BatchResponse>())],
        ),
        Operation {
            query: s.query::<BatchRunsQuery>(),
            ..op(
                "get",
                "/batches/{batch_id}/runs",
                "A page of a batch's runs",
                None,
                vec![Success::Json(200, s.response::<BatchRunsResponse>())],
            )
        },
    ]
}

/// Crons and the long-term store.
fn crons_and_store(s: &mut Schemas) -> Vec<Operation> {
    vec![
        op(
            "post",
            "/runs/crons",
            "Create a stateless cron",
            s.request::<CronCreateParams>(),
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "post",
            "/threads/{thread_id}/runs/crons",
            "Create a cron on a thread",
            s.request::<CronCreateParams>(),
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "post",
            "/runs/crons/search",
            "Search crons",
            s.request::<CronSearchParams>(),
            vec![Success::Json(200, s.response::<Vec<Map<String, Value>>>())],
        ),
        op(
            "post",
            "/runs/crons/count",
            "Count crons",
            s.request::<CronCountParams>(),
            vec![Success::Json(200, s.response::<u64>())],
        ),
        op(
            "get",
            "/runs/crons/{cron_id}",
            "Get a cron",
            None,
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "patch",
            "/runs/crons/{cron_id}",
            "Update a cron",
            s.request::<CronUpdateParams>(),
            vec![Success::Json(200, s.response::<Cron>())],
        ),
        op(
            "delete",
            "/runs/crons/{cron_id}",
            "Delete a cron",
            None,
            vec![Success::Empty(204)],
        ),
        op(
            "put",
            "/store/items",
            "Put an item",
            s.request::<ItemPutParams>(),
            vec![Success::Empty(204)],
        ),
        Operation {
            query: s.query::<ItemGetQuery>(),
            ..op(
                "get",
                "/store/items",
                "Get an item",
                None,
                vec![Success::Json(200, s.response::<Option<Item>>())],
            )
        },
        op(
            "delete",
            "/store/items",
            "Delete an item",
            s.request::<ItemDeleteParams>(),
            vec![Success::Empty(204)],
        ),
        op(
            "post",
            "/store/items/search",
            "Search items",
            s.request::<ItemSearchParams>(),
            vec![Success::Json(200, s.response::<ItemSearchResponse>())],
        ),
        op(
            "post",
            "/store/namespaces",
            "List namespaces",
            s.request::<NamespaceListParams>(),
            vec![Success::Json(200, s.response::<NamespaceListResponse>())],
        ),
    ]
}

/// The operations whose JSON answer supplies path parameters, each with
/// the pointer into the body: the description links them to every
/// operation those parameters address, which schemathesis's stateful
/// phase follows (else it only ever asks for ids that do not exist).
const SUPPLIERS: &[(&str, &str, Supplied)] = &[
    ("post", "/assistants", &[("assistant_id", "/assistant_id")]),
    ("post", "/threads", &[("thread_id", "/thread_id")]),
    ("post", "/threads/{thread_id}/runs", RUN),
    ("post", "/runs", RUN),
    (
        "post",
        "/runs/batch",
        &[("thread_id", "/0/thread_id"), ("run_id", "/0/run_id")],
    ),
    ("post", "/runs/crons", CRON),
    ("post", "/threads/{thread_id}/runs/crons", CRON),
];
/// Path parameters and the JSON pointers of their values in an answer.
type Supplied = &'static [(&'static str, &'static str)];
const RUN: Supplied = &[("thread_id", "/thread_id"), ("run_id", "/run_id")];
const CRON: Supplied = &[("cron_id", "/cron_id")];

/// A request body that succeeds against a server serving a graph named
/// `agent` (the name `langgraph dev` projects usually give theirs): the
/// page's readers see one, and schemathesis's examples phase sends it.
fn example(method: &str, path: &str) -> Option<Value> {
    let run = json!({
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": "Hello."}]},
    });
    match (method, path) {
        ("post", "/assistants") => Some(json!({"graph_id": "agent"})),
        ("post", "/runs/batch") => Some(json!([run])),
        ("post", "/runs/crons" | "/threads/{thread_id}/runs/crons") => {
            let mut cron = run;
            cron["schedule"] = json!("*/5 * * * *");
            Some(cron)
        }
        ("post", p)
            if p.ends_with("/runs") || p.ends_with("/runs/wait") || p.ends_with("/runs/stream") =>
        {
            Some(run)
        }
        _ => None,
    }
}

/// The links of `from`'s answer: one to each operation whose path
/// parameters it all supplies.
fn links(from: &Operation, operations: &[Operation]) -> Map<String, Value> {
    let Some((_, _, supplied)) = SUPPLIERS
        .iter()
        .find(|(method, path, _)| *method == from.method && *path == from.path)
    else {
        return Map::new();
    };
    let mut links = Map::new();
    for to in operations {
        let needed: Vec<&str> = path_parameters(to.path).collect();
        if needed.is_empty() || !needed.iter().all(|n| supplied.iter().any(|(s, _)| s == n)) {
            continue;
        }
        let parameters: Map<String, Value> = supplied
            .iter()
            .filter(|(name, _)| needed.contains(name))
            .map(|(name, pointer)| {
                (
                    (*name).to_owned(),
                    json!(format!("$response.body#{pointer}")),
                )
            })
            .collect();
        links.insert(
            operation_id(to),
            json!({"operationId": operation_id(to), "parameters": parameters}),
        );
    }
    links
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
/// for `POST /threads/{thread_id}/runs/wait`, parameters marked `by_`).
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
    id
}

/// The `/docs` page: the description embedded, listed by a small inline
/// script (operations, their parameters, bodies and answers), plus the
/// raw JSON, so it is useful with no network at all.
const DOCS_PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>deepfleet API</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem; }
details { border: 1px solid #ddd; border-radius: 4px; margin: .4rem 0; padding: .3rem .6rem; }
summary { cursor: pointer; }
.method { display: inline-block; width: 4.5rem; font-weight: bold; text-transform: uppercase; }
code, pre { font-family: ui-monospace, monospace; }
pre { background: #f6f6f6; overflow: auto; padding: .5rem; }
</style>
</head>
<body>
<h1>deepfleet API</h1>
<p>The machine-readable description is at <a href="/openapi.json">/openapi.json</a>.</p>
<div id="operations"></div>
<details><summary>The whole description</summary><pre id="raw"></pre></details>
<script id="description" type="application/json">__DESCRIPTION__</script>
<script>
const doc = JSON.parse(document.getElementById("description").textContent);
document.getElementById("raw").textContent = JSON.stringify(doc, null, 2);
const root = document.getElementById("operations");
const text = (tag, content) => { const e = document.createElement(tag); e.textContent = content; return e; };
for (const [path, item] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(item)) {
    const box = document.createElement("details");
    const head = document.createElement("summary");
    head.append(text("span", method), " ", text("code", path), " — ", op.summary || "");
    head.firstChild.className = "method";
    box.append(head);
    if (op.parameters && op.parameters.length) {
      box.append(text("h4", "Parameters"));
      box.append(text("pre", JSON.stringify(op.parameters, null, 2)));
    }
    if (op.requestBody) {
      box.append(text("h4", "Body"));
      box.append(text("pre", JSON.stringify(op.requestBody.content, null, 2)));
    }
    box.append(text("h4", "Answers"));
    box.append(text("pre", JSON.stringify(op.responses, null, 2)));
    root.append(box);
  }
}
</script>
<noscript><p>Without scripts, read <a href="/openapi.json">/openapi.json</a>.</p></noscript>
</body>
</html>
"#;

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;
