//! Router tests of a thread's history and its state at a checkpoint.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{api, finish, message_texts, review, run_body};

fn ids(answer: &Value) -> Vec<&str> {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["checkpoint"]["checkpoint_id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn history_lists_every_checkpoint_newest_first() {
    let api = api().await;
    let (thread_id, [first, second]) = api.two_runs().await;
    let path = format!("/threads/{thread_id}/history");
    let all = api.send("POST", &path, Some(json!({}))).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.text);
    let all = all.json();
    assert_eq!(ids(&all), ["2", "1"]);
    let [newest, oldest] = [&all[0], &all[1]];
    assert_eq!(
        newest["parent_checkpoint"],
        json!({"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": "1",
            "checkpoint_map": null})
    );
    assert_eq!(oldest["parent_checkpoint"], Value::Null);
    assert_eq!(
        oldest["metadata"],
        json!({"source": "loop", "step": 1, "run_id": first})
    );
    assert_eq!(newest["metadata"]["run_id"], json!(second));
    assert_eq!(message_texts(oldest), ["hi", "done"]);
    assert_eq!(message_texts(newest), ["hi", "done", "again", "done"]);
    // The newest checkpoint is the thread as it is.
    let now = api
        .send("GET", &format!("/threads/{thread_id}/state"), None)
        .await
        .json();
    assert_eq!(now["values"], newest["values"]);
    assert_eq!(now["checkpoint"], newest["checkpoint"]);
    assert_eq!(now["parent_checkpoint"], newest["parent_checkpoint"]);
}

#[tokio::test]
async fn history_pages_and_filters() {
    let api = api().await;
    let (thread_id, [first, _]) = api.two_runs().await;
    let path = format!("/threads/{thread_id}/history");
    let post = |body: Value| api.send("POST", &path, Some(body));
    assert_eq!(ids(&post(json!({"limit": 1})).await.json()), ["2"]);
    assert_eq!(ids(&post(json!({"before": "2"})).await.json()), ["1"]);
    // SDKs pass a ThreadState's checkpoint as it came.
    let before = json!({"before": {"thread_id": thread_id, "checkpoint_ns": "",
        "checkpoint_id": "2", "checkpoint_map": null}});
    assert_eq!(ids(&post(before).await.json()), ["1"]);
    let at = json!({"checkpoint": {"checkpoint_id": "1"}});
    assert_eq!(ids(&post(at).await.json()), ["1"]);
    assert_eq!(
        ids(&post(json!({"metadata": {"run_id": first}})).await.json()),
        ["1"]
    );
    assert_eq!(
        ids(&post(json!({"metadata": {"step": 2, "source": "loop"}}))
            .await
            .json()),
        ["2"]
    );
    for nothing in [json!({"step": 1, "run_id": "other"}), json!({"user": "u"})] {
        let none = post(json!({ "metadata": nothing })).await;
        assert_eq!((none.status, ids(&none.json()).len()), (StatusCode::OK, 0));
    }
    let got = api
        .send("GET", &format!("{path}?limit=1&before=2"), None)
        .await;
    assert_eq!(ids(&got.json()), ["1"]);

    for bad in [
        json!({"limit": 1001}),
        json!({"before": "x"}),
        json!({"limit": "ten"}),
    ] {
        let answer = post(bad.clone()).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    }
    let bad_query = api.send("GET", &format!("{path}?limit=x"), None).await;
    assert_eq!(bad_query.status, StatusCode::UNPROCESSABLE_ENTITY);
    let unknown = api
        .send("POST", "/threads/nobody/history", Some(json!({})))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_state_at_a_checkpoint_is_its_history_entry() {
    let api = api().await;
    let (thread_id, _) = api.two_runs().await;
    let history = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/history"),
            Some(json!({})),
        )
        .await
        .json();
    let at_get = api
        .send("GET", &format!("/threads/{thread_id}/state/1"), None)
        .await;
    assert_eq!(at_get.status, StatusCode::OK, "{}", at_get.text);
    assert_eq!(at_get.json(), history[1]);
    let body = json!({"checkpoint": history[1]["checkpoint"], "subgraphs": false});
    let at_post = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/state/checkpoint"),
            Some(body),
        )
        .await;
    assert_eq!(at_post.json(), history[1]);
    // No checkpoint id: the state as it is now.
    let now = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/state/checkpoint"),
            Some(json!({"checkpoint": {}})),
        )
        .await;
    assert_eq!(now.json()["checkpoint"]["checkpoint_id"], "2");

    for missing in ["0", "3", "x", "18446744073709551616"] {
        let answer = api
            .send(
                "GET",
                &format!("/threads/{thread_id}/state/{missing}"),
                None,
            )
            .await;
        assert_eq!(
            (answer.status, answer.json()["detail"].clone()),
            (
                StatusCode::NOT_FOUND,
                json!(format!("Checkpoint '{missing}' not found."))
            )
        );
    }
    let other = api.send("GET", "/threads/nobody/state/1", None).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
    let bad = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/state/checkpoint"),
            Some(json!({})),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// The JavaScript SDK's `useStream` (the Agent Chat UI's) finds a pending
/// review in the newest state's last task, as LangGraph puts it there.
#[tokio::test]
async fn the_checkpoint_a_run_waits_at_shows_its_interrupt_as_a_task() {
    let api = api().await;
    let thread_id = api.thread().await;
    let first = api.run_on(&thread_id, run_body("hi")).await;
    let first = first["run_id"].as_str().unwrap();
    finish(api.store.as_ref(), &thread_id, first, RunStatus::Success).await;
    let parked = api.run_on(&thread_id, run_body("again")).await;
    let parked = parked["run_id"].as_str().unwrap();
    finish(
        api.store.as_ref(),
        &thread_id,
        parked,
        RunStatus::AwaitingHuman,
    )
    .await;

    let interrupts = json!([{"value": review(), "id": parked}]);
    let history = api
        .send("POST", &format!("/threads/{thread_id}/history"), None)
        .await
        .json();
    assert_eq!(ids(&history), ["2", "1"]);
    let [newest, older] = [&history[0], &history[1]];
    let waiting = |state: &Value| {
        json!([
            state["next"],
            state["tasks"][0]["name"],
            state["tasks"][0]["interrupts"],
            state["interrupts"]
        ])
    };
    assert_eq!(
        waiting(newest),
        json!([["tools"], "tools", interrupts, interrupts])
    );
    assert_eq!(
        (&older["next"], &older["tasks"], &older["interrupts"]),
        (&json!([]), &json!([]), &json!([]))
    );
    let state = api
        .send("GET", &format!("/threads/{thread_id}/state"), None)
        .await
        .json();
    assert_eq!(state["tasks"], newest["tasks"]);
    assert_eq!(waiting(&state), waiting(newest));
    let at = api
        .send("GET", &format!("/threads/{thread_id}/state/2"), None)
        .await
        .json();
    assert_eq!(at["tasks"], newest["tasks"]);
}
