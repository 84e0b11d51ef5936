//! Router tests of `POST /runs/batch` and `/batches`.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::test_support::{api, finish, run_body};

#[tokio::test]
async fn a_batch_is_created_counted_and_paged_in_submission_order() {
    let api = api().await;
    let bodies = json!([run_body("a"), run_body("b"), run_body("c")]);
    let created = api.send("POST", "/runs/batch", Some(bodies)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let runs = created.json();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let batch_id = runs[0]["metadata"]["batch_id"].as_str().unwrap().to_owned();
    assert!(
        runs.iter()
            .all(|r| r["metadata"]["batch_id"] == batch_id.as_str())
    );
    let (first_thread, first_run) = (
        runs[0]["thread_id"].as_str().unwrap(),
        runs[0]["run_id"].as_str().unwrap(),
    );
    finish(
        api.store.as_ref(),
        first_thread,
        first_run,
        RunStatus::Success,
    )
    .await;
    let (thread, run) = (
        runs[1]["thread_id"].as_str().unwrap(),
        runs[1]["run_id"].as_str().unwrap(),
    );
    finish(api.store.as_ref(), thread, run, RunStatus::Error).await;
    let counts = api.send("GET", &format!("/batches/{batch_id}"), None).await;
    assert_eq!(
        counts.json(),
        json!({"batch_id": batch_id, "total": 3, "counts":
            {"pending": 1, "running": 0, "success": 1, "error": 1, "interrupted": 0, "timeout": 0}})
    );
    let page = api
        .send("GET", &format!("/batches/{batch_id}/runs?limit=2"), None)
        .await;
    assert_eq!(
        page.json(),
        json!({"runs": [
            {"run_id": first_run, "thread_id": first_thread, "status": "success",
                "output": "done", "error": null, "usage": {"input_tokens": 0, "output_tokens": 0},
                "by_caller": {
                    "main": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0},
                    "subagents": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0},
                    "summarization": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0}},
                "cost_usd": 0.0},
            {"run_id": run, "thread_id": thread, "status": "error", "output": "done",
                "error": {"code": "model_unavailable", "message": "the model is down"},
                "usage": {"input_tokens": 0, "output_tokens": 0},
                "by_caller": {
                    "main": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0},
                    "subagents": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0},
                    "summarization": {"model_calls": 0, "input_tokens": 0, "output_tokens": 0}},
                "cost_usd": 0.0},
        ], "next_offset": 2})
    );
    let last = api
        .send("GET", &format!("/batches/{batch_id}/runs?offset=2"), None)
        .await
        .json();
    assert_eq!(last["runs"][0]["run_id"], runs[2]["run_id"]);
    assert_eq!(last["runs"][0]["status"], "pending");
    assert_eq!(last["next_offset"], json!(null));
}

#[tokio::test]
async fn empty_or_bad_batches_and_unknown_ids_are_refused() {
    let api = api().await;
    let empty = api.send("POST", "/runs/batch", Some(json!([]))).await;
    assert_eq!(
        (empty.status, empty.json()["detail"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("a batch needs at least one run")
        )
    );
    let not_a_list = api.send("POST", "/runs/batch", Some(run_body("a"))).await;
    assert_eq!(not_a_list.status, StatusCode::UNPROCESSABLE_ENTITY);
    for path in ["/batches/b9", "/batches/b9/runs"] {
        let missing = api.send("GET", path, None).await;
        assert_eq!(
            (missing.status, missing.json()),
            (
                StatusCode::NOT_FOUND,
                json!({"detail": "Batch 'b9' not found.", "code": "not_found"})
            ),
            "{path}"
        );
    }
}
