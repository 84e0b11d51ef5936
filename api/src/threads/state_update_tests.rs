//! Router tests of time travel's write side: `update_state`, runs from a
//! checkpoint or with a `command.update`, and rollbacks that restore the
//! thread's state.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{
    KEY_A, KEY_B, TestApi, api, finish, message_texts, run_body, two_tenants,
};

async fn state_of(api: &TestApi, thread_id: &str) -> Value {
    let answer = api
        .send("GET", &format!("/threads/{thread_id}/state"), None)
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer.json()
}

async fn history(api: &TestApi, thread_id: &str) -> Vec<Value> {
    let path = format!("/threads/{thread_id}/history");
    let answer = api.send("POST", &path, Some(json!({"limit": 20}))).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer.json().as_array().unwrap().clone()
}

async fn update(api: &TestApi, thread_id: &str, body: Value) -> (StatusCode, Value) {
    let path = format!("/threads/{thread_id}/state");
    let answer = api.send("POST", &path, Some(body)).await;
    let json = serde_json::from_str(&answer.text).unwrap_or(Value::Null);
    (answer.status, json)
}

#[tokio::test]
async fn update_state_writes_a_checkpoint_on_top_of_the_thread() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let before = history(&api, &thread_id).await;
    let (status, answer) = update(
        &api,
        &thread_id,
        json!({"as_node": "model", "values": {
            "messages": [{"type": "human", "content": "note"}],
            "files": {"/notes.md": "remember"},
            "todos": [{"content": "check", "status": "pending"}],
        }}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["checkpoint"]["checkpoint_id"], "3");
    let now = state_of(&api, &thread_id).await;
    assert_eq!(message_texts(&now), ["hi", "done", "again", "done", "note"]);
    assert_eq!(
        now["values"]["files"]["/notes.md"]["content"],
        json!("remember")
    );
    assert_eq!(now["values"]["todos"][0]["content"], "check");
    assert_eq!(now["checkpoint"]["checkpoint_id"], "3");
    assert_eq!(now["metadata"]["source"], "update");
    assert_eq!(now["parent_checkpoint"]["checkpoint_id"], "2");
    let after = history(&api, &thread_id).await;
    assert_eq!(after[1..], before[..]);
    assert_eq!(after[0]["metadata"], json!({"source": "update", "step": 3}));
    assert_eq!(after[0]["values"], now["values"]);
    // The history filters by source.
    let path = format!("/threads/{thread_id}/history");
    let updates = api
        .send(
            "POST",
            &path,
            Some(json!({"metadata": {"source": "update"}})),
        )
        .await
        .json();
    assert_eq!(updates.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn update_state_from_a_checkpoint_forks_and_replaces_messages_by_id() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let before = history(&api, &thread_id).await;
    // Checkpoint 1's answer, edited: the id names the message to replace.
    let answer_id = before[1]["values"]["messages"][1]["id"].clone();
    let (status, answer) = update(
        &api,
        &thread_id,
        json!({
            "checkpoint": {"checkpoint_id": "1"},
            "values": {"messages": [{"type": "ai", "id": answer_id, "content": "edited"}]},
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let now = state_of(&api, &thread_id).await;
    assert_eq!(message_texts(&now), ["hi", "edited"]);
    assert_eq!(now["values"]["messages"][1]["id"], answer_id);
    assert_eq!(now["parent_checkpoint"]["checkpoint_id"], "1");
    // The original branch reads as it did.
    let after = history(&api, &thread_id).await;
    assert_eq!(after[1..], before[..]);
    assert_eq!(after[0]["parent_checkpoint"]["checkpoint_id"], "1");
    // A run goes on from the new branch.
    let run = api.run_on(&thread_id, run_body("more")).await;
    let run_id = run["run_id"].as_str().unwrap();
    finish(api.store.as_ref(), &thread_id, run_id, RunStatus::Success).await;
    assert_eq!(
        message_texts(&state_of(&api, &thread_id).await),
        ["hi", "edited", "more", "done"]
    );
}

#[tokio::test]
async fn update_state_refusals_say_why() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    for (body, code, says) in [
        (
            json!({"values": [1]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "object",
        ),
        (
            json!({"values": {}, "as_node": "planner"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "planner",
        ),
        (
            json!({"checkpoint_id": "x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "checkpoint id",
        ),
        (
            json!({"checkpoint_id": "9"}),
            StatusCode::NOT_FOUND,
            "Checkpoint '9'",
        ),
        (
            json!({"values": {"messages": [{"type": "remove", "id": "nope"}]}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "nope",
        ),
    ] {
        let (status, answer) = update(&api, &thread_id, body.clone()).await;
        assert_eq!(status, code, "{body}: {answer}");
        assert!(answer.to_string().contains(says), "{body}: {answer}");
    }
    // A busy thread is a conflict, and keeps its state.
    api.run_on(&thread_id, run_body("busy")).await;
    let (status, answer) = update(&api, &thread_id, json!({"values": {"todos": []}})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
}

#[tokio::test]
async fn another_tenants_thread_is_not_found() {
    let api = two_tenants().await;
    api.thread_as(KEY_A, "t1").await;
    let body = Some(json!({"values": {"todos": []}}));
    let other = api
        .send_as(Some(KEY_B), "POST", "/threads/t1/state", body.clone())
        .await;
    assert_eq!(other.status, StatusCode::NOT_FOUND, "{}", other.text);
    let own = api
        .send_as(Some(KEY_A), "POST", "/threads/t1/state", body)
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text);
    assert_eq!(own.json()["checkpoint"]["checkpoint_id"], "1");
}

#[tokio::test]
async fn a_run_from_a_checkpoint_starts_on_a_fork_that_belongs_to_it() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let before = history(&api, &thread_id).await;
    let mut body = run_body("instead");
    body["checkpoint_id"] = json!("1");
    let run = api.run_on(&thread_id, body).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        message_texts(&state_of(&api, &thread_id).await),
        ["hi", "done", "instead"]
    );
    finish(api.store.as_ref(), &thread_id, &run_id, RunStatus::Success).await;
    let after = history(&api, &thread_id).await;
    assert_eq!(after[2..], before[..]);
    assert_eq!(
        after[1]["metadata"],
        json!({"source": "fork", "step": 3, "run_id": run_id})
    );
    assert_eq!(after[1]["parent_checkpoint"]["checkpoint_id"], "1");
    assert_eq!(message_texts(&after[0]), ["hi", "done", "instead", "done"]);
    // From the current checkpoint, as UIs send every message: no fork.
    let current = state_of(&api, &thread_id).await["checkpoint"]["checkpoint_id"].clone();
    let mut body = run_body("on top");
    body["checkpoint"] = json!({"checkpoint_id": current});
    let run = api.run_on(&thread_id, body).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    finish(api.store.as_ref(), &thread_id, &run_id, RunStatus::Success).await;
    let after = history(&api, &thread_id).await;
    assert_eq!(after[0]["metadata"]["source"], "loop");
    assert_eq!(after[0]["parent_checkpoint"]["checkpoint_id"], current);
    // An unknown checkpoint is refused before anything is written.
    let mut body = run_body("nowhere");
    body["checkpoint"] = json!({"checkpoint_id": "42"});
    let path = format!("/threads/{thread_id}/runs");
    let refused = api.send("POST", &path, Some(body)).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.text);
    assert_eq!(history(&api, &thread_id).await, after);
}

#[tokio::test]
async fn command_update_is_written_before_the_run_or_the_resume() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let body = json!({
        "assistant_id": "agent",
        "command": {"update": {"messages": [{"type": "human", "content": "from update"}],
                               "todos": []}},
    });
    let run = api.run_on(&thread_id, body).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    assert_eq!(
        message_texts(&state_of(&api, &thread_id).await),
        ["hi", "done", "again", "done", "from update"]
    );
    // Parked on a review: a resume with an update of the files goes on
    // from the updated thread.
    finish(
        api.store.as_ref(),
        &thread_id,
        &run_id,
        RunStatus::AwaitingHuman,
    )
    .await;
    // A resume may name the checkpoint it waits at, as UIs do; no other.
    let path = format!("/threads/{thread_id}/runs");
    let earlier = json!({
        "assistant_id": "agent",
        "command": {"resume": {"decisions": [{"type": "approve"}]}},
        "checkpoint_id": "1",
    });
    let refused = api.send("POST", &path, Some(earlier)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text
    );
    let current = state_of(&api, &thread_id).await["checkpoint"]["checkpoint_id"].clone();
    let resume = json!({
        "assistant_id": "agent",
        "command": {"resume": {"decisions": [{"type": "approve"}]},
                    "update": {"files": {"/plan.md": "step 1"}}},
        "checkpoint": {"checkpoint_id": current},
    });
    let resumed = api.send("POST", &path, Some(resume)).await;
    assert_eq!(resumed.status, StatusCode::OK, "{}", resumed.text);
    let now = state_of(&api, &thread_id).await;
    assert_eq!(
        now["values"]["files"]["/plan.md"]["content"],
        json!("step 1")
    );
    // Messages cannot change under the calls a review waits on.
    let (thread_id, run_id) = api.ended_run(RunStatus::AwaitingHuman).await;
    let resume = json!({
        "assistant_id": "agent",
        "command": {"resume": {"decisions": [{"type": "approve"}]},
                    "update": {"messages": ["too soon"]}},
    });
    let path = format!("/threads/{thread_id}/runs");
    let refused = api.send("POST", &path, Some(resume)).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
    let run = api
        .store
        .get_run(&thread_id, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, RunStatus::AwaitingHuman);
}

#[tokio::test]
async fn a_rollback_returns_the_thread_to_its_state_before_the_run() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let before = state_of(&api, &thread_id).await;
    let run = api.run_on(&thread_id, run_body("undo me")).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let path = format!("/threads/{thread_id}/runs/{run_id}/cancel?action=rollback");
    let cancelled = api.send("POST", &path, None).await;
    assert_eq!(cancelled.status, StatusCode::ACCEPTED, "{}", cancelled.text);
    // Still running until its worker stops it at a step boundary.
    api.state.runs.life.settle_rollbacks().await.unwrap();
    assert_eq!(
        message_texts(&state_of(&api, &thread_id).await),
        ["hi", "done", "again", "done", "undo me"]
    );
    finish(
        api.store.as_ref(),
        &thread_id,
        &run_id,
        RunStatus::Cancelled,
    )
    .await;
    api.state.runs.life.settle_rollbacks().await.unwrap();
    let now = state_of(&api, &thread_id).await;
    assert_eq!(now["values"], before["values"]);
    assert_eq!(now["metadata"]["source"], "rollback");
    assert_eq!(now["parent_checkpoint"]["checkpoint_id"], "2");
    // The run is gone; its checkpoint stays in the history, on its branch.
    let run_path = format!("/threads/{thread_id}/runs/{run_id}");
    assert_eq!(
        api.send("GET", &run_path, None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(history(&api, &thread_id).await.len(), 4);
}

#[tokio::test]
async fn a_rollback_strategy_starts_the_new_run_from_before_the_old_one() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let old = api.run_on(&thread_id, run_body("superseded")).await;
    let old_id = old["run_id"].as_str().unwrap().to_owned();
    let mut body = run_body("instead");
    body["multitask_strategy"] = json!("rollback");
    api.run_on(&thread_id, body).await;
    // The old run stops at its step boundary; then the new one starts.
    finish(
        api.store.as_ref(),
        &thread_id,
        &old_id,
        RunStatus::Cancelled,
    )
    .await;
    assert_eq!(api.state.runs.life.start_queued().await.unwrap(), 1);
    assert_eq!(
        message_texts(&state_of(&api, &thread_id).await),
        ["hi", "done", "again", "done", "instead"]
    );
}
