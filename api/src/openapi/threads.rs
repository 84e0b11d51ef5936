//! The threads' operations: the resource, its state and its history.

use deepfleet_proto::api::{
    Thread, ThreadCountParams, ThreadCreateParams, ThreadHistoryParams, ThreadPatchParams,
    ThreadPruneParams, ThreadPruneResponse, ThreadSearchParams, ThreadState,
    ThreadStateCheckpointParams, ThreadStatePatch, ThreadStateUpdate, ThreadStateUpdateResponse,
};

use super::operation::{Operation, Success, object, op, select_query, selectable, selectable_list};
use super::schemas::Schemas;
use serde_json::json;

/// Threads.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
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
            vec![Success::Json(200, selectable_list(s.response::<Thread>()))],
        ),
        Operation {
            query: vec![json!({
                "name": "include",
                "in": "query",
                "required": false,
                "description": "Fields to include (`ttl`, which a thread with one always shows)",
                "schema": {"type": "array", "items": {"type": "string", "enum": ["ttl"]}},
                "style": "form",
                "explode": true,
            })],
            ..op(
                "get",
                "/threads/{thread_id}",
                "Get a thread",
                None,
                vec![Success::Json(200, s.response::<Thread>())],
            )
        },
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
            "Update a thread's metadata or ttl",
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
    ]
}

/// A thread's state, its updates and its history.
pub(super) fn state_operations(s: &mut Schemas) -> Vec<Operation> {
    vec![
        Operation {
            query: vec![select_query()],
            ..op(
                "get",
                "/threads/{thread_id}/state",
                "A thread's state",
                None,
                vec![Success::Json(200, selectable(s.response::<ThreadState>()))],
            )
        },
        op(
            "post",
            "/threads/{thread_id}/state",
            "Write values as a new checkpoint (update_state), from the latest or an earlier one",
            s.request::<ThreadStateUpdate>(),
            vec![Success::Json(
                200,
                s.response::<ThreadStateUpdateResponse>(),
            )],
        ),
        op(
            "patch",
            "/threads/{thread_id}/state",
            "Merge metadata into the current checkpoint's",
            s.request::<ThreadStatePatch>(),
            vec![Success::Empty(204)],
        ),
        Operation {
            query: vec![select_query()],
            ..op(
                "get",
                "/threads/{thread_id}/history",
                "A thread's past states",
                None,
                vec![Success::Json(
                    200,
                    selectable_list(s.response::<ThreadState>()),
                )],
            )
        },
        op(
            "post",
            "/threads/{thread_id}/history",
            "A thread's past states",
            s.request::<ThreadHistoryParams>(),
            vec![Success::Json(
                200,
                selectable_list(s.response::<ThreadState>()),
            )],
        ),
        Operation {
            query: vec![select_query()],
            ..op(
                "get",
                "/threads/{thread_id}/state/{checkpoint_id}",
                "A thread's state at a checkpoint",
                None,
                vec![Success::Json(200, selectable(s.response::<ThreadState>()))],
            )
        },
        op(
            "post",
            "/threads/{thread_id}/state/checkpoint",
            "A thread's state at a checkpoint",
            s.request::<ThreadStateCheckpointParams>(),
            vec![Success::Json(200, selectable(s.response::<ThreadState>()))],
        ),
    ]
}
