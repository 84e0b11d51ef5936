//! Router tests: every run-creating route refuses a bad request before it
//! writes anything (issue 14: `/runs/stream` answered 422 to a bad
//! `stream_mode` after it had created and queued the run).

use axum::http::StatusCode;
use deepfleet_queue::Queue;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{GRAPH, TestApi, api, run_body};
use deepfleet_proto::keys::records::{BATCHES, QUEUED, THREADS, thread_runs};

/// The routes that create runs on an existing thread (`{t}`), or on a
/// thread `if_not_exists: create` makes.
const THREAD_ROUTES: [&str; 3] = [
    "/threads/{t}/runs",
    "/threads/{t}/runs/wait",
    "/threads/{t}/runs/stream",
];

/// The stateless ones.
const STATELESS_ROUTES: [&str; 3] = ["/runs", "/runs/wait", "/runs/stream"];

/// `run_body` with `field` set to `value`.
fn with(field: &str, value: Value) -> Value {
    let mut body = run_body("hi");
    body[field] = value;
    body
}

/// Bodies every create route must refuse, with the status and detail.
fn bad_bodies() -> Vec<(Value, StatusCode, &'static str)> {
    vec![
        (
            with("stream_mode", json!("bogus")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown stream_mode 'bogus'",
        ),
        (
            with("stream_mode", json!(["values", "nope"])),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown stream_mode 'nope'",
        ),
        (
            with("if_not_exists", json!("sometimes")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "if_not_exists must be create or reject; got 'sometimes'",
        ),
        (
            json!({"assistant_id": "nobody", "input": {"messages": ["hi"]}}),
            StatusCode::NOT_FOUND,
            "Assistant 'nobody' not found.",
        ),
        (
            with(
                "input",
                json!({"messages": [{"type": "ai", "content": "x"}]}),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "messages[0]: only human/user messages can be sent, not `ai`",
        ),
        (
            with("webhook", json!("ftp://hooks.example.com/x")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "webhook: a webhook URL must be http or https (got \"ftp://hooks.example.com/x\")",
        ),
        (
            with("webhook", json!(3)),
            StatusCode::UNPROCESSABLE_ENTITY,
            "webhook must be a URL string, not 3",
        ),
    ]
}

/// Everything a create route could have written, as counts: threads,
/// runs of `thread`, runs queued behind others, batches, queued steps.
async fn written(api: &TestApi, thread: &str) -> [usize; 5] {
    let store = &api.embedded;
    [
        store.record_count(THREADS),
        store.record_count(&thread_runs(thread)),
        store.record_count(QUEUED),
        store.record_count(BATCHES),
        usize::try_from(api.queue.depth().await.unwrap().unwrap()).unwrap(),
    ]
}

/// Sends `body` to `path` and checks the refusal and that nothing was
/// written (`thread` is where a run would have gone).
async fn refused(api: &TestApi, path: &str, body: Value, status: StatusCode, detail: &str) {
    let thread = path
        .split('/')
        .nth(2)
        .filter(|_| path.starts_with("/threads/"));
    let thread = thread.unwrap_or("none");
    let before = written(api, thread).await;
    let answer = api.send("POST", path, Some(body.clone())).await;
    assert_eq!(answer.status, status, "{path} {body}: {}", answer.text);
    assert_eq!(answer.json()["detail"], detail, "{path} {body}");
    assert_eq!(written(api, thread).await, before, "{path} {body} wrote");
}

/// [`refused`] on every create route: those of `thread`, then the
/// stateless ones.
async fn refused_everywhere(
    api: &TestApi,
    thread: &str,
    body: &Value,
    status: StatusCode,
    detail: &str,
) {
    for route in THREAD_ROUTES {
        let path = route.replace("{t}", thread);
        refused(api, &path, body.clone(), status, detail).await;
    }
    for path in STATELESS_ROUTES {
        refused(api, path, body.clone(), status, detail).await;
    }
}

#[tokio::test]
async fn every_create_route_writes_nothing_for_a_bad_request() {
    let api = api().await;
    let thread = api.thread().await;
    assert_eq!(written(&api, &thread).await, [1, 0, 0, 0, 0]);
    for (body, status, detail) in bad_bodies() {
        refused_everywhere(&api, &thread, &body, status, detail).await;
    }
}

#[tokio::test]
async fn a_thread_to_create_is_not_created_for_a_bad_request() {
    let api = api().await;
    let mut body = with("stream_mode", json!("bogus"));
    body["if_not_exists"] = json!("create");
    for route in THREAD_ROUTES {
        let path = route.replace("{t}", "t-new");
        refused(
            &api,
            &path,
            body.clone(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown stream_mode 'bogus'",
        )
        .await;
        assert_eq!(api.embedded.record_count(THREADS), 0);
    }
}

#[tokio::test]
async fn a_resume_with_a_bad_stream_mode_resumes_nothing() {
    let api = api().await;
    let thread = api.thread().await;
    let body = json!({"assistant_id": GRAPH, "stream_mode": "bogus",
        "command": {"resume": {"decisions": [{"type": "approve"}]}}});
    for route in THREAD_ROUTES {
        let path = route.replace("{t}", &thread);
        refused(
            &api,
            &path,
            body.clone(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown stream_mode 'bogus'",
        )
        .await;
    }
}

#[tokio::test]
async fn a_batch_with_one_bad_run_creates_none() {
    let api = api().await;
    for (bad, status, detail) in bad_bodies() {
        let bodies = json!([run_body("a"), bad, run_body("c")]);
        let detail = format!("runs[1]: {detail}");
        refused(&api, "/runs/batch", bodies, status, &detail).await;
        assert_eq!(api.embedded.record_count(THREADS), 0);
    }
}

/// A run whose context breaks its graph's `context_schema` is refused on
/// every create route, naming the field, and nothing is written; one that
/// matches it is accepted.
#[tokio::test]
async fn a_context_breaking_the_context_schema_is_refused() {
    let api = api().await;
    let spec = deepfleet_proto::AgentSpec::from_yaml(&format!(
        "name: {GRAPH}\nmodel: openai:x\ncontext_schema:\n  type: object\n  required: [user_id]\n  properties:\n    user_id: {{type: string}}\n"
    ))
    .unwrap();
    api.state.runs.life.intake().register(&spec).await.unwrap();
    let thread = api.thread().await;
    let body = with("context", json!({"user_id": 7}));
    let detail = "context.user_id: 7 is not of type \"string\" (context_schema of agent 'agent')";
    refused_everywhere(
        &api,
        &thread,
        &body,
        StatusCode::UNPROCESSABLE_ENTITY,
        detail,
    )
    .await;
    let ok = with("context", json!({"user_id": "u-1"}));
    let answer = api.send("POST", "/runs", Some(ok)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
}

/// [`api`] under small limits: 64-byte messages, 8-byte files, two files
/// a thread and a 4 KiB body.
async fn limited_api() -> TestApi {
    let mut api = api().await;
    let limits = deepfleet_proto::InputLimits {
        max_message_bytes: 64,
        max_file_bytes: 8,
        max_files_per_thread: 2,
    };
    let intake = api.state.runs.life.intake().clone().with_limits(limits);
    api.state.runs.life = deepfleet_scheduler::lifecycle::Lifecycle::new(intake);
    api.state.max_body_bytes = 4096;
    api.router = crate::router(api.state.clone());
    api
}

#[tokio::test]
async fn input_past_a_limit_is_413_naming_it_and_writes_nothing() {
    let api = limited_api().await;
    let thread = api.thread().await;
    let files = |n: usize, size: usize| {
        let files: serde_json::Map<String, Value> = (0..n)
            .map(|i| (format!("/f{i}.txt"), json!("x".repeat(size))))
            .collect();
        with(
            "input",
            json!({"messages": [{"role": "user", "content": "hi"}], "files": files}),
        )
    };
    let cases = [
        (
            run_body(&"x".repeat(100)),
            "message 0 is 127 bytes, over the limit of 64 (limits.max_message_bytes)",
        ),
        (
            files(1, 9),
            "file /f0.txt is 9 bytes, over the limit of 8 (limits.max_file_bytes)",
        ),
        (
            files(3, 1),
            "the thread's file count is 3, over the limit of 2 (limits.max_files_per_thread)",
        ),
    ];
    for (body, detail) in cases {
        refused_everywhere(&api, &thread, &body, StatusCode::PAYLOAD_TOO_LARGE, detail).await;
    }
    let huge = run_body(&"x".repeat(5000));
    let answer = api.send("POST", "/runs", Some(huge)).await;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.text
    );
    assert_eq!(answer.json()["code"], "too_large", "{}", answer.text);
    let item = json!({"namespace": ["notes"], "key": "k", "value": {"text": "far too long"}});
    let answer = api.send("PUT", "/store/items", Some(item)).await;
    assert_eq!(
        (answer.status, answer.json()["detail"].clone()),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            json!("file item k is 23 bytes, over the limit of 8 (limits.max_file_bytes)")
        )
    );
}
