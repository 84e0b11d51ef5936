//! The protocol's endpoints through the router, on the embedded store.

use std::time::Duration;

use axum::body::Body as HttpBody;
use axum::http::{Request, StatusCode, header};
use deepfleet_proto::RunStatus;
use futures::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::test_support::{GRAPH, KEY_A, KEY_B, TestApi, api, two_tenants};

async fn command(api: &TestApi, thread_id: &str, id: u64, method: &str, params: Value) -> Value {
    let body = json!({"id": id, "method": method, "params": params});
    let answer = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/commands"),
            Some(body),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let json = answer.json();
    assert_eq!(json["id"], id, "{json}");
    json
}

fn user_input(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

/// An open event stream of `thread_id`, read event by event.
struct Events {
    body: axum::body::BodyDataStream,
    buffer: String,
}

impl Events {
    async fn open(api: &TestApi, thread_id: &str, request: Value) -> Events {
        let request = Request::builder()
            .method("POST")
            .uri(format!("/threads/{thread_id}/stream/events"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(HttpBody::from(request.to_string()))
            .unwrap();
        let response = api.router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        Events {
            body: response.into_body().into_data_stream(),
            buffer: String::new(),
        }
    }

    /// The events up to and including the first that `last` accepts.
    async fn until(&mut self, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut out = Vec::new();
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) else {
                    continue;
                };
                let event: Value = serde_json::from_str(data).unwrap();
                let done = last(&event);
                out.push(event);
                if done {
                    return out;
                }
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.next())
                .await
                .expect("events in time")
                .expect("the stream is open")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

fn is_lifecycle(event: &Value, kind: &str) -> bool {
    event["method"] == "lifecycle"
        && event["params"]["data"]["event"] == kind
        && event["params"]["namespace"] == json!([])
}

#[tokio::test]
async fn a_stream_opened_before_its_thread_follows_the_run_that_makes_it() {
    let api = api().await;
    let thread_id = uuid::Uuid::new_v4().to_string();
    let channels =
        json!({"channels": ["lifecycle", "messages", "updates", "values", "checkpoints", "tasks"]});
    let mut events = Events::open(&api, &thread_id, channels).await;
    let started = command(
        &api,
        &thread_id,
        1,
        "run.start",
        json!({"assistant_id": GRAPH, "input": user_input("hi")}),
    )
    .await;
    assert_eq!(started["type"], "success", "{started}");
    assert!(started["result"]["run_id"].is_string());
    api.work_one(RunStatus::Success).await;
    let seen = events.until(|e| is_lifecycle(e, "completed")).await;
    assert!(is_lifecycle(&seen[0], "started"), "{seen:?}");
    assert_eq!(seen[0]["params"]["data"]["graph_name"], GRAPH);
    let methods: Vec<&str> = seen.iter().map(|e| e["method"].as_str().unwrap()).collect();
    for method in ["messages", "updates", "values", "tasks"] {
        assert!(methods.contains(&method), "{method} in {methods:?}");
    }
    let text: Vec<&Value> = seen
        .iter()
        .filter(|e| e["params"]["data"]["event"] == "content-block-finish")
        .map(|e| &e["params"]["data"]["content"]["text"])
        .collect();
    assert_eq!(text, vec![&json!("done")]);
    let seqs: Vec<u64> = seen.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "{seqs:?}");
    let mut ids: Vec<&str> = seen
        .iter()
        .map(|e| e["event_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), seen.len(), "event ids are unique");

    // The state and its history through commands.
    let state = command(
        &api,
        &thread_id,
        2,
        "state.get",
        json!({"namespace": [], "keys": ["messages"]}),
    )
    .await;
    let values = &state["result"]["values"];
    assert_eq!(values.as_object().unwrap().len(), 1, "{state}");
    assert_eq!(values["messages"].as_array().unwrap().len(), 2);
    let listed = command(
        &api,
        &thread_id,
        3,
        "state.listCheckpoints",
        json!({"limit": 5}),
    )
    .await;
    let checkpoints = listed["result"]["checkpoints"].as_array().unwrap().clone();
    assert!(!checkpoints.is_empty(), "{listed}");
    let tree = command(&api, &thread_id, 4, "agent.getTree", json!({})).await;
    assert_eq!(tree["result"]["tree"]["status"], "completed", "{tree}");

    // A fork from the first checkpoint runs the same assistant.
    let first = checkpoints.last().unwrap()["id"].clone();
    let fork = command(
        &api,
        &thread_id,
        5,
        "state.fork",
        json!({"checkpoint_id": first, "input": user_input("again")}),
    )
    .await;
    assert_eq!(fork["type"], "success", "{fork}");
    assert_eq!(fork["result"]["thread_id"], thread_id.as_str());
    let missing = command(
        &api,
        &thread_id,
        6,
        "state.fork",
        json!({"checkpoint_id": "999"}),
    )
    .await;
    assert_eq!(missing["error"], "no_such_checkpoint", "{missing}");
}

#[tokio::test]
async fn an_interrupt_is_requested_then_answered_by_its_id() {
    let api = api().await;
    let thread_id = api.thread().await;
    let mut events = Events::open(
        &api,
        &thread_id,
        json!({"channels": ["lifecycle", "input"]}),
    )
    .await;
    command(
        &api,
        &thread_id,
        1,
        "run.start",
        json!({"assistant_id": GRAPH, "input": user_input("write it")}),
    )
    .await;
    api.work_one(RunStatus::AwaitingHuman).await;
    let seen = events.until(|e| is_lifecycle(e, "interrupted")).await;
    let requested = seen
        .iter()
        .find(|e| e["method"] == "input.requested")
        .expect("a request");
    let interrupt_id = requested["params"]["data"]["interrupt_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        requested["params"]["data"]["payload"]["action_requests"].is_array(),
        "{requested}"
    );

    let wrong = command(&api, &thread_id, 2, "input.respond",
        json!({"namespace": [], "interrupt_id": "nope", "response": {"decisions": [{"type": "approve"}]}})).await;
    assert_eq!(wrong["error"], "no_such_interrupt", "{wrong}");
    let answered = command(&api, &thread_id, 3, "input.respond",
        json!({"namespace": [], "interrupt_id": interrupt_id, "response": {"decisions": [{"type": "approve"}]}})).await;
    assert_eq!(answered["type"], "success", "{answered}");
    // The answered run goes on, on the same stream.
    let resumed = events.until(|e| is_lifecycle(e, "running")).await;
    assert!(!resumed.is_empty());
}

#[tokio::test]
async fn bad_commands_get_the_protocols_errors() {
    let api = two_tenants().await;
    api.thread_as(KEY_A, "mine").await;
    let send = |key: &'static str, body: Value| {
        let api = &api;
        async move {
            api.send_as(Some(key), "POST", "/threads/mine/commands", Some(body))
                .await
        }
    };
    let unknown = send(KEY_A, json!({"id": 1, "method": "run.fly"})).await;
    assert_eq!(
        unknown.json()["error"],
        "unknown_command",
        "{}",
        unknown.text
    );
    let inject = send(
        KEY_A,
        json!({"id": 2, "method": "input.inject", "params": {}}),
    )
    .await;
    assert_eq!(inject.json()["error"], "not_supported");
    let no_assistant = send(
        KEY_A,
        json!({"id": 3, "method": "run.start", "params": {"input": null}}),
    )
    .await;
    assert_eq!(no_assistant.json()["error"], "invalid_argument");
    let subagent = send(
        KEY_A,
        json!({"id": 4, "method": "state.get", "params": {"namespace": ["task:x"]}}),
    )
    .await;
    assert_eq!(subagent.json()["error"], "no_such_namespace");
    let malformed = send(KEY_A, json!({"method": "state.get"})).await;
    assert_eq!(malformed.status, StatusCode::UNPROCESSABLE_ENTITY);
    let theirs = send(KEY_B, json!({"id": 5, "method": "state.get"})).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
    let stream = api
        .send_as(
            Some(KEY_B),
            "POST",
            "/threads/mine/stream/events",
            Some(json!({"channels": ["values"]})),
        )
        .await;
    assert_eq!(stream.status, StatusCode::NOT_FOUND);
    let bad_filter = api
        .send_as(
            Some(KEY_A),
            "POST",
            "/threads/mine/stream/events",
            Some(json!({"channels": ["nope"]})),
        )
        .await;
    assert_eq!(bad_filter.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_followed_runs_tokens_stream_before_its_commit_ends_the_message() {
    use deepfleet_proto::{DeltaSource, RunDelta};

    use crate::test_support::finish;

    let api = api().await;
    let thread_id = api.thread().await;
    let mut events = Events::open(
        &api,
        &thread_id,
        json!({"channels": ["messages", "lifecycle"]}),
    )
    .await;
    let started = command(
        &api,
        &thread_id,
        1,
        "run.start",
        json!({"assistant_id": GRAPH, "input": user_input("hi")}),
    )
    .await;
    let run_id = started["result"]["run_id"].as_str().unwrap().to_owned();
    let at = api.store.load_thread(&thread_id).await.unwrap();
    for text in ["do", "ne"] {
        let delta = RunDelta {
            step: at.step,
            index: at.messages.len() as u64,
            source: DeltaSource::Agent,
            text: text.into(),
            tool_calls: Vec::new(),
        };
        api.store.append_run_delta(&run_id, &delta).await.unwrap();
    }
    finish(api.store.as_ref(), &thread_id, &run_id, RunStatus::Success).await;
    let seen = events.until(|e| is_lifecycle(e, "completed")).await;
    let messages: Vec<&Value> = seen
        .iter()
        .filter(|e| e["method"] == "messages")
        .map(|e| &e["params"]["data"])
        .collect();
    let kinds: Vec<&str> = messages
        .iter()
        .map(|d| d["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message-start",
            "content-block-start",
            "content-block-delta",
            "content-block-delta",
            "content-block-finish",
            "message-finish",
        ],
        "{seen:?}"
    );
    assert_eq!(messages[2]["delta"]["text"], "do");
    assert_eq!(messages[4]["content"]["text"], "done");
}
