//! Router tests of the run routes: create, list, get, delete, cancel, and
//! the multitask strategies on a busy thread.

use axum::http::{StatusCode, header};
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{GRAPH, TestApi, api, finish, run_body};
use deepfleet_scheduler::runs::assistants::system_assistant_id;

fn id(value: &Value) -> String {
    value["run_id"].as_str().unwrap().to_owned()
}

async fn status_of(api: &TestApi, thread_id: &str, run_id: &str) -> Value {
    api.send("GET", &format!("/threads/{thread_id}/runs/{run_id}"), None)
        .await
        .json()["status"]
        .clone()
}

#[tokio::test]
async fn a_run_echoes_its_request_but_never_its_context() {
    let api = api().await;
    let thread_id = api.thread().await;
    let body = json!({"assistant_id": GRAPH, "input": {"messages": ["hi"]},
        "metadata": {"k": "v"}, "config": {"tags": ["a"], "configurable": {"key": "secret"}},
        "stream_mode": ["values", "updates"], "webhook": "https://example.invalid/hook"});
    let answer = api
        .send("POST", &format!("/threads/{thread_id}/runs"), Some(body))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let run = answer.json();
    let run_id = id(&run);
    let assistant_id = system_assistant_id(GRAPH);
    assert_eq!(
        run,
        json!({"run_id": run_id, "thread_id": thread_id, "assistant_id": assistant_id,
            "created_at": run["created_at"], "updated_at": run["updated_at"], "status": "pending",
            "metadata": {"k": "v", "assistant_id": assistant_id},
            "kwargs": {"input": {"messages": ["hi"]}, "config": {"tags": ["a"]},
                "stream_mode": ["values", "updates"], "webhook": "https://example.invalid/hook"},
            "multitask_strategy": "enqueue", "cost_usd": 0.0})
    );
    assert!(!answer.text.contains("secret"), "{}", answer.text);
    assert_eq!(
        answer.header(header::CONTENT_LOCATION),
        Some(format!("/threads/{thread_id}/runs/{run_id}").as_str())
    );
    let got = api
        .send("GET", &format!("/threads/{thread_id}/runs/{run_id}"), None)
        .await;
    // Answered as created; read back as stored, which happened just after.
    let mut got = got.json();
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert!(at(&got["updated_at"]) >= at(&run["updated_at"]));
    got["updated_at"] = run["updated_at"].clone();
    assert_eq!(got, run);
}

#[tokio::test]
async fn a_stateless_run_gets_a_temporary_thread() {
    let api = api().await;
    let answer = api.send("POST", "/runs", Some(run_body("hi"))).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let run = answer.json();
    let thread_id = run["thread_id"].as_str().unwrap();
    let thread = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(thread.json()["status"], "busy");
    let search = api.send("POST", "/threads/search", Some(json!({}))).await;
    assert_eq!(search.json(), json!([]));
}

#[tokio::test]
async fn a_missing_thread_is_404_unless_asked_to_create_it() {
    let api = api().await;
    let missing = api
        .send("POST", "/threads/t9/runs", Some(run_body("hi")))
        .await;
    assert_eq!(
        (missing.status, missing.json()),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "Thread or assistant not found.", "code": "not_found"})
        )
    );
    let mut body = run_body("hi");
    body["if_not_exists"] = json!("create");
    let created = api.send("POST", "/threads/t9/runs", Some(body)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    assert_eq!(
        api.send("GET", "/threads/t9", None).await.json()["status"],
        "busy"
    );
}

#[tokio::test]
async fn bad_run_requests_are_refused_before_anything_is_written() {
    let api = api().await;
    let thread_id = api.thread().await;
    let path = format!("/threads/{thread_id}/runs");
    let cases = [
        (
            json!({"assistant_id": GRAPH}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("input is required"),
        ),
        (
            json!({"assistant_id": GRAPH, "input": {"messages": [{"type": "ai", "content": "x"}]}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("messages[0]: only human/user messages can be sent, not `ai`"),
        ),
        (
            json!({"assistant_id": GRAPH, "input": {"messages": ["hi"], "files": {"/../x": "no"}}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            json!({"assistant_id": GRAPH, "input": {"messages": ["hi"]}, "multitask_strategy": "later"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            json!({"assistant_id": GRAPH, "input": {"messages": ["hi"]}, "context": {"a": 1},
                "config": {"configurable": {"b": 2}}}),
            StatusCode::BAD_REQUEST,
            Some("Cannot specify both configurable and context. Prefer setting context alone."),
        ),
        (
            json!({"input": {"messages": ["hi"]}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
        ),
        (
            json!({"assistant_id": "nobody", "input": {"messages": ["hi"]}}),
            StatusCode::NOT_FOUND,
            Some("Assistant 'nobody' not found."),
        ),
    ];
    for (body, status, detail) in cases {
        let answer = api.send("POST", &path, Some(body.clone())).await;
        assert_eq!(answer.status, status, "{body}: {}", answer.text);
        if let Some(detail) = detail {
            assert_eq!(answer.json()["detail"], detail, "{body}");
        }
    }
    let runs = api.send("GET", &path, None).await;
    assert_eq!(runs.json(), json!([]));
}

#[tokio::test]
async fn reject_refuses_a_busy_thread_and_enqueue_waits_behind() {
    let api = api().await;
    let thread_id = api.thread().await;
    let first = api.run_on(&thread_id, run_body("one")).await;
    let mut reject = run_body("two");
    reject["multitask_strategy"] = json!("reject");
    let refused = api
        .send("POST", &format!("/threads/{thread_id}/runs"), Some(reject))
        .await;
    assert_eq!(
        (refused.status, refused.json()),
        (
            StatusCode::CONFLICT,
            json!({"detail": "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.", "code": "conflict"})
        )
    );
    let queued = api.run_on(&thread_id, run_body("two")).await;
    assert_eq!(queued["status"], "pending");
    assert_eq!(api.state.runs.life.start_queued().await.unwrap(), 0);
    finish(
        api.store.as_ref(),
        &thread_id,
        &id(&first),
        RunStatus::Success,
    )
    .await;
    assert_eq!(api.state.runs.life.start_queued().await.unwrap(), 1);
    let started = api.store.get_run(&thread_id, &id(&queued)).await.unwrap();
    assert!(started.is_some(), "the queued run started");
}

/// Requests racing for one free thread, on threads of their own: one
/// starts, the others see it and are refused (they used to see the thread
/// free too, and each started a run on it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_runs_on_a_free_thread_start_one() {
    use tower::ServiceExt;
    const RACERS: usize = 8;
    let api = api().await;
    let thread_id = api.thread().await;
    let racers: Vec<_> = (0..RACERS)
        .map(|n| {
            let router = api.router.clone();
            let mut body = run_body(&format!("racer {n}"));
            body["multitask_strategy"] = json!("reject");
            let request = axum::http::Request::builder()
                .method("POST")
                .uri(format!("/threads/{thread_id}/runs"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(axum::body::Body::from(body.to_string()))
                .unwrap();
            tokio::spawn(async move { router.oneshot(request).await.unwrap().status() })
        })
        .collect();
    let mut statuses = Vec::new();
    for racer in racers {
        statuses.push(racer.await.unwrap());
    }
    let started = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((started, refused), (1, RACERS - 1), "{statuses:?}");
    let runs = api
        .send("GET", &format!("/threads/{thread_id}/runs"), None)
        .await;
    assert_eq!(
        runs.json().as_array().map(Vec::len),
        Some(1),
        "{}",
        runs.text
    );
}

#[tokio::test]
async fn interrupt_cancels_the_runs_ahead_and_keeps_them_listed() {
    let api = api().await;
    let thread_id = api.thread().await;
    let active = api.run_on(&thread_id, run_body("one")).await;
    let waiting = api.run_on(&thread_id, run_body("two")).await;
    let mut body = run_body("three");
    body["multitask_strategy"] = json!("interrupt");
    let newest = api.run_on(&thread_id, body).await;
    assert_eq!(newest["multitask_strategy"], "interrupt");
    assert!(
        api.store
            .cancel_requested(&thread_id, &id(&active))
            .await
            .unwrap()
    );
    assert_eq!(
        status_of(&api, &thread_id, &id(&waiting)).await,
        "interrupted"
    );
    let list = api
        .send("GET", &format!("/threads/{thread_id}/runs"), None)
        .await
        .json();
    let ids: Vec<String> = list.as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, [id(&newest), id(&waiting), id(&active)]);
}

#[tokio::test]
async fn rollback_drops_the_runs_ahead() {
    let api = api().await;
    let thread_id = api.thread().await;
    let active = api.run_on(&thread_id, run_body("one")).await;
    let waiting = api.run_on(&thread_id, run_body("two")).await;
    let mut body = run_body("three");
    body["multitask_strategy"] = json!("rollback");
    let newest = api.run_on(&thread_id, body).await;
    assert!(
        api.store
            .cancel_requested(&thread_id, &id(&active))
            .await
            .unwrap()
    );
    for gone in [&active, &waiting] {
        let answer = api
            .send(
                "GET",
                &format!("/threads/{thread_id}/runs/{}", id(gone)),
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
    }
    let list = api
        .send("GET", &format!("/threads/{thread_id}/runs"), None)
        .await
        .json();
    assert_eq!(
        list.as_array().unwrap().iter().map(id).collect::<Vec<_>>(),
        [id(&newest)]
    );
}

#[tokio::test]
async fn listing_filters_by_status_and_pages() {
    let api = api().await;
    let thread_id = api.thread().await;
    let done = api.run_on(&thread_id, run_body("one")).await;
    finish(
        api.store.as_ref(),
        &thread_id,
        &id(&done),
        RunStatus::Success,
    )
    .await;
    let pending = api.run_on(&thread_id, run_body("two")).await;
    let path = format!("/threads/{thread_id}/runs");
    let ids = |v: Value| v.as_array().unwrap().iter().map(id).collect::<Vec<_>>();
    assert_eq!(
        ids(api
            .send("GET", &format!("{path}?status=success"), None)
            .await
            .json()),
        [id(&done)]
    );
    assert_eq!(
        ids(api
            .send("GET", &format!("{path}?limit=1"), None)
            .await
            .json()),
        [id(&pending)]
    );
    assert_eq!(
        ids(api
            .send("GET", &format!("{path}?offset=1"), None)
            .await
            .json()),
        [id(&done)]
    );
    let unknown = api.send("GET", "/threads/nope/runs", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let bad = api.send("GET", &format!("{path}?limit=ten"), None).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad.json()["code"], "invalid_request", "{}", bad.text);
}

#[tokio::test]
async fn unknown_runs_are_404_on_every_run_route() {
    let api = api().await;
    let thread_id = api.thread().await;
    for (method, suffix) in [("GET", ""), ("DELETE", ""), ("POST", "/cancel")] {
        let answer = api
            .send(
                method,
                &format!("/threads/{thread_id}/runs/r9{suffix}"),
                None,
            )
            .await;
        assert_eq!(
            (answer.status, answer.json()),
            (
                StatusCode::NOT_FOUND,
                json!({"detail": "Run 'r9' not found.", "code": "not_found"})
            ),
            "{method} {suffix}"
        );
    }
}

#[tokio::test]
async fn a_running_run_must_be_cancelled_before_it_is_deleted() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("one")).await;
    let path = format!("/threads/{thread_id}/runs/{}", id(&run));
    finish(
        api.store.as_ref(),
        &thread_id,
        &id(&run),
        RunStatus::Running,
    )
    .await;
    let busy = api.send("DELETE", &path, None).await;
    assert_eq!(
        (busy.status, busy.json()),
        (
            StatusCode::CONFLICT,
            json!({"detail": "Run is still running; cancel it first.", "code": "conflict"})
        )
    );
    finish(
        api.store.as_ref(),
        &thread_id,
        &id(&run),
        RunStatus::Success,
    )
    .await;
    let deleted = api.send("DELETE", &path, None).await;
    assert_eq!(
        (deleted.status, deleted.text.as_str()),
        (StatusCode::NO_CONTENT, "")
    );
    assert_eq!(
        api.send("GET", &path, None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn cancelling_a_queued_run_ends_it_and_rollback_forgets_it() {
    let api = api().await;
    let thread_id = api.thread().await;
    let active = api.run_on(&thread_id, run_body("one")).await;
    let queued = api.run_on(&thread_id, run_body("two")).await;
    let path = format!("/threads/{thread_id}/runs/{}", id(&queued));
    let accepted = api.send("POST", &format!("{path}/cancel"), None).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    assert_eq!(
        status_of(&api, &thread_id, &id(&queued)).await,
        "interrupted"
    );
    let active_path = format!("/threads/{thread_id}/runs/{}", id(&active));
    let rolled = api
        .send(
            "POST",
            &format!("{active_path}/cancel?action=rollback"),
            None,
        )
        .await;
    assert_eq!(rolled.status, StatusCode::ACCEPTED);
    assert!(
        api.store
            .cancel_requested(&thread_id, &id(&active))
            .await
            .unwrap()
    );
    assert_eq!(
        api.send("GET", &active_path, None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_cancel_can_wait_for_the_run_to_stop() {
    let api = api().await;
    let thread_id = api.thread().await;
    api.run_on(&thread_id, run_body("one")).await;
    let queued = api.run_on(&thread_id, run_body("two")).await;
    let path = format!("/threads/{thread_id}/runs/{}", id(&queued));
    let waited = api
        .send("POST", &format!("{path}/cancel?wait=1"), None)
        .await;
    assert_eq!(waited.status, StatusCode::OK);
    assert_eq!(
        waited.header(header::LOCATION),
        Some(format!("{path}/join").as_str())
    );
    assert_eq!(waited.json()["messages"][0]["content"], "one");
}

#[tokio::test]
async fn bad_cancel_queries_are_422() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("one")).await;
    let path = format!("/threads/{thread_id}/runs/{}/cancel", id(&run));
    let action = api
        .send("POST", &format!("{path}?action=explode"), None)
        .await;
    assert_eq!(
        (action.status, action.json()["detail"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("action must be interrupt or rollback; got 'explode'")
        )
    );
    let wait = api.send("POST", &format!("{path}?wait=maybe"), None).await;
    assert_eq!(wait.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_resume_answers_the_interrupted_run() {
    let api = api().await;
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("one")).await;
    let resume = |resume: Value| json!({"assistant_id": GRAPH, "command": {"resume": resume}});
    let early = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/runs"),
            Some(resume(json!({"decisions": [{"type": "approve"}]}))),
        )
        .await;
    assert_eq!(early.status, StatusCode::CONFLICT, "{}", early.text);
    finish(
        api.store.as_ref(),
        &thread_id,
        &id(&run),
        RunStatus::AwaitingHuman,
    )
    .await;
    let wrong = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/runs"),
            Some(resume(json!({"decisions": []}))),
        )
        .await;
    assert_eq!(
        wrong.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        wrong.text
    );
    // strict_resume: an answer must name the pending interrupt (its run).
    let mut strict = resume(json!({"int-1": {"decisions": [{"type": "approve"}]}}));
    strict["strict_resume"] = json!(true);
    let unknown = api
        .send("POST", &format!("/threads/{thread_id}/runs"), Some(strict))
        .await;
    assert_eq!(unknown.status, StatusCode::CONFLICT, "{}", unknown.text);
    assert!(
        unknown.text.contains("UnknownInterruptError"),
        "{}",
        unknown.text
    );
    let mut not_bool = resume(json!({"decisions": []}));
    not_bool["strict_resume"] = json!("yes");
    let refused = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/runs"),
            Some(not_bool),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let resumed = api
        .send(
            "POST",
            &format!("/threads/{thread_id}/runs"),
            Some(resume(
                json!({"int-1": {"decisions": [{"type": "approve"}]}}),
            )),
        )
        .await;
    assert_eq!(resumed.status, StatusCode::OK, "{}", resumed.text);
    assert_eq!(id(&resumed.json()), id(&run));
    assert_eq!(resumed.json()["status"], "running");
}

#[tokio::test]
async fn a_resume_needs_a_thread_with_an_interrupted_run() {
    let api = api().await;
    let command = json!({"assistant_id": GRAPH, "command": {"resume": {"decisions": []}}});
    let stateless = api.send("POST", "/runs", Some(command.clone())).await;
    assert_eq!(
        (stateless.status, stateless.json()["detail"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("You must provide a thread_id when resuming.")
        )
    );
    let thread_id = api.thread().await;
    let path = format!("/threads/{thread_id}/runs");
    let idle = api.send("POST", &path, Some(command)).await;
    assert_eq!(
        (idle.status, idle.json()["detail"].clone()),
        (
            StatusCode::CONFLICT,
            json!("Thread has no interrupted run to resume.")
        )
    );
    let no_resume = json!({"assistant_id": GRAPH, "command": {}});
    let answer = api.send("POST", &path, Some(no_resume)).await;
    assert_eq!(
        (answer.status, answer.json()["detail"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("command must carry `resume` or `update`")
        )
    );
    // A jump has nothing to jump to: refused by name, not ignored.
    let goto =
        json!({"assistant_id": GRAPH, "command": {"goto": "model", "resume": {"decisions": []}}});
    let answer = api.send("POST", &path, Some(goto)).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        answer.json()["detail"]
            .as_str()
            .is_some_and(|d| d.contains("command.goto")),
        "{:?}",
        answer.json()
    );
    // A malformed resume is refused as such, before the thread is looked at.
    let bad_shape = json!({"assistant_id": GRAPH, "command": {"resume": "yes"}});
    let answer = api.send("POST", &path, Some(bad_shape)).await;
    assert_eq!(
        (answer.status, answer.json()["detail"].clone()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            json!("resume must be {\"decisions\": [...]}")
        )
    );
}

#[tokio::test]
async fn a_requests_timeout_bounds_its_run_and_a_bad_one_is_refused() {
    let api = api().await;
    let thread_id = api.thread().await;
    let path = format!("/threads/{thread_id}/runs");
    for bad in [json!(0), json!(-5), json!("60"), json!(1.5)] {
        let body =
            json!({"assistant_id": GRAPH, "input": {"messages": ["hi"]}, "timeout_secs": bad});
        let answer = api.send("POST", &path, Some(body)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            answer.text
        );
        assert!(answer.text.contains("timeout_secs"), "{}", answer.text);
    }
    let body = json!({"assistant_id": GRAPH, "input": {"messages": ["hi"]}, "timeout_secs": 30});
    let answer = api.send("POST", &path, Some(body)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let run = answer.json();
    let record = api
        .store
        .get_run(&thread_id, &id(&run))
        .await
        .unwrap()
        .expect("the run started");
    assert_eq!(record.timeout_secs, Some(30));
    assert_eq!(run["kwargs"]["timeout_secs"], 30);
}

#[tokio::test]
async fn a_delayed_run_waits_in_its_threads_queue_until_its_time() {
    use deepfleet_queue::Queue;

    let api = api().await;
    let thread_id = api.thread().await;
    let mut body = run_body("later");
    body["after_seconds"] = json!(600);
    let run = api.run_on(&thread_id, body).await;
    assert_eq!(run["status"], "pending");
    assert_eq!(run["kwargs"]["after_seconds"], 600);
    let thread = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(thread.json()["status"], "busy");
    // Not before its time: nothing published, the starter leaves it.
    assert_eq!(api.state.runs.life.start_queued().await.unwrap(), 0);
    assert_eq!(api.queue.depth().await.unwrap(), Some(0));
    // Its time comes (set, rather than waited for).
    let repo = deepfleet_scheduler::repo::queued::queued(api.store.as_ref());
    let run_id = run["run_id"].as_str().unwrap();
    let mut meta = repo.get(run_id).await.unwrap().unwrap();
    assert!(meta.not_before.is_some_and(|at| at > chrono::Utc::now()));
    meta.not_before = Some(chrono::Utc::now());
    repo.put(run_id, &meta).await.unwrap();
    assert_eq!(api.state.runs.life.start_queued().await.unwrap(), 1);
    assert_eq!(api.queue.depth().await.unwrap(), Some(1));
}
