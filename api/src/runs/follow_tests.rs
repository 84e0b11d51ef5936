//! Router tests of following runs: `/wait`, `/join` and the `/stream`
//! routes, with a stand-in worker ending the runs.

use std::time::Duration;

use axum::http::{StatusCode, header};
use deepfleet_proto::keys::records::FOLLOWED;
use deepfleet_proto::{DeltaSource, RunDelta, RunStatus};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{Answer, TestApi, api, finish, review, run_body};
use deepfleet_scheduler::convert::message_id;

/// The `(event, data)` pairs of an SSE body.
fn events(answer: &Answer) -> Vec<(String, Value)> {
    answer
        .text
        .split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|line| line.strip_prefix(name))
                    .map(str::to_owned)
            };
            let event = field("event: ")?;
            let data = field("data: ").unwrap_or_default();
            Some((event, serde_json::from_str(&data).unwrap_or(Value::Null)))
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

#[tokio::test]
async fn a_wait_answers_the_thread_values_once_the_run_ends() {
    let api = api().await;
    let thread_id = api.thread().await;
    let path = format!("/threads/{thread_id}/runs/wait");
    let (answer, job) = tokio::join!(
        api.send("POST", &path, Some(run_body("hi"))),
        api.work_one(RunStatus::Success)
    );
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("application/json")
    );
    assert_eq!(
        answer.header(header::LOCATION),
        Some(format!("/threads/{thread_id}/runs/{}/join", job.run_id).as_str())
    );
    assert_eq!(
        answer.json(),
        json!({"messages": [
            {"type": "human", "content": "hi", "id": message_id(&thread_id, 0)},
            {"type": "ai", "content": "done", "id": message_id(&thread_id, 1),
                "tool_calls": [], "invalid_tool_calls": []},
        ], "files": {}, "todos": []})
    );
}

#[tokio::test]
async fn a_stateless_wait_answers_a_failure_as_error() {
    let api = api().await;
    let (answer, _) = tokio::join!(
        api.send("POST", "/runs/wait", Some(run_body("hi"))),
        api.work_one(RunStatus::Error)
    );
    assert_eq!(
        answer.json(),
        json!({"__error__": {"error": "model_unavailable", "message": "the model is down"}})
    );
}

#[tokio::test]
async fn a_join_of_an_interrupted_run_carries_the_pending_review() {
    let api = api().await;
    let (thread_id, run_id) = api.ended_run(RunStatus::AwaitingHuman).await;
    let run_id = run_id.as_str();
    let joined = api
        .send(
            "GET",
            &format!("/threads/{thread_id}/runs/{run_id}/join"),
            None,
        )
        .await;
    assert_eq!(
        joined.json()["__interrupt__"],
        json!([{"value": review(), "id": run_id}])
    );
    let missing = api
        .send("GET", &format!("/threads/{thread_id}/runs/r9/join"), None)
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_wait_refuses_bad_bodies_and_unknown_threads() {
    let api = api().await;
    let bad = api
        .send("POST", "/runs/wait", Some(json!({"assistant_id": 3})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let missing = api
        .send("POST", "/threads/t9/runs/wait", Some(run_body("hi")))
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_stream_sends_metadata_updates_and_values() {
    let api = api().await;
    let thread_id = api.thread().await;
    let mut body = run_body("hi");
    body["stream_mode"] = json!(["updates", "values"]);
    let path = format!("/threads/{thread_id}/runs/stream");
    let (answer, job) = tokio::join!(
        api.send("POST", &path, Some(body)),
        api.work_one(RunStatus::Success)
    );
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("text/event-stream")
    );
    let events = events(&answer);
    assert_eq!(
        events[0],
        (
            "metadata".to_owned(),
            json!({"run_id": job.run_id, "attempt": 1})
        )
    );
    // The input streams as the first update when the follower came before
    // the commit; the answer always does, then the values.
    let names = names(&events);
    assert!(
        names == ["metadata", "updates", "updates", "values"]
            || names == ["metadata", "updates", "values"],
        "{names:?}"
    );
    assert_eq!(
        events[events.len() - 2].1,
        json!({"model": {"messages": [{"type": "ai", "content": "done",
            "id": message_id(&thread_id, 1), "tool_calls": [], "invalid_tool_calls": []}]}})
    );
    assert_eq!(
        events[events.len() - 1].1["messages"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[tokio::test]
async fn a_stream_of_a_failed_run_ends_with_an_error_event() {
    let api = api().await;
    let (answer, _) = tokio::join!(
        api.send("POST", "/runs/stream", Some(run_body("hi"))),
        api.work_one(RunStatus::Error)
    );
    let events = events(&answer);
    assert_eq!(
        events.last(),
        Some(&(
            "error".to_owned(),
            json!({"error": "model_unavailable", "message": "the model is down"})
        ))
    );
}

#[tokio::test]
async fn streamed_tokens_come_as_chunks_before_the_commit() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let path = format!("/threads/{thread_id}/runs/{run_id}/stream?stream_mode=messages-tuple");
    let worker = async {
        // The worker streams once the follower has marked the run.
        while api
            .store
            .get_record(FOLLOWED, &run_id)
            .await
            .unwrap()
            .is_none()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let delta = RunDelta {
            step: 0,
            index: 1,
            source: DeltaSource::Agent,
            text: "do".into(),
            tool_calls: vec![],
        };
        api.store.append_run_delta(&run_id, &delta).await.unwrap();
        finish(api.store.as_ref(), &thread_id, &run_id, RunStatus::Success).await;
    };
    let (joined, ()) = tokio::join!(api.send("GET", &path, None), worker);
    let events = events(&joined);
    assert_eq!(names(&events), ["metadata", "messages", "messages"]);
    let metadata = json!({"run_id": run_id, "thread_id": thread_id, "langgraph_node": "model"});
    assert_eq!(
        events[1].1,
        json!([
            {"type": "AIMessageChunk", "id": message_id(&thread_id, 1), "content": "do",
                "tool_call_chunks": [], "tool_calls": [], "invalid_tool_calls": []},
            metadata,
        ])
    );
    // The input follows whole; the streamed answer is not sent again.
    assert_eq!(
        events[2].1,
        json!([
            {"type": "human", "content": "hi", "id": message_id(&thread_id, 0)},
            metadata,
        ])
    );
    let mark = api.store.get_record(FOLLOWED, &run_id).await.unwrap();
    assert_eq!(
        mark, None,
        "the follow mark is removed when the stream ends"
    );
}

#[tokio::test]
async fn joining_a_stream_resumes_after_the_last_event_id() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    let run_id = run["run_id"].as_str().unwrap();
    finish(api.store.as_ref(), &thread_id, run_id, RunStatus::Success).await;
    let path = format!("/threads/{thread_id}/runs/{run_id}/stream?stream_mode=updates");
    let joined = api.send("GET", &path, None).await;
    assert_eq!(names(&events(&joined)), ["metadata", "updates"]);
    let request = axum::http::Request::builder()
        .uri(&path)
        .header("last-event-id", "0-0/2:u")
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(names(&events(&api.raw(request).await)), ["metadata"]);
}

#[tokio::test]
async fn a_stream_refuses_unknown_modes_and_runs() {
    let api = api().await;
    let thread_id = api.thread().await;
    let mut body = run_body("hi");
    body["stream_mode"] = json!("everything");
    let bad = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/runs/stream"),
            Some(body),
        )
        .await;
    assert_eq!(
        (bad.status, bad.json()["detail"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("unknown stream_mode 'everything'")
        )
    );
    let number = api
        .send(
            "POST",
            "/runs/stream",
            Some(json!({"assistant_id": "agent", "input": {"messages": ["hi"]}, "stream_mode": 3})),
        )
        .await;
    assert_eq!(number.status, StatusCode::UNPROCESSABLE_ENTITY);
    let missing = api
        .send("GET", &format!("/threads/{thread_id}/runs/r9/stream"), None)
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_client_that_leaves_a_stream_with_on_disconnect_cancel_cancels_its_run() {
    use axum::body::Body as HttpBody;
    use axum::http::Request;
    use futures::StreamExt;
    use tower::ServiceExt;

    let api = api().await;
    let thread_id = api.thread().await;
    let mut body = run_body("hi");
    body["on_disconnect"] = json!("cancel");
    let request = Request::builder()
        .method("POST")
        .uri(format!("/threads/{thread_id}/runs/stream"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(HttpBody::from(body.to_string()))
        .unwrap();
    let response = api.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = response.into_body().into_data_stream();
    // The metadata event, then the client goes away (no worker runs it).
    let first = stream.next().await.unwrap().unwrap();
    assert!(format!("{first:?}").contains("metadata"));
    let run_id = {
        let runs = api
            .send("GET", &format!("/threads/{thread_id}/runs"), None)
            .await;
        runs.json()[0]["run_id"].as_str().unwrap().to_owned()
    };
    drop(stream);
    cancelled_soon(&api, &thread_id, &run_id).await;
}

#[tokio::test]
async fn a_join_stream_with_cancel_on_disconnect_cancels_the_run_its_client_leaves() {
    use axum::body::Body as HttpBody;
    use axum::http::Request;
    use futures::StreamExt;
    use tower::ServiceExt;

    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let join = |cancel: &str| {
        Request::builder()
            .uri(format!(
                "/threads/{thread_id}/runs/{run_id}/stream?cancel_on_disconnect={cancel}"
            ))
            .body(HttpBody::empty())
            .unwrap()
    };
    let bad = api.raw(join("maybe")).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let response = api.router.clone().oneshot(join("true")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = response.into_body().into_data_stream();
    assert!(stream.next().await.is_some());
    drop(stream);
    cancelled_soon(&api, &thread_id, &run_id).await;
}

/// Waits (10 s at most) until `run_id`'s cancel was requested.
async fn cancelled_soon(api: &TestApi, thread_id: &str, run_id: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !api.store.cancel_requested(thread_id, run_id).await.unwrap() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "leaving did not cancel the run"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
