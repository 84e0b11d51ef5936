//! Router tests of the A2A endpoint and agent card, with a stand-in
//! worker ending the runs.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use deepfleet_proto::keys::records::A2A_TASKS;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{Answer, KEY_A, KEY_B, TestApi, api, two_tenants};

const ENDPOINT: &str = "/a2a/agent";

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params})
}

fn message(text: &str, context: Option<&str>) -> Value {
    let mut message = json!({"role": "user", "messageId": "m-1", "kind": "message",
                             "parts": [{"kind": "text", "text": text}]});
    if let Some(context) = context {
        message["contextId"] = json!(context);
    }
    json!({"message": message})
}

/// A JSON answer's document (keep-alive blank lines before it skipped).
fn document(answer: &Answer) -> Value {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    serde_json::from_str(answer.text.trim()).unwrap()
}

impl TestApi {
    async fn a2a(&self, key: Option<&str>, method: &str, params: Value) -> Value {
        let answer = self
            .send_as(key, "POST", ENDPOINT, Some(rpc(method, params)))
            .await;
        document(&answer)
    }

    /// Sends `text` (on `context`) and lets a worker answer `done`.
    async fn sent(&self, text: &str, context: Option<&str>) -> Value {
        let (answer, _) = tokio::join!(
            self.a2a(None, "message/send", message(text, context)),
            self.work_one(RunStatus::Success)
        );
        answer
    }
}

#[tokio::test]
async fn a_message_runs_the_assistant_and_answers_the_completed_task() {
    let api = api().await;
    let answer = api.sent("hello", None).await;
    assert_eq!(answer["id"], "req-1");
    let task = &answer["result"];
    assert_eq!(task["kind"], "task");
    assert_eq!(task["status"]["state"], "completed", "{answer}");
    assert_eq!(task["status"]["message"]["parts"][0]["text"], "done");
    assert_eq!(
        task["artifacts"][0]["parts"],
        json!([{"kind": "text", "text": "done"}])
    );
    // The context is the thread the run went on.
    let context = task["contextId"].as_str().unwrap();
    let run = api
        .send(
            "GET",
            &format!("/threads/{context}/runs/{}", task["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.text);
}

#[tokio::test]
async fn a_second_message_on_the_context_continues_its_thread() {
    let api = api().await;
    let first = api.sent("hello", None).await;
    let context = first["result"]["contextId"].as_str().unwrap().to_owned();
    let second = api.sent("again", Some(&context)).await;
    assert_eq!(second["result"]["contextId"], context.as_str());
    assert_ne!(second["result"]["id"], first["result"]["id"]);
    let state = api
        .send("GET", &format!("/threads/{context}/state"), None)
        .await
        .json();
    let texts: Vec<&str> = state["values"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["hello", "done", "again", "done"]);
}

#[tokio::test]
async fn a_new_context_named_by_the_client_becomes_a_thread() {
    let api = api().await;
    let answer = api.sent("hello", Some("ctx-from-the-client")).await;
    assert_eq!(answer["result"]["contextId"], "ctx-from-the-client");
    let thread = api.send("GET", "/threads/ctx-from-the-client", None).await;
    assert_eq!(thread.status, StatusCode::OK, "{}", thread.text);
}

#[tokio::test]
async fn tasks_get_finds_the_task_and_only_the_callers() {
    let api = two_tenants().await;
    let (sent, _) = tokio::join!(
        api.a2a(Some(KEY_A), "message/send", message("hi", None)),
        api.work_one(RunStatus::Success)
    );
    let id = sent["result"]["id"].as_str().unwrap();
    let got = api.a2a(Some(KEY_A), "tasks/get", json!({"id": id})).await;
    assert_eq!(got["result"], sent["result"]);
    let other = api.a2a(Some(KEY_B), "tasks/get", json!({"id": id})).await;
    assert_eq!(other["error"]["code"], -32001, "{other}");
    let unknown = api
        .a2a(Some(KEY_A), "tasks/get", json!({"id": "nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32001);
}

#[tokio::test]
async fn a_task_that_does_not_block_is_answered_submitted() {
    let api = api().await;
    let mut params = message("hi", None);
    params["configuration"] = json!({"blocking": false});
    let answer = api.a2a(None, "message/send", params).await;
    assert_eq!(answer["result"]["status"]["state"], "submitted", "{answer}");
}

#[tokio::test]
async fn a_queued_task_is_cancelled_and_an_ended_one_cannot_be() {
    let api = api().await;
    let background = |context: Option<&str>| {
        let mut params = message("hi", context);
        params["configuration"] = json!({"blocking": false});
        params
    };
    let first = api.a2a(None, "message/send", background(None)).await;
    let context = first["result"]["contextId"].as_str().unwrap();
    // Behind the first run, the second waits in the thread's queue.
    let second = api
        .a2a(None, "message/send", background(Some(context)))
        .await;
    let id = second["result"]["id"].as_str().unwrap();
    let cancelled = api.a2a(None, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(
        cancelled["result"]["status"]["state"], "canceled",
        "{cancelled}"
    );
    let again = api.a2a(None, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

#[tokio::test]
async fn the_stream_sends_the_task_then_its_answer_and_a_final_status() {
    let api = api().await;
    let (answer, _) = tokio::join!(
        api.send(
            "POST",
            ENDPOINT,
            Some(rpc("message/stream", message("hi", None)))
        ),
        api.work_one(RunStatus::Success)
    );
    assert_eq!(answer.status, StatusCode::OK);
    let events: Vec<Value> = answer
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["id"] == "req-1" && e["jsonrpc"] == "2.0")
    );
    let results: Vec<&Value> = events.iter().map(|e| &e["result"]).collect();
    assert_eq!(results[0]["kind"], "task");
    let last = results.last().unwrap();
    assert_eq!(last["kind"], "status-update");
    assert_eq!(last["final"], true);
    assert_eq!(last["status"]["state"], "completed");
    let artifact = results[results.len() - 2];
    assert_eq!(artifact["kind"], "artifact-update");
    assert_eq!(artifact["artifact"]["parts"][0]["text"], "done");
}

#[tokio::test]
async fn mistakes_are_json_rpc_errors_with_status_200() {
    let api = api().await;
    let unknown = api.a2a(None, "tasks/resubscribe", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    assert_eq!(unknown["id"], "req-1");
    let bad = api
        .a2a(None, "message/send", json!({"message": {"role": "user"}}))
        .await;
    assert_eq!(bad["error"]["code"], -32602);
    let file = api
        .a2a(
            None,
            "message/send",
            json!({"message": {"role": "user", "messageId": "m",
                               "parts": [{"kind": "file", "file": {"uri": "x"}}]}}),
        )
        .await;
    assert_eq!(file["error"]["code"], -32602);
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(ENDPOINT)
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{not json"))
        .unwrap();
    let malformed = document(&api.raw(request).await);
    assert_eq!(malformed["error"]["code"], -32700);
    assert_eq!(malformed["id"], Value::Null);
}

#[tokio::test]
async fn an_unknown_assistant_is_404() {
    let api = api().await;
    let answer = api
        .send(
            "POST",
            "/a2a/nobody",
            Some(rpc("tasks/get", json!({"id": "x"}))),
        )
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    let card = api
        .send(
            "GET",
            "/.well-known/agent-card.json?assistant_id=nobody",
            None,
        )
        .await;
    assert_eq!(card.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_agent_card_points_at_the_endpoint() {
    let api = crate::test_support::api_allowing(&["fleet.local"]).await;
    let request = axum::http::Request::builder()
        .uri("/.well-known/agent-card.json?assistant_id=agent")
        .header("host", "fleet.local:2024")
        .body(axum::body::Body::empty())
        .unwrap();
    let card = api.raw(request).await;
    assert_eq!(card.status, StatusCode::OK, "{}", card.text);
    let card = card.json();
    let id = deepfleet_scheduler::runs::assistants::system_assistant_id("agent");
    assert_eq!(card["url"], format!("http://fleet.local:2024/a2a/{id}"));
    assert_eq!(card["name"], "agent");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["skills"][0]["id"], id.as_str());
    let missing = api.send("GET", "/.well-known/agent-card.json", None).await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_task_goes_with_its_thread() {
    let api = api().await;
    let sent = api.sent("hello", None).await;
    let id = sent["result"]["id"].as_str().unwrap();
    let context = sent["result"]["contextId"].as_str().unwrap();
    let deleted = api
        .send("DELETE", &format!("/threads/{context}"), None)
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    let kept = api.store.get_record(A2A_TASKS, id).await.unwrap();
    assert_eq!(kept, None);
    let got = api.a2a(None, "tasks/get", json!({"id": id})).await;
    assert_eq!(got["error"]["code"], -32001);
}

#[tokio::test]
async fn a_body_past_the_limit_is_413_with_a_detail() {
    let api = api().await;
    let text = "x".repeat(api.state.max_body_bytes + 1);
    let answer = api
        .send(
            "POST",
            ENDPOINT,
            Some(rpc("message/send", message(&text, None))),
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text
    );
    assert!(answer.json()["detail"].is_string(), "{}", answer.text);
}

#[tokio::test]
async fn a_task_waiting_for_a_decision_goes_on_when_a_message_answers_it() {
    let api = api().await;
    let (asked, _) = tokio::join!(
        api.a2a(None, "message/send", message("hi", None)),
        api.work_one(RunStatus::AwaitingHuman)
    );
    let task = &asked["result"];
    assert_eq!(task["status"]["state"], "input-required", "{asked}");
    assert!(task.get("artifacts").is_none());
    let (id, context) = (task["id"].clone(), task["contextId"].clone());

    let mut words = message("yes please", None);
    words["message"]["taskId"] = id.clone();
    let refused = api.a2a(None, "message/send", words).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("decisions")
    );

    let answer = json!({"message": {
        "role": "user", "messageId": "m-2", "taskId": id, "contextId": context,
        "parts": [{"kind": "data", "data": {"decisions": [{"type": "approve"}]}}],
    }});
    let (resumed, _) = tokio::join!(
        api.a2a(None, "message/send", answer),
        api.work_one(RunStatus::Success)
    );
    assert_eq!(resumed["result"]["id"], id, "{resumed}");
    assert_eq!(resumed["result"]["status"]["state"], "completed");
}

#[tokio::test]
async fn a_message_naming_an_ended_task_starts_a_new_one_on_its_context() {
    let api = api().await;
    let first = api.sent("hello", None).await;
    let mut next = message("again", None);
    next["message"]["taskId"] = first["result"]["id"].clone();
    let (second, _) = tokio::join!(
        api.a2a(None, "message/send", next),
        api.work_one(RunStatus::Success)
    );
    assert_eq!(second["result"]["contextId"], first["result"]["contextId"]);
    assert_ne!(second["result"]["id"], first["result"]["id"]);
    let mut elsewhere = message("again", Some("another-context"));
    elsewhere["message"]["taskId"] = first["result"]["id"].clone();
    let refused = api.a2a(None, "message/send", elsewhere).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let mut unknown = message("again", None);
    unknown["message"]["taskId"] = json!("no-such-task");
    let missing = api.a2a(None, "message/send", unknown).await;
    assert_eq!(missing["error"]["code"], -32001);
}

#[tokio::test]
async fn a_task_waiting_for_a_decision_cannot_be_cancelled() {
    let api = api().await;
    let (asked, _) = tokio::join!(
        api.a2a(None, "message/send", message("hi", None)),
        api.work_one(RunStatus::AwaitingHuman)
    );
    let id = asked["result"]["id"].clone();
    let refused = api.a2a(None, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
}
