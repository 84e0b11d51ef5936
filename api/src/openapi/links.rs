//! Links between operations, which schemathesis's stateful phase
//! follows, and the example bodies the page shows.

use serde_json::{Map, Value, json};

use super::operation::Operation;
use super::{operation_id, path_parameters};

/// The operations whose JSON answer supplies path parameters, each with
/// the pointer into the body: the description links them to every
/// operation those parameters address, which schemathesis's stateful
/// phase follows (else it only ever asks for ids that do not exist).
pub(super) const SUPPLIERS: &[(&str, &str, Supplied)] = &[
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
pub(super) type Supplied = &'static [(&'static str, &'static str)];
pub(super) const RUN: Supplied = &[("thread_id", "/thread_id"), ("run_id", "/run_id")];
pub(super) const CRON: Supplied = &[("cron_id", "/cron_id")];

/// A request body that succeeds against a server serving a graph named
/// `agent` (the name `langgraph dev` projects usually give theirs): the
/// page's readers see one, and schemathesis's examples phase sends it.
pub(super) fn example(method: &str, path: &str) -> Option<Value> {
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
pub(super) fn links(from: &Operation, operations: &[Operation]) -> Map<String, Value> {
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
