//! Router tests of `/runs/crons` and `/threads/{id}/runs/crons`, and of
//! the cron loop firing what they create.

use std::time::Duration;

use axum::http::StatusCode;
use chrono::{DateTime, DurationRound, Utc};
use deepfleet_proto::{Role, TenantId};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{GRAPH, TestApi, api, api_with, run_body};
use deepfleet_scheduler::crons::CronLoop;
use deepfleet_scheduler::keys::{ApiKeys, key_line};
use deepfleet_scheduler::repo::crons::crons;

fn cron_body(schedule: &str) -> Value {
    let mut body = run_body("report");
    body["schedule"] = json!(schedule);
    body
}

async fn create(api: &TestApi, uri: &str, body: Value) -> Value {
    let answer = api.send("POST", uri, Some(body)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer.json()
}

fn time(value: &Value) -> DateTime<Utc> {
    value.as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_stateless_cron_has_the_reference_shape() {
    let api = api().await;
    let mut body = cron_body("0 9 * * *");
    body["timezone"] = json!("Europe/Paris");
    body["metadata"] = json!({"team": "red"});
    body["on_run_completed"] = json!("keep");
    body["end_time"] = json!("2099-01-01T00:00:00");
    let cron = create(&api, "/runs/crons", body).await;
    let id = cron["cron_id"].as_str().unwrap().to_owned();
    let at = cron["created_at"].clone();
    let next = cron["next_run_date"].clone();
    assert_eq!(
        cron,
        json!({
            "cron_id": id, "assistant_id": GRAPH, "thread_id": null,
            "on_run_completed": "keep", "end_time": "2099-01-01T00:00:00Z",
            "schedule": "0 9 * * *", "timezone": "Europe/Paris",
            "created_at": at, "updated_at": at,
            "payload": {"assistant_id": GRAPH, "metadata": {"team": "red"},
                "input": {"messages": [{"role": "user", "content": "report"}]}},
            "user_id": null, "next_run_date": next, "metadata": {"team": "red"},
            "enabled": true
        })
    );
    // Nine in Paris is seven or eight in UTC, on the hour.
    let next = time(&next);
    assert!(next > Utc::now());
    assert_eq!(next.format("%M:%S").to_string(), "00:00");
    assert!(["07", "08"].contains(&next.format("%H").to_string().as_str()));
    let got = api.send("GET", &format!("/runs/crons/{id}"), None).await;
    assert_eq!((got.status, got.json()), (StatusCode::OK, cron));
}

#[tokio::test]
async fn a_thread_cron_needs_the_thread() {
    let api = api().await;
    let thread_id = api.thread().await;
    let cron = create(
        &api,
        &format!("/threads/{thread_id}/runs/crons"),
        cron_body("*/5 * * * *"),
    )
    .await;
    assert_eq!(cron["thread_id"], json!(thread_id));
    assert_eq!(cron["on_run_completed"], Value::Null);
    let missing = api
        .send(
            "POST",
            "/threads/nobody/runs/crons",
            Some(cron_body("*/5 * * * *")),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text);
}

#[tokio::test]
async fn bad_schedules_zones_and_payloads_are_422_and_write_nothing() {
    let api = api().await;
    let mut bad_zone = cron_body("0 9 * * *");
    bad_zone["timezone"] = json!("Mars/Olympus");
    let mut bad_end = cron_body("0 9 * * *");
    bad_end["end_time"] = json!("tomorrow");
    let mut bad_keep = cron_body("0 9 * * *");
    bad_keep["on_run_completed"] = json!("archive");
    let mut no_input = cron_body("0 9 * * *");
    no_input["input"] = Value::Null;
    for body in [
        cron_body("every morning"),
        cron_body("0 25 * * *"),
        bad_zone,
        bad_end,
        bad_keep,
        no_input,
    ] {
        let answer = api.send("POST", "/runs/crons", Some(body.clone())).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            answer.text
        );
    }
    let mut unknown = cron_body("0 9 * * *");
    unknown["assistant_id"] = json!("nobody");
    let answer = api.send("POST", "/runs/crons", Some(unknown)).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.text);
    let count = api.send("POST", "/runs/crons/count", Some(json!({}))).await;
    assert_eq!(count.json(), json!(0));
}

#[tokio::test]
async fn an_update_changes_the_schedule_and_a_disabled_cron_has_no_next_run() {
    let api = api().await;
    let cron = create(&api, "/runs/crons", cron_body("0 9 * * *")).await;
    let uri = format!("/runs/crons/{}", cron["cron_id"].as_str().unwrap());
    let changed = api
        .send(
            "PATCH",
            &uri,
            Some(json!({"schedule": "30 * * * *", "input": {"messages": [
                {"role": "user", "content": "changed"}]}, "metadata": {"v": 2}})),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
    let changed = changed.json();
    assert_eq!(changed["schedule"], json!("30 * * * *"));
    assert_eq!(changed["metadata"], json!({"v": 2}));
    assert_eq!(
        changed["payload"]["input"]["messages"][0]["content"],
        json!("changed")
    );
    assert_eq!(
        time(&changed["next_run_date"]).format("%M:%S").to_string(),
        "30:00"
    );
    assert!(changed["updated_at"] != cron["updated_at"]);
    let disabled = api
        .send("PATCH", &uri, Some(json!({"enabled": false})))
        .await
        .json();
    assert_eq!(
        (
            disabled["enabled"].clone(),
            disabled["next_run_date"].clone()
        ),
        (json!(false), Value::Null)
    );
    let enabled = api
        .send(
            "PATCH",
            &uri,
            Some(json!({"enabled": true, "end_time": null})),
        )
        .await
        .json();
    assert!(enabled["next_run_date"].is_string(), "{enabled}");
    let bad = api
        .send("PATCH", &uri, Some(json!({"timezone": "Nowhere/Else"})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
    let past = api
        .send(
            "PATCH",
            &uri,
            Some(json!({"end_time": "2001-01-01T00:00:00+00:00"})),
        )
        .await
        .json();
    assert_eq!(past["next_run_date"], Value::Null, "an ended cron");
}

#[tokio::test]
async fn a_deleted_cron_is_gone() {
    let api = api().await;
    let cron = create(&api, "/runs/crons", cron_body("0 9 * * *")).await;
    let uri = format!("/runs/crons/{}", cron["cron_id"].as_str().unwrap());
    let deleted = api.send("DELETE", &uri, None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    for method in ["GET", "DELETE"] {
        assert_eq!(
            api.send(method, &uri, None).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let patched = api.send("PATCH", &uri, Some(json!({}))).await;
    assert_eq!(patched.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn searches_filter_sort_page_and_select_counts_filter() {
    let api = api().await;
    let thread_id = api.thread().await;
    let mut ids = Vec::new();
    // Each cron's next run, to know which comes first at whatever time of
    // day the test runs (01:30 puts the 01:00 one last).
    let mut next = Vec::new();
    for (schedule, team) in [
        ("0 1 * * *", "red"),
        ("0 2 * * *", "blue"),
        ("0 3 * * *", "red"),
    ] {
        let mut body = cron_body(schedule);
        body["metadata"] = json!({"team": team});
        let cron = create(&api, &format!("/threads/{thread_id}/runs/crons"), body).await;
        ids.push(cron["cron_id"].as_str().unwrap().to_owned());
        next.push((cron["next_run_date"].as_str().unwrap().to_owned(), schedule));
    }
    let stateless = create(&api, "/runs/crons", cron_body("0 4 * * *")).await;
    next.push((
        stateless["next_run_date"].as_str().unwrap().to_owned(),
        "0 4 * * *",
    ));
    let mut all_ids = ids.clone();
    all_ids.push(stateless["cron_id"].as_str().unwrap().to_owned());
    let soonest = (0..next.len())
        .min_by_key(|&i| chrono::DateTime::parse_from_rfc3339(&next[i].0).unwrap())
        .unwrap();
    let search = |body: Value| {
        let api = &api;
        async move {
            let answer = api.send("POST", "/runs/crons/search", Some(body)).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
            answer.json()
        }
    };
    let crons_ids = |found: &Value| -> Vec<String> {
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cron_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = search(json!({})).await;
    assert_eq!(all.as_array().unwrap().len(), 4);
    let red = search(json!({"metadata": {"team": "red"}, "sort_order": "asc"})).await;
    assert_eq!(crons_ids(&red), [ids[0].clone(), ids[2].clone()]);
    let on_thread = search(json!({"thread_id": thread_id, "sort_by": "cron_id",
        "sort_order": "desc", "limit": 2, "offset": 1}))
    .await;
    assert_eq!(crons_ids(&on_thread), [ids[1].clone(), ids[0].clone()]);
    let selected = search(json!({"select": ["cron_id", "schedule"], "limit": 1,
        "sort_by": "next_run_date", "sort_order": "asc"}))
    .await;
    assert_eq!(
        selected,
        json!([{"cron_id": all_ids[soonest], "schedule": next[soonest].1}])
    );
    let bad = api
        .send(
            "POST",
            "/runs/crons/search",
            Some(json!({"sort_by": "schedule"})),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.text.contains("sort_by"), "{}", bad.text);
    let count = |body: Value| {
        let api = &api;
        async move {
            api.send("POST", "/runs/crons/count", Some(body))
                .await
                .json()
        }
    };
    assert_eq!(count(json!({})).await, json!(4));
    assert_eq!(count(json!({"thread_id": thread_id})).await, json!(3));
    assert_eq!(
        count(json!({"assistant_id": GRAPH, "metadata": {"team": "blue"}})).await,
        json!(1)
    );
}

#[tokio::test]
async fn another_tenants_cron_is_not_found() {
    let (a, b) = ("key-a", "key-b");
    let lines = [
        key_line(a, &TenantId::new("a").unwrap(), Role::Submit),
        key_line(b, &TenantId::new("b").unwrap(), Role::Submit),
    ];
    let keys = ApiKeys::parse(lines.iter().map(|l| ("test", l.as_str()))).unwrap();
    let api = api_with(keys, None).await;
    let created = api
        .send_as(Some(a), "POST", "/runs/crons", Some(cron_body("0 9 * * *")))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let uri = format!(
        "/runs/crons/{}",
        created.json()["cron_id"].as_str().unwrap()
    );
    for (method, body) in [
        ("GET", None),
        ("PATCH", Some(json!({"enabled": false}))),
        ("DELETE", None),
    ] {
        let answer = api.send_as(Some(b), method, &uri, body).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{method}");
    }
    let search = api
        .send_as(Some(b), "POST", "/runs/crons/search", Some(json!({})))
        .await;
    assert_eq!(search.json(), json!([]));
    let count = api
        .send_as(Some(b), "POST", "/runs/crons/count", Some(json!({})))
        .await;
    assert_eq!(count.json(), json!(0));
    let mine = api.send_as(Some(a), "GET", &uri, None).await;
    assert_eq!(mine.json()["enabled"], json!(true), "B changed nothing");
}

/// Two loops over one store (two schedulers): each due time of an
/// every-second cron creates one run, within a second of that time.
#[tokio::test]
async fn two_loops_fire_each_due_time_once() {
    let api = api().await;
    let thread_id = api.thread().await;
    let cron = create(
        &api,
        &format!("/threads/{thread_id}/runs/crons"),
        cron_body("* * * * * *"),
    )
    .await;
    let poll = Duration::from_millis(200);
    let loops = [
        tokio::spawn(CronLoop::new(api.state.runs.clone(), poll).run(std::future::pending())),
        tokio::spawn(CronLoop::new(api.state.runs.clone(), poll).run(std::future::pending())),
    ];
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let uri = format!("/runs/crons/{}", cron["cron_id"].as_str().unwrap());
    api.send("DELETE", &uri, None).await;
    for handle in loops {
        handle.abort();
    }
    // Runs a loop claimed last are created beside it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let runs = api
        .send("GET", &format!("/threads/{thread_id}/runs?limit=100"), None)
        .await
        .json();
    let mut due: Vec<DateTime<Utc>> = Vec::new();
    for run in runs.as_array().unwrap() {
        let at = time(&run["metadata"]["cron_fire_at"]);
        let late = time(&run["created_at"]) - at;
        assert!(late < chrono::TimeDelta::seconds(1), "{late} late");
        assert_eq!(run["metadata"]["cron_id"], cron["cron_id"]);
        due.push(at);
    }
    due.sort();
    assert!(due.len() >= 3, "{due:?}");
    for pair in due.windows(2) {
        assert_eq!(pair[1] - pair[0], chrono::TimeDelta::seconds(1), "{due:?}");
    }
    assert!(
        crons(api.store.as_ref())
            .get("nobody")
            .await
            .unwrap()
            .is_none()
    );
}

/// When `cron_id` fires next, once no fire holds it (a lease is not a
/// whole second).
async fn settled_next(api: &TestApi, cron_id: &str) -> Option<DateTime<Utc>> {
    for _ in 0..100 {
        let next = deepfleet_scheduler::repo::crons::next_run(api.store.as_ref(), cron_id)
            .await
            .unwrap();
        if next.is_none_or(|at| at.timestamp_subsec_micros() == 0) {
            return next;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("cron {cron_id} stayed leased");
}

/// A whole second `ago` before now.
fn whole_second_ago(ago: chrono::TimeDelta) -> DateTime<Utc> {
    (Utc::now() - ago)
        .duration_trunc(chrono::TimeDelta::seconds(1))
        .unwrap()
}

/// A scheduler back after an outage fires a cron's missed times once,
/// then keeps to the schedule from the present.
#[tokio::test]
async fn missed_fires_fire_once_late() {
    let api = api().await;
    let thread_id = api.thread().await;
    let cron = create(
        &api,
        &format!("/threads/{thread_id}/runs/crons"),
        // Hourly: a minutely schedule's next time could pass while a
        // loaded machine runs the test, and fire again.
        cron_body("0 0 * * * *"),
    )
    .await;
    let cron_id = cron["cron_id"].as_str().unwrap();
    let missed = whole_second_ago(chrono::TimeDelta::minutes(10));
    deepfleet_scheduler::repo::crons::set_next_run(api.store.as_ref(), cron_id, Some(missed))
        .await
        .unwrap();
    let scheduler = CronLoop::new(api.state.runs.clone(), Duration::from_secs(1));
    let before = Utc::now();
    scheduler.tick().await.unwrap();
    let next = settled_next(&api, cron_id).await.unwrap();
    assert!(next > before && next - before <= chrono::TimeDelta::hours(1));
    assert_eq!(
        scheduler.tick().await.unwrap(),
        Some(next),
        "nothing more due"
    );
    let runs = api
        .send("GET", &format!("/threads/{thread_id}/runs"), None)
        .await
        .json();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(time(&runs[0]["metadata"]["cron_fire_at"]), missed);
}

/// A lease that comes due is a scheduler that died making the run: the
/// cron is rescheduled, not fired again.
#[tokio::test]
async fn an_expired_lease_reschedules_without_firing() {
    let api = api().await;
    let thread_id = api.thread().await;
    let cron = create(
        &api,
        &format!("/threads/{thread_id}/runs/crons"),
        cron_body("0 * * * * *"),
    )
    .await;
    let cron_id = cron["cron_id"].as_str().unwrap();
    let lease =
        whole_second_ago(chrono::TimeDelta::seconds(5)) + chrono::TimeDelta::microseconds(1);
    deepfleet_scheduler::repo::crons::set_next_run(api.store.as_ref(), cron_id, Some(lease))
        .await
        .unwrap();
    CronLoop::new(api.state.runs.clone(), Duration::from_secs(1))
        .tick()
        .await
        .unwrap();
    let next = settled_next(&api, cron_id).await.unwrap();
    assert!(next > Utc::now() && next - Utc::now() <= chrono::TimeDelta::minutes(1));
    let runs = api
        .send("GET", &format!("/threads/{thread_id}/runs"), None)
        .await
        .json();
    assert_eq!(runs, json!([]));
}

/// A thread's cron goes with its thread: the fire after the thread's
/// deletion deletes the cron instead of creating a run.
#[tokio::test]
async fn a_deleted_threads_cron_goes_at_its_next_fire() {
    let api = api().await;
    let thread_id = api.thread().await;
    let cron = create(
        &api,
        &format!("/threads/{thread_id}/runs/crons"),
        cron_body("0 * * * * *"),
    )
    .await;
    let cron_id = cron["cron_id"].as_str().unwrap();
    let deleted = api
        .send("DELETE", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    let missed = whole_second_ago(chrono::TimeDelta::seconds(1));
    deepfleet_scheduler::repo::crons::set_next_run(api.store.as_ref(), cron_id, Some(missed))
        .await
        .unwrap();
    CronLoop::new(api.state.runs.clone(), Duration::from_secs(1))
        .tick()
        .await
        .unwrap();
    assert_eq!(settled_next(&api, cron_id).await, None);
    let gone = api
        .send("GET", &format!("/runs/crons/{cron_id}"), None)
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}
