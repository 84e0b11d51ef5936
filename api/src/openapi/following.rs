//! Following runs: wait, join and the streams, and batches.

use deepfleet_proto::api::{
    BatchResponse, BatchRunsQuery, BatchRunsResponse, Run, RunCreateParams, RunStreamQuery,
};

use serde_json::json;

use super::operation::{Operation, Success, op, stream, values};
use super::schemas::Schemas;

/// Following runs: waits, joins, streams, batches.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
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
        Operation {
            query: vec![json!({
                "name": "Idempotency-Key",
                "in": "header",
                "required": false,
                "description": "A retry with the same key and runs answers the batch the first request made.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
            })],
            ..op(
                "post",
                "/runs/batch",
                "Create many stateless runs (at most 1,000 a request)",
                s.request::<Vec<RunCreateParams>>(),
                vec![Success::Json(200, runs)],
            )
        },
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
