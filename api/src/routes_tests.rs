//! The access matrix: every route of the table (which the OpenAPI
//! description must match) called with no key, each role of tenant `a`,
//! and tenant `b`'s admin key, on tenant `a`'s records whose ids look
//! like route words; and the regressions of the security pass.

use axum::body::Body as HttpBody;
use axum::http::{Request, StatusCode, header};
use deepfleet_proto::{Role, RunStatus, TaskLine, TenantId};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::test_support::{TestApi, api_with, finish, mcp_request, run_body};
use deepfleet_scheduler::keys::{ApiKeys, key_line};
use deepfleet_scheduler::submit_task;

const A_READ: &str = "key-a-read";
const A_SUBMIT: &str = "key-a-submit";
const A_ADMIN: &str = "key-a-admin";
const B_ADMIN: &str = "key-b-admin";
/// A word tenant `a`'s records carry, that no answer to `b` may hold.
const MARK: &str = "tenant-a-only-7f3c";

fn tenant(id: &str) -> TenantId {
    TenantId::new(id).unwrap()
}

async fn fleet() -> TestApi {
    let lines = [
        key_line(A_READ, &tenant("a"), Role::Read),
        key_line(A_SUBMIT, &tenant("a"), Role::Submit),
        key_line(A_ADMIN, &tenant("a"), Role::Admin),
        key_line(B_ADMIN, &tenant("b"), Role::Admin),
    ];
    api_with(
        ApiKeys::parse(lines.iter().map(|l| ("test", l.as_str()))).unwrap(),
        None,
    )
    .await
}

/// Tenant `a`'s records, named like the words a path may end in.
struct Records {
    run_id: String,
    cron_id: String,
    batch_id: String,
}

/// The assistant `versions`, the thread `history` with an ended run, a cron
/// and a batch, all of tenant `a` and all marked with [`MARK`].
async fn records_of_a(api: &TestApi) -> Records {
    let a = Some(A_ADMIN);
    let ok = |answer: &crate::test_support::Answer| {
        assert!(answer.status.is_success(), "{}", answer.text);
    };
    let assistant = json!({"assistant_id": "versions", "graph_id": "agent", "name": MARK});
    ok(&api.send_as(a, "POST", "/assistants", Some(assistant)).await);
    let thread = json!({"thread_id": "history", "metadata": {"mark": MARK}});
    ok(&api.send_as(a, "POST", "/threads", Some(thread)).await);
    let mut body = run_body(MARK);
    body["assistant_id"] = json!("versions");
    let run = api
        .send_as(a, "POST", "/threads/history/runs", Some(body))
        .await;
    ok(&run);
    let run_id = run.json()["run_id"].as_str().unwrap().to_owned();
    finish(api.store.as_ref(), "history", &run_id, RunStatus::Success).await;
    let mut cron = run_body(MARK);
    cron["assistant_id"] = json!("versions");
    cron["schedule"] = json!("0 0 1 1 *");
    cron["metadata"] = json!({"mark": MARK});
    let cron = api
        .send_as(a, "POST", "/threads/history/runs/crons", Some(cron))
        .await;
    ok(&cron);
    let cron_id = cron.json()["cron_id"].as_str().unwrap().to_owned();
    let batch = api
        .send_as(a, "POST", "/runs/batch", Some(json!([run_body(MARK)])))
        .await;
    ok(&batch);
    let batch_id = batch.json()[0]["metadata"]["batch_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let item = json!({"namespace": ["versions"], "key": "history", "value": {"mark": MARK}});
    ok(&api.send_as(a, "PUT", "/store/items", Some(item)).await);
    Records {
        run_id,
        cron_id,
        batch_id,
    }
}

/// `path` with its parameters naming tenant `a`'s records.
fn uri_of(path: &str, records: &Records) -> String {
    let names = [
        ("{assistant_id}", "versions"),
        ("{thread_id}", "history"),
        ("{run_id}", records.run_id.as_str()),
        ("{cron_id}", records.cron_id.as_str()),
        ("{batch_id}", records.batch_id.as_str()),
        ("{checkpoint_id}", "count"),
        ("{namespace}", "search"),
    ];
    fill(path, &names)
}

/// `path` with its parameters naming records that do not exist.
fn unknown_uri(path: &str) -> String {
    let names = [
        ("{assistant_id}", "nope-assistant"),
        ("{thread_id}", "nope-thread"),
        ("{run_id}", "nope-run"),
        ("{cron_id}", "nope-cron"),
        ("{batch_id}", "nope-batch"),
        ("{checkpoint_id}", "count"),
        ("{namespace}", "search"),
    ];
    fill(path, &names)
}

fn fill(path: &str, names: &[(&str, &str)]) -> String {
    let mut uri = path.to_owned();
    for (param, name) in names {
        uri = uri.replace(param, name);
    }
    assert!(!uri.contains('{'), "a parameter of {path} is not filled");
    if path == "/store/items" {
        return format!("{uri}?namespace=versions&key=history");
    }
    uri
}

/// The status of one call, its body read only when asked (a stream a
/// permitted key opens is left, not followed).
async fn call(api: &TestApi, key: Option<&str>, method: &str, uri: &str) -> (StatusCode, String) {
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream");
    if let Some(key) = key {
        builder = builder.header("x-api-key", key);
    }
    let body = if method == "GET" {
        HttpBody::empty()
    } else {
        HttpBody::from("{}")
    };
    let response = api
        .router
        .clone()
        .oneshot(builder.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if is_stream {
        return (status, String::new());
    }
    (status, text_of(response).await)
}

/// A response's body as text, read for at most five seconds (an MCP
/// answer is an event stream that ends with its one answer).
async fn text_of(response: axum::response::Response) -> String {
    let bytes = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        axum::body::to_bytes(response.into_body(), 1 << 20),
    )
    .await
    .ok()
    .and_then(Result::ok)
    .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test]
async fn every_route_answers_each_key_as_its_declared_access_says() {
    let api = fleet().await;
    let records = records_of_a(&api).await;
    let table = crate::route_table();
    assert!(table.len() > 60, "the table lists every route");
    // Tenant b first, while tenant a's records all exist: whatever it
    // calls, it neither finds nor learns anything of them.
    for declared in &table {
        let method = declared.method.as_str();
        let uri = uri_of(declared.path, &records);
        let (status, text) = call(&api, Some(B_ADMIN), method, &uri).await;
        if declared.path.contains('{') {
            // Exactly as if the record did not exist.
            let unknown = unknown_uri(declared.path);
            let (expected, _) = call(&api, Some(B_ADMIN), method, &unknown).await;
            assert_eq!(status, expected, "b: {method} {uri}: {text}");
            assert!(
                !status.is_success() || method == "POST",
                "b: {method} {uri}: {text}"
            );
        }
        assert!(
            !text.contains(MARK),
            "b: {method} {uri} leaks a's records: {text}"
        );
        assert!(
            !text.contains(&records.run_id),
            "b: {method} {uri} names a's run: {text}"
        );
    }
    // The protocol and A2A answer in their own envelopes: a's thread and
    // assistant are as unknown to b as any other.
    let (status, text) = call(&api, Some(B_ADMIN), "POST", "/a2a/versions").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    for declared in &table {
        let method = declared.method.as_str();
        let uri = uri_of(declared.path, &records);
        let (status, text) = call(&api, None, method, &uri).await;
        match declared.access {
            Access::Public => assert_ne!(status, StatusCode::UNAUTHORIZED, "{method} {uri}"),
            Access::Role(_) => {
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "no key: {method} {uri}: {text}"
                )
            }
        }
        for (key, role) in [
            (A_READ, Role::Read),
            (A_SUBMIT, Role::Submit),
            (A_ADMIN, Role::Admin),
        ] {
            let (status, text) = call(&api, Some(key), method, &uri).await;
            let allowed = match declared.access {
                Access::Public => true,
                Access::Role(needed) => role.allows(needed),
            };
            if allowed {
                assert!(
                    status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
                    "{role}: {method} {uri} answered {status}: {text}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{role}: {method} {uri}: {text}"
                );
            }
        }
    }
}

/// A JSON-RPC request body.
fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

#[tokio::test]
async fn a_read_key_cannot_run_an_assistant_named_like_a_read_over_a2a() {
    let api = fleet().await;
    for name in ["search", "count", "history", "versions"] {
        let assistant = json!({"assistant_id": name, "graph_id": "agent"});
        let made = api
            .send_as(Some(A_ADMIN), "POST", "/assistants", Some(assistant))
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.text);
        let message = json!({"message": {"role": "user", "messageId": "m1",
            "parts": [{"kind": "text", "text": "hi"}]}});
        for method in ["message/send", "message/stream"] {
            let answer = api
                .send_as(
                    Some(A_READ),
                    "POST",
                    &format!("/a2a/{name}"),
                    Some(rpc(method, message.clone())),
                )
                .await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{name} {method}");
        }
        let cancel = rpc("tasks/cancel", json!({"id": "t"}));
        let answer = api
            .send_as(Some(A_READ), "POST", &format!("/a2a/{name}"), Some(cancel))
            .await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{name} tasks/cancel");
        let get = rpc("tasks/get", json!({"id": "t"}));
        let answer = api
            .send_as(Some(A_READ), "POST", &format!("/a2a/{name}"), Some(get))
            .await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "{name} tasks/get: {}",
            answer.text
        );
    }
    assert_eq!(
        deepfleet_queue::Queue::depth(api.queue.as_ref())
            .await
            .unwrap(),
        Some(0),
        "no run was started"
    );
}

#[tokio::test]
async fn a_read_key_cannot_start_or_answer_through_protocol_commands() {
    let api = fleet().await;
    api.thread_as(A_ADMIN, "count").await;
    for (method, params) in [
        (
            "run.start",
            json!({"assistant_id": "agent", "input": {"messages": []}}),
        ),
        (
            "input.respond",
            json!({"namespace": [], "interrupt_id": "i", "response": {}}),
        ),
        ("state.fork", json!({"checkpoint_id": "1"})),
    ] {
        let command = json!({"id": 1, "method": method, "params": params});
        let answer = api
            .send_as(
                Some(A_READ),
                "POST",
                "/threads/count/commands",
                Some(command),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{method}: {}",
            answer.text
        );
    }
    let read = json!({"id": 1, "method": "state.get", "params": {}});
    let answer = api
        .send_as(Some(A_READ), "POST", "/threads/count/commands", Some(read))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
}

#[tokio::test]
async fn a_read_key_lists_mcp_tools_but_cannot_call_one() {
    let api = fleet().await;
    let call_tool = rpc(
        "tools/call",
        json!({"name": "agent", "arguments": {"input": "hi"}}),
    );
    let (status, _) = mcp(&api, A_READ, call_tool.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let batch = json!([rpc("tools/list", json!({})), call_tool]);
    let (status, _) = mcp(&api, A_READ, batch).await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "a batch needs its strongest role"
    );
    let (status, text) = mcp(&api, A_READ, rpc("tools/list", json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{text}");
}

async fn mcp(api: &TestApi, key: &str, body: Value) -> (StatusCode, String) {
    let answer = api.raw(mcp_request(key, &body)).await;
    (answer.status, answer.text)
}

#[tokio::test]
async fn a_read_key_cannot_cancel_a_run_by_leaving_its_stream() {
    let api = fleet().await;
    api.thread_as(A_ADMIN, "t").await;
    let run = api
        .send_as(
            Some(A_SUBMIT),
            "POST",
            "/threads/t/runs",
            Some(run_body("hi")),
        )
        .await;
    let run_id = run.json()["run_id"].as_str().unwrap().to_owned();
    let uri = format!("/threads/t/runs/{run_id}/stream?cancel_on_disconnect=true");
    let (status, text) = call(&api, Some(A_READ), "GET", &uri).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    let meta = api.store.get_run("t", &run_id).await.unwrap().unwrap();
    assert_ne!(meta.status, RunStatus::AwaitingHuman);
    assert!(!api.store.cancel_requested("t", &run_id).await.unwrap());
}

/// The ways a caller can name a thread id to make or run on it; each must
/// refuse an id the caller does not own.
async fn adoptions_refused(api: &TestApi, key: &str, thread_id: &str) {
    let create = json!({"thread_id": thread_id});
    let answer = api
        .send_as(Some(key), "POST", "/threads", Some(create))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::CONFLICT,
        "POST /threads: {}",
        answer.text
    );
    assert!(!answer.text.contains(MARK));
    let mut run = run_body("mine now");
    run["if_not_exists"] = json!("create");
    let uri = format!("/threads/{thread_id}/runs");
    let answer = api.send_as(Some(key), "POST", &uri, Some(run)).await;
    assert_eq!(
        answer.status,
        StatusCode::NOT_FOUND,
        "{uri}: {}",
        answer.text
    );
    for uri in [
        format!("/threads/{thread_id}"),
        format!("/threads/{thread_id}/state"),
        format!("/threads/{thread_id}/history"),
    ] {
        let answer = api.send_as(Some(key), "GET", &uri, None).await;
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "{uri}: {}",
            answer.text
        );
    }
    let answer = api
        .send_as(Some(key), "DELETE", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(
        answer.status,
        StatusCode::NOT_FOUND,
        "DELETE: {}",
        answer.text
    );
    // The protocol's run.start makes a missing thread: not this one.
    let command = json!({"id": 1, "method": "run.start",
        "params": {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "x"}]}}});
    let uri = format!("/threads/{thread_id}/commands");
    let answer = api.send_as(Some(key), "POST", &uri, Some(command)).await;
    assert_ne!(
        answer.json()["type"],
        "success",
        "run.start: {}",
        answer.text
    );
    // A2A: a message naming the thread as its context.
    let message = json!({"message": {"role": "user", "messageId": "m1", "contextId": thread_id,
        "parts": [{"kind": "text", "text": "x"}]}, "configuration": {"blocking": false}});
    let answer = api
        .send_as(
            Some(key),
            "POST",
            "/a2a/agent",
            Some(rpc("message/send", message)),
        )
        .await;
    assert!(answer.json()["error"].is_object(), "A2A: {}", answer.text);
    // Nothing was started and the thread kept its content.
    let thread = api.store.load_thread(thread_id).await.unwrap();
    assert!(
        thread
            .messages
            .iter()
            .all(|m| !format!("{m:?}").contains("mine now"))
    );
}

#[tokio::test]
async fn a_batchs_threads_are_not_another_tenants_to_take() {
    let api = fleet().await;
    let intake = api
        .state
        .runs
        .life
        .intake()
        .clone()
        .with_tenant(tenant("a"));
    let task = TaskLine {
        id: "t1".into(),
        input: MARK.into(),
        context: None,
        files: None,
        state: None,
        timeout_secs: None,
    };
    let run = submit_task(&intake, "agent", &task, Some("b1"))
        .await
        .unwrap();
    let found = submit_task(&intake, "agent", &task, Some("b1"))
        .await
        .unwrap();
    assert_eq!(
        found.thread_id, run.thread_id,
        "a batch submitted again finds its thread"
    );
    // The batch's thread ids are salted with its own random salt: a
    // thread made ahead on what the batch and the task alone would give
    // is not the batch's, and stays empty.
    let ahead = deepfleet_scheduler::batch_ids::batch_thread_id("b1", "t2", "");
    api.thread_as(B_ADMIN, &ahead).await;
    let second = submit_task(
        &intake,
        "agent",
        &TaskLine {
            id: "t2".into(),
            ..task.clone()
        },
        Some("b1"),
    )
    .await
    .unwrap();
    assert_ne!(second.thread_id, ahead);
    let taken = api.store.load_thread(&ahead).await.unwrap();
    assert!(taken.messages.is_empty(), "nothing of the batch reached it");
    // A batch recorded before salts derives its thread ids without one:
    // its task whose thread was made ahead through the API is refused.
    let legacy = deepfleet_scheduler::task_batches::TaskBatchHeader {
        batch_id: "old".into(),
        agent: "agent".into(),
        created_at: chrono::Utc::now(),
        salt: String::new(),
    };
    deepfleet_scheduler::repo::Repository::new(
        api.store.as_ref(),
        deepfleet_proto::keys::records::TASK_BATCHES,
    )
    .put("old", &legacy)
    .await
    .unwrap();
    api.thread_as(
        B_ADMIN,
        &deepfleet_scheduler::batch_ids::batch_thread_id("old", "t1", ""),
    )
    .await;
    let refused = submit_task(&intake, "agent", &task, Some("old")).await;
    assert!(refused.is_err(), "{refused:?}");
    for key in [B_ADMIN, A_ADMIN] {
        adoptions_refused(&api, key, &run.thread_id).await;
    }
}

#[tokio::test]
async fn a_subagents_thread_is_not_another_tenants_to_take() {
    let api = fleet().await;
    // A child run as the worker makes one: a fresh thread seeded with the
    // task, the parent's tenant, and no API record.
    let child = deepfleet_proto::RunRecord {
        tenant: tenant("a"),
        ..deepfleet_proto::RunRecord::new("child-run", "child-thread", "agent", chrono::Utc::now())
    };
    let seed = deepfleet_store::ThreadSeed {
        messages: vec![deepfleet_fleet::tokens::logged(
            deepfleet_proto::Message::user(MARK),
        )],
        ..Default::default()
    };
    api.store.create_run(&child, &seed).await.unwrap();
    adoptions_refused(&api, B_ADMIN, "child-thread").await;
}

#[tokio::test]
async fn a_page_is_bounded_and_a_sorted_search_still_pages() {
    let api = fleet().await;
    for id in ["t1", "t2", "t3"] {
        api.thread_as(A_ADMIN, id).await;
    }
    for (uri, body) in [
        ("/threads/search", json!({"limit": 1001})),
        (
            "/threads/search",
            json!({"limit": 1001, "sort_by": "thread_id"}),
        ),
        ("/assistants/search", json!({"limit": 1001})),
        ("/runs/crons/search", json!({"limit": 1001})),
        ("/store/items/search", json!({"limit": 1001})),
    ] {
        let answer = api.send_as(Some(A_READ), "POST", uri, Some(body)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{uri}: {}",
            answer.text
        );
        assert!(answer.text.contains("limit"), "{}", answer.text);
    }
    let sorted = json!({"sort_by": "thread_id", "sort_order": "asc", "offset": 1, "limit": 1});
    let page = api
        .send_as(Some(A_READ), "POST", "/threads/search", Some(sorted))
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let page = page.json();
    assert_eq!(page.as_array().map(Vec::len), Some(1));
    assert_eq!(page[0]["thread_id"], "t2");
    assert_eq!(page[0]["status"], "idle", "the page is rendered whole");
}

#[tokio::test]
async fn a_batch_past_its_size_creates_nothing() {
    let api = fleet().await;
    let runs: Vec<Value> = (0..=crate::runs::batches::MAX_BATCH_RUNS)
        .map(|i| run_body(&i.to_string()))
        .collect();
    let answer = api
        .send_as(
            Some(A_SUBMIT),
            "POST",
            "/runs/batch",
            Some(Value::Array(runs)),
        )
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.text
    );
    assert_eq!(
        deepfleet_queue::Queue::depth(api.queue.as_ref())
            .await
            .unwrap(),
        Some(0)
    );
}

#[tokio::test]
async fn a_batch_retried_with_its_idempotency_key_is_made_once() {
    let api = fleet().await;
    let runs = json!([run_body("one"), run_body("two")]);
    let send = |key: &'static str, body: Value| {
        let request = Request::builder()
            .method("POST")
            .uri("/runs/batch")
            .header("x-api-key", key)
            .header("idempotency-key", "nightly-2026-12-07")
            .header(header::CONTENT_TYPE, "application/json")
            .body(HttpBody::from(body.to_string()))
            .unwrap();
        api.raw(request)
    };
    let first = send(A_SUBMIT, runs.clone()).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let again = send(A_SUBMIT, runs.clone()).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    let ids = |answer: &Value| -> Vec<String> {
        answer
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&again.json()), ids(&first.json()), "the same runs");
    assert_eq!(
        deepfleet_queue::Queue::depth(api.queue.as_ref())
            .await
            .unwrap(),
        Some(2),
        "two runs started, not four"
    );
    // The same key for other runs is refused; another tenant's same key
    // is its own batch.
    let other = send(A_SUBMIT, json!([run_body("three")])).await;
    assert_eq!(
        other.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        other.text
    );
    let theirs = send(B_ADMIN, runs).await;
    assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.text);
    assert_ne!(
        theirs.json()[0]["metadata"]["batch_id"],
        first.json()[0]["metadata"]["batch_id"]
    );
}

#[tokio::test]
async fn ids_a_caller_chooses_are_bounded_and_printable() {
    let api = fleet().await;
    let long = "x".repeat(deepfleet_scheduler::ids::MAX_ID_LEN + 1);
    for id in ["a\u{0}b", "evil\u{202E}gpj.exe", long.as_str()] {
        let thread = api
            .send_as(
                Some(A_ADMIN),
                "POST",
                "/threads",
                Some(json!({"thread_id": id})),
            )
            .await;
        assert_eq!(
            thread.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            thread.text
        );
        let assistant = json!({"assistant_id": id, "graph_id": "agent"});
        let made = api
            .send_as(Some(A_ADMIN), "POST", "/assistants", Some(assistant))
            .await;
        assert_eq!(
            made.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            made.text
        );
        let mut run = run_body("hi");
        run["if_not_exists"] = json!("create");
        let uri = format!("/threads/{}/runs", urlencoding(id));
        let answer = api.send_as(Some(A_ADMIN), "POST", &uri, Some(run)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            answer.text
        );
    }
}

/// `id` percent-encoded as a path segment.
fn urlencoding(id: &str) -> String {
    id.bytes().map(|b| format!("%{b:02X}")).collect()
}

#[tokio::test]
async fn a_thread_is_its_makers_whichever_way_it_was_made() {
    let api = fleet().await;
    let a = Some(A_ADMIN);
    api.thread_as(A_ADMIN, "made-by-api").await;
    let mut run = run_body("hi");
    run["if_not_exists"] = json!("create");
    let made = api
        .send_as(a, "POST", "/threads/made-by-run/runs", Some(run))
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text);
    let copy = api
        .send_as(a, "POST", "/threads/made-by-api/copy", None)
        .await;
    assert_eq!(copy.status, StatusCode::OK, "{}", copy.text);
    let copied = copy.json()["thread_id"].as_str().unwrap().to_owned();
    let command = json!({"id": 1, "method": "run.start",
        "params": {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "x"}]}}});
    let started = api
        .send_as(
            a,
            "POST",
            "/threads/made-by-protocol/commands",
            Some(command),
        )
        .await;
    assert_eq!(started.json()["type"], "success", "{}", started.text);
    let message = json!({"message": {"role": "user", "messageId": "m1", "contextId": "made-by-a2a",
        "parts": [{"kind": "text", "text": "x"}]}, "configuration": {"blocking": false}});
    let sent = api
        .send_as(a, "POST", "/a2a/agent", Some(rpc("message/send", message)))
        .await;
    assert!(sent.json()["result"].is_object(), "{}", sent.text);
    for id in [
        "made-by-api",
        "made-by-run",
        copied.as_str(),
        "made-by-protocol",
        "made-by-a2a",
    ] {
        let mine = api.send_as(a, "GET", &format!("/threads/{id}"), None).await;
        assert_eq!(mine.status, StatusCode::OK, "{id}: {}", mine.text);
        let theirs = api
            .send_as(Some(B_ADMIN), "GET", &format!("/threads/{id}"), None)
            .await;
        assert_eq!(
            theirs.status,
            StatusCode::NOT_FOUND,
            "{id}: {}",
            theirs.text
        );
        let claim = api
            .send_as(
                Some(B_ADMIN),
                "POST",
                "/threads",
                Some(json!({"thread_id": id})),
            )
            .await;
        assert_eq!(claim.status, StatusCode::CONFLICT, "{id}: {}", claim.text);
    }
}
