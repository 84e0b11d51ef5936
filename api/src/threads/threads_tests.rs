//! Router tests of `/threads`.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::test_support::{api, finish, message_texts, review, run_body};
use deepfleet_scheduler::convert::message_id;

#[tokio::test]
async fn a_new_thread_is_idle_and_empty() {
    let api = api().await;
    let body = json!({"thread_id": "t1", "metadata": {"user": "u1"}});
    let created = api.send("POST", "/threads", Some(body)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let thread = created.json();
    let at = thread["created_at"].clone();
    assert_eq!(
        thread,
        json!({"thread_id": "t1", "created_at": at, "updated_at": at,
            "metadata": {"user": "u1"}, "status": "idle", "values": null, "interrupts": {}})
    );
    assert_eq!(api.send("GET", "/threads/t1", None).await.json(), thread);
    let fresh = api.send("POST", "/threads", Some(json!({}))).await.json();
    assert_eq!(fresh["thread_id"].as_str().map(str::len), Some(36));
}

#[tokio::test]
async fn duplicates_conflict_unless_asked_to_do_nothing() {
    let api = api().await;
    api.send("POST", "/threads", Some(json!({"thread_id": "t1"})))
        .await;
    let conflict = api
        .send("POST", "/threads", Some(json!({"thread_id": "t1"})))
        .await;
    assert_eq!(
        (conflict.status, conflict.json()),
        (
            StatusCode::CONFLICT,
            json!({"detail": "Thread 't1' already exists.", "code": "conflict"})
        )
    );
    let quiet = api
        .send(
            "POST",
            "/threads",
            Some(json!({"thread_id": "t1", "if_exists": "do_nothing"})),
        )
        .await;
    assert_eq!(
        (quiet.status, quiet.json()["thread_id"].clone()),
        (StatusCode::OK, json!("t1"))
    );
}

#[tokio::test]
async fn searches_filter_by_metadata_and_status_newest_first() {
    let api = api().await;
    for (id, team) in [("t1", "red"), ("t2", "blue"), ("t3", "red")] {
        let body = json!({"thread_id": id, "metadata": {"team": team}});
        api.send("POST", "/threads", Some(body)).await;
    }
    api.run_on("t3", run_body("hi")).await;
    // A stateless run's temporary thread never shows.
    api.send("POST", "/runs", Some(run_body("hi"))).await;
    let ids = |answer: &crate::test_support::Answer| {
        answer
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["thread_id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let red = api
        .send(
            "POST",
            "/threads/search",
            Some(json!({"metadata": {"team": "red"}})),
        )
        .await;
    assert_eq!(ids(&red), ["t3", "t1"]);
    let busy = api
        .send("POST", "/threads/search", Some(json!({"status": "busy"})))
        .await;
    assert_eq!(ids(&busy), ["t3"]);
    let page = api
        .send(
            "POST",
            "/threads/search",
            Some(json!({"limit": 1, "offset": 1})),
        )
        .await;
    assert_eq!(ids(&page), ["t2"]);
    let bad = api
        .send("POST", "/threads/search", Some(json!({"metadata": [1]})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn state_and_history_show_the_current_checkpoint() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    finish(
        api.store.as_ref(),
        &thread_id,
        run["run_id"].as_str().unwrap(),
        RunStatus::Success,
    )
    .await;
    let state = api
        .send("GET", &format!("/threads/{thread_id}/state"), None)
        .await;
    assert_eq!(state.status, StatusCode::OK, "{}", state.text);
    let body = state.json();
    assert_eq!(
        body,
        json!({
            "values": {
                "messages": [
                    {"type": "human", "content": "hi", "id": message_id(&thread_id, 0)},
                    {"type": "ai", "content": "done", "id": message_id(&thread_id, 1),
                        "tool_calls": [], "invalid_tool_calls": []},
                ],
                "files": {},
                "todos": [],
            },
            "next": [],
            "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "",
                "checkpoint_id": "1", "checkpoint_map": null},
            "metadata": {"source": "loop", "step": 1},
            "created_at": body["created_at"],
            "parent_checkpoint": null,
            "tasks": [],
            "interrupts": [],
        })
    );
    // The current state is the newest checkpoint, with its run.
    for method in ["GET", "POST"] {
        let history = api
            .send(method, &format!("/threads/{thread_id}/history"), None)
            .await;
        let history = history.json();
        assert_eq!(history.as_array().map(Vec::len), Some(1));
        assert_eq!(
            (&history[0]["values"], &history[0]["checkpoint"]),
            (&body["values"], &body["checkpoint"])
        );
        assert_eq!(history[0]["metadata"]["run_id"], run["run_id"]);
    }
    let thread = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(thread.json()["status"], "idle");
    assert_eq!(thread.json()["values"], body["values"]);
    let with_ttl = api
        .send("GET", &format!("/threads/{thread_id}?include=ttl"), None)
        .await;
    assert_eq!(with_ttl.status, StatusCode::OK, "{}", with_ttl.text);
    let unknown = api
        .send(
            "GET",
            &format!("/threads/{thread_id}?include=ttl,secrets"),
            None,
        )
        .await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(unknown.text.contains("secrets"), "{}", unknown.text);
}

#[tokio::test]
async fn an_interrupted_thread_shows_its_pending_review() {
    let api = api().await;
    let (thread_id, run_id) = api.ended_run(RunStatus::AwaitingHuman).await;
    let run_id = run_id.as_str();
    let thread = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await
        .json();
    assert_eq!(thread["status"], "interrupted");
    assert_eq!(
        thread["interrupts"],
        json!({ run_id: [{"value": review(), "id": run_id}] })
    );
}

#[tokio::test]
async fn a_failed_run_leaves_its_thread_in_error() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    finish(
        api.store.as_ref(),
        &thread_id,
        run["run_id"].as_str().unwrap(),
        RunStatus::Error,
    )
    .await;
    let thread = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(thread.json()["status"], "error");
}

#[tokio::test]
async fn deleting_removes_the_thread_with_its_runs_and_unknown_threads_are_404() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    let deleted = api
        .send("DELETE", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(
        (deleted.status, deleted.json()),
        (StatusCode::OK, json!({}))
    );
    // The run went with the thread: its record, its flags, its metadata.
    let run_id = run["run_id"].as_str().unwrap();
    assert_eq!(api.store.get_run(&thread_id, run_id).await.unwrap(), None);
    assert!(
        !api.store
            .cancel_requested(&thread_id, run_id)
            .await
            .unwrap()
    );
    assert!(
        api.store
            .load_thread(&thread_id)
            .await
            .unwrap()
            .messages
            .is_empty()
    );
    for (method, path) in [
        ("GET", format!("/threads/{thread_id}")),
        ("DELETE", format!("/threads/{thread_id}")),
        ("GET", format!("/threads/{thread_id}/state")),
        ("GET", format!("/threads/{thread_id}/history")),
    ] {
        let answer = api.send(method, &path, None).await;
        assert_eq!(
            (answer.status, answer.json()),
            (
                StatusCode::NOT_FOUND,
                json!({"detail": format!("Thread '{thread_id}' not found."), "code": "not_found"})
            ),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn supersteps_give_a_new_thread_its_state_one_checkpoint_each() {
    let api = api().await;
    let body = json!({"thread_id": "t1", "supersteps": [
        {"updates": [{"values": {"messages": [{"type": "human", "content": "hi"}]},
                      "as_node": "__input__"}]},
        {"updates": [
            {"values": {"messages": [{"type": "ai", "content": "hello"}]}, "as_node": "model"},
            {"command": {"update": {"todos": [{"content": "x", "status": "pending"}]}},
             "as_node": "model"},
        ]},
    ]});
    let created = api.send("POST", "/threads", Some(body)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let state = api.send("GET", "/threads/t1/state", None).await.json();
    assert_eq!(message_texts(&state), ["hi", "hello"]);
    assert_eq!(state["values"]["todos"][0]["content"], "x");
    assert_eq!(state["checkpoint"]["checkpoint_id"], "2");
    let history = api.send("POST", "/threads/t1/history", None).await.json();
    assert_eq!(history.as_array().unwrap().len(), 2);
    // A node the loop does not have is refused, and makes no thread.
    let bad = json!({"thread_id": "t2", "supersteps": [
        {"updates": [{"values": {}, "as_node": "planner"}]},
    ]});
    let refused = api.send("POST", "/threads", Some(bad)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text
    );
    let missing = api.send("GET", "/threads/t2", None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}
