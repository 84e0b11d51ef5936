//! The assistants' operations.

use std::collections::BTreeMap;

use deepfleet_proto::api::{
    Assistant, AssistantCountParams, AssistantCreateParams, AssistantGraph, AssistantLatestParams,
    AssistantPatchParams, AssistantSearchParams, AssistantVersionsParams, GraphQuery, GraphSchemas,
    SubgraphsQuery,
};

use super::operation::{Operation, Success, object, op, selectable_list};
use super::schemas::Schemas;

/// Assistants.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
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
            vec![Success::Json(
                200,
                selectable_list(s.response::<Assistant>()),
            )],
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
        Operation {
            query: vec![serde_json::json!({
                "name": "delete_threads",
                "in": "query",
                "required": false,
                "description": "Refused when true (422): a thread may hold runs of many assistants",
                "schema": {"type": "boolean", "default": false},
            })],
            ..op(
                "delete",
                "/assistants/{assistant_id}",
                "Delete an assistant",
                None,
                vec![Success::Json(200, object())],
            )
        },
    ]
}

/// An assistant's graph: its drawing, its schemas and its subgraphs.
pub(super) fn graph_operations(s: &mut Schemas) -> Vec<Operation> {
    let subgraphs = |s: &mut Schemas| {
        vec![Success::Json(
            200,
            s.response::<BTreeMap<String, GraphSchemas>>(),
        )]
    };
    vec![
        Operation {
            query: s.query::<GraphQuery>(),
            ..op(
                "get",
                "/assistants/{assistant_id}/graph",
                "An assistant's graph: the agent loop's nodes and edges",
                None,
                vec![Success::Json(200, s.response::<AssistantGraph>())],
            )
        },
        op(
            "get",
            "/assistants/{assistant_id}/schemas",
            "An assistant's input, output, state and context schemas",
            None,
            vec![Success::Json(200, s.response::<GraphSchemas>())],
        ),
        Operation {
            query: s.query::<SubgraphsQuery>(),
            ..op(
                "get",
                "/assistants/{assistant_id}/subgraphs",
                "An assistant's subgraphs (none: subagents run as graphs of their own)",
                None,
                subgraphs(s),
            )
        },
        Operation {
            query: s.query::<SubgraphsQuery>(),
            ..op(
                "get",
                "/assistants/{assistant_id}/subgraphs/{namespace}",
                "An assistant's subgraphs under a namespace",
                None,
                subgraphs(s),
            )
        },
    ]
}
