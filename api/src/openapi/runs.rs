//! The runs' operations: create, list, read, cancel and delete.

use deepfleet_proto::api::{
    Run, RunCancelManyParams, RunCancelManyQuery, RunCancelQuery, RunCreateParams, RunListQuery,
};

use super::operation::{Operation, Success, any, op, select_query, selectable_list};
use super::schemas::Schemas;

/// Runs: creation, listing, cancel.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
    let run_params = s.request::<RunCreateParams>();
    let run = s.response::<Run>();
    vec![
        op(
            "post",
            "/threads/{thread_id}/runs",
            "Create a background run",
            run_params.clone(),
            vec![Success::Json(200, run.clone())],
        ),
        Operation {
            query: [s.query::<RunListQuery>(), vec![select_query()]].concat(),
            ..op(
                "get",
                "/threads/{thread_id}/runs",
                "List a thread's runs",
                None,
                vec![Success::Json(200, selectable_list(s.response::<Run>()))],
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
