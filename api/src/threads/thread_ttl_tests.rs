//! Router tests of a thread's `ttl`: set on `POST /threads`, replaced or
//! removed by `PATCH`, shown on the Thread, and the sweep that deletes
//! threads whose ttl ran out (`lifecycle::thread_ttl`).

use axum::http::StatusCode;
use chrono::{TimeDelta, Utc};
use deepfleet_proto::RunStatus;
use deepfleet_proto::keys::records::THREAD_TTL_DUE;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{TestApi, api, finish, run_body};
use deepfleet_scheduler::repo::score_at;
use deepfleet_scheduler::repo::threads::threads;

async fn create(api: &TestApi, body: Value) -> Value {
    let answer = api.send("POST", "/threads", Some(body)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer.json()
}

/// Moves `thread_id`'s last update `minutes` into the past, as if that
/// long had gone by since, and its ttl entry with it.
async fn age(api: &TestApi, thread_id: &str, minutes: i64) {
    let repo = threads(api.store.as_ref());
    let mut record = repo.get(thread_id).await.unwrap().unwrap();
    record.updated_at -= TimeDelta::minutes(minutes);
    repo.put(thread_id, &record).await.unwrap();
    api.state.runs.life.schedule_ttl(&record).await.unwrap();
}

async fn exists(api: &TestApi, thread_id: &str) -> bool {
    let answer = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await;
    match answer.status {
        StatusCode::OK => true,
        StatusCode::NOT_FOUND => false,
        other => panic!("{other}: {}", answer.text),
    }
}

async fn due_score(api: &TestApi, thread_id: &str) -> Option<i64> {
    api.store
        .index_score(THREAD_TTL_DUE, thread_id)
        .await
        .unwrap()
}

#[tokio::test]
async fn minutes_or_the_object_set_the_ttl_the_thread_shows() {
    let api = api().await;
    let shown = json!({"ttl": 30.0, "strategy": "delete"});
    let by_minutes = create(&api, json!({"thread_id": "t1", "ttl": 30})).await;
    assert_eq!(by_minutes["ttl"], shown);
    let object = json!({"thread_id": "t2", "ttl": {"ttl": 30, "strategy": "delete"}});
    assert_eq!(create(&api, object).await["ttl"], shown);
    assert_eq!(
        api.send("GET", "/threads/t1", None).await.json()["ttl"],
        shown
    );
    let at = by_minutes["updated_at"].as_str().unwrap();
    let updated_at = chrono::DateTime::parse_from_rfc3339(at).unwrap();
    let runs_out = updated_at.with_timezone(&Utc) + TimeDelta::minutes(30);
    assert_eq!(due_score(&api, "t1").await, Some(score_at(runs_out)));
    // None, or null: no ttl, nothing shown, nothing indexed.
    for body in [
        json!({"thread_id": "t3"}),
        json!({"thread_id": "t4", "ttl": null}),
    ] {
        let thread = create(&api, body.clone()).await;
        assert_eq!(thread.get("ttl"), None, "{body}");
        let id = thread["thread_id"].as_str().unwrap();
        assert_eq!(due_score(&api, id).await, None, "{body}");
    }
}

#[tokio::test]
async fn a_bad_ttl_is_422_naming_the_field() {
    let api = api().await;
    create(&api, json!({"thread_id": "t1"})).await;
    for ttl in [
        json!(0),
        json!(-5),
        json!("30"),
        json!([30]),
        json!({"ttl": 30, "strategy": "keep_latest"}),
        json!({"ttl": -1}),
        json!({"strategy": "delete"}),
    ] {
        for (method, uri) in [("POST", "/threads"), ("PATCH", "/threads/t1")] {
            let answer = api.send(method, uri, Some(json!({"ttl": ttl}))).await;
            assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{ttl}");
            let detail = answer.json()["detail"].as_str().unwrap().to_owned();
            assert!(detail.contains("ttl"), "{method} {ttl}: {detail}");
        }
    }
    assert_eq!(
        api.send("GET", "/threads/t1", None).await.json().get("ttl"),
        None
    );
}

#[tokio::test]
async fn the_sweep_deletes_idle_threads_whose_ttl_ran_out() {
    let api = api().await;
    for id in ["old", "fresh", "busy"] {
        create(&api, json!({"thread_id": id, "ttl": 5})).await;
    }
    create(&api, json!({"thread_id": "kept"})).await;
    let run = api.run_on("busy", run_body("hi")).await;
    for id in ["old", "busy", "kept"] {
        age(&api, id, 10).await;
    }
    let life = &api.state.runs.life;
    assert_eq!(life.sweep_thread_ttls().await.unwrap(), 1);
    assert!(!exists(&api, "old").await);
    assert_eq!(due_score(&api, "old").await, None);
    for id in ["fresh", "busy", "kept"] {
        assert!(exists(&api, id).await, "{id}");
    }
    // Once its run has ended the busy one goes too, at the next look.
    let run_id = run["run_id"].as_str().unwrap();
    finish(api.store.as_ref(), "busy", run_id, RunStatus::Success).await;
    age(&api, "busy", 0).await;
    assert_eq!(life.sweep_thread_ttls().await.unwrap(), 1);
    assert!(!exists(&api, "busy").await);
    assert!(exists(&api, "fresh").await);
}

#[tokio::test]
async fn a_touched_thread_is_moved_on_not_deleted() {
    let api = api().await;
    create(&api, json!({"thread_id": "t1", "ttl": 5})).await;
    // Its entry ran out, but the thread was updated since.
    let past = score_at(Utc::now() - TimeDelta::minutes(1));
    api.store
        .index_put(THREAD_TTL_DUE, "t1", past)
        .await
        .unwrap();
    assert_eq!(api.state.runs.life.sweep_thread_ttls().await.unwrap(), 0);
    assert!(exists(&api, "t1").await);
    let record = threads(api.store.as_ref())
        .get("t1")
        .await
        .unwrap()
        .unwrap();
    let runs_out = record.updated_at + TimeDelta::minutes(5);
    assert_eq!(due_score(&api, "t1").await, Some(score_at(runs_out)));
}

#[tokio::test]
async fn patching_the_ttl_moves_or_removes_its_deletion() {
    let api = api().await;
    create(
        &api,
        json!({"thread_id": "t1", "ttl": 5, "metadata": {"a": 1}}),
    )
    .await;
    let patched = api
        .send("PATCH", "/threads/t1", Some(json!({"ttl": {"ttl": 60}})))
        .await
        .json();
    assert_eq!(patched["ttl"], json!({"ttl": 60.0, "strategy": "delete"}));
    let record = threads(api.store.as_ref())
        .get("t1")
        .await
        .unwrap()
        .unwrap();
    let runs_out = record.updated_at + TimeDelta::minutes(60);
    assert_eq!(due_score(&api, "t1").await, Some(score_at(runs_out)));
    // A PATCH without `ttl` keeps it.
    let kept = api
        .send("PATCH", "/threads/t1", Some(json!({"metadata": {"b": 2}})))
        .await
        .json();
    assert_eq!(kept["ttl"], patched["ttl"]);
    let removed = api
        .send("PATCH", "/threads/t1", Some(json!({"ttl": null})))
        .await
        .json();
    assert_eq!(removed.get("ttl"), None);
    assert_eq!(removed["metadata"], json!({"a": 1, "b": 2}));
    assert_eq!(due_score(&api, "t1").await, None);
    age(&api, "t1", 120).await;
    assert_eq!(api.state.runs.life.sweep_thread_ttls().await.unwrap(), 0);
    assert!(exists(&api, "t1").await);
}

/// Two schedulers sweeping at once delete each thread once, and neither
/// fails on the other's work.
#[tokio::test]
async fn two_sweeps_at_once_delete_each_thread_once() {
    let api = api().await;
    for n in 0..8 {
        let id = format!("t{n}");
        create(&api, json!({"thread_id": id, "ttl": 1})).await;
        age(&api, &id, 2).await;
    }
    let (a, b) = (api.state.runs.life.clone(), api.state.runs.life.clone());
    let (a, b) = tokio::join!(a.sweep_thread_ttls(), b.sweep_thread_ttls());
    assert_eq!(a.unwrap() + b.unwrap(), 8);
    let left = api.store.index_count(THREAD_TTL_DUE).await.unwrap();
    assert_eq!(left, 0);
    let search = api.send("POST", "/threads/search", Some(json!({}))).await;
    assert_eq!(search.json(), json!([]));
}
