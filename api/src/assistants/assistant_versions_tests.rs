//! Router tests of assistant versions: `PATCH /assistants/{id}`,
//! `POST /assistants/{id}/versions` and `POST /assistants/{id}/latest`.

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{GRAPH, KEY_A, KEY_B, TestApi, api, two_tenants};
use deepfleet_proto::api::PageLimit;
use deepfleet_scheduler::runs::assistants::system_assistant_id;

async fn create(api: &TestApi, id: &str) -> Value {
    let body = json!({"graph_id": GRAPH, "assistant_id": id, "config": {"tags": ["a"]},
        "metadata": {"team": "red"}, "name": "first"});
    let created = api.send("POST", "/assistants", Some(body)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    created.json()
}

async fn patch(api: &TestApi, id: &str, body: Value) -> Value {
    let answer = api
        .send("PATCH", &format!("/assistants/{id}"), Some(body))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    answer.json()
}

fn versions(answer: &Value) -> Vec<u64> {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["version"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn each_change_is_a_new_version_listed_newest_first() {
    let api = api().await;
    let first = create(&api, "a1").await;
    let second = patch(
        &api,
        "a1",
        json!({"name": "second", "metadata": {"tier": 2}}),
    )
    .await;
    assert_eq!(second["version"], 2);
    assert_eq!(second["name"], "second");
    assert_eq!(second["metadata"], json!({"team": "red", "tier": 2}));
    assert_eq!(second["config"], first["config"]);
    assert_eq!(second["created_at"], first["created_at"]);
    let third = patch(&api, "a1", json!({"config": {"tags": ["b"]}})).await;
    assert_eq!(
        (third["version"].clone(), third["name"].clone()),
        (json!(3), json!("second"))
    );
    assert_eq!(api.send("GET", "/assistants/a1", None).await.json(), third);

    let list = |body: Value| api.send("POST", "/assistants/a1/versions", Some(body));
    let all = list(json!({})).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.text);
    assert_eq!(versions(&all.json()), [3, 2, 1]);
    assert_eq!(all.json()[2], first);
    assert_eq!(
        versions(&list(json!({"limit": 1, "offset": 1})).await.json()),
        [2]
    );
    assert_eq!(
        versions(&list(json!({"metadata": {"tier": 2}})).await.json()),
        [3, 2]
    );
    let too_many = list(json!({"limit": PageLimit::MAX + 1})).await;
    assert_eq!(too_many.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(too_many.text.contains("limit"), "{}", too_many.text);
    let bad = api
        .send("PATCH", "/assistants/a1", Some(json!({"graph_id": "nope"})))
        .await;
    assert_eq!(bad.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn setting_the_latest_shows_that_version_and_later_changes_still_count_up() {
    let api = api().await;
    let first = create(&api, "a1").await;
    patch(&api, "a1", json!({"name": "second"})).await;
    let set = api
        .send("POST", "/assistants/a1/latest", Some(json!({"version": 1})))
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    assert_eq!(set.json()["name"], first["name"]);
    assert_eq!(set.json()["version"], 1);
    assert_eq!(
        api.send("GET", "/assistants/a1", None).await.json(),
        set.json()
    );
    // The next change starts from the shown version and takes number 3.
    let third = patch(&api, "a1", json!({"description": "d"})).await;
    assert_eq!(
        (third["version"].clone(), third["name"].clone()),
        (json!(3), json!("first"))
    );
    let unknown = api
        .send("POST", "/assistants/a1/latest", Some(json!({"version": 9})))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let bad = api
        .send("POST", "/assistants/a1/latest", Some(json!({})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_system_assistant_lists_one_version_and_cannot_change() {
    let api = api().await;
    let id = system_assistant_id(GRAPH);
    let listed = api
        .send(
            "POST",
            &format!("/assistants/{id}/versions"),
            Some(json!({})),
        )
        .await;
    assert_eq!(versions(&listed.json()), [1]);
    let changed = api
        .send(
            "PATCH",
            &format!("/assistants/{GRAPH}"),
            Some(json!({"name": "x"})),
        )
        .await;
    assert_eq!(changed.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn deleting_an_assistant_deletes_its_versions() {
    let api = api().await;
    create(&api, "a1").await;
    patch(&api, "a1", json!({"name": "second"})).await;
    api.send("DELETE", "/assistants/a1", None).await;
    create(&api, "a1").await;
    let listed = api
        .send("POST", "/assistants/a1/versions", Some(json!({})))
        .await;
    assert_eq!(versions(&listed.json()), [1]);
}

#[tokio::test]
async fn another_tenants_assistant_has_no_versions_to_see_or_make() {
    let api = two_tenants().await;
    let body = json!({"graph_id": GRAPH, "assistant_id": "a1"});
    let created = api
        .send_as(Some(KEY_A), "POST", "/assistants", Some(body))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    for (method, uri, body) in [
        ("PATCH", "/assistants/a1", json!({"name": "x"})),
        ("POST", "/assistants/a1/versions", json!({})),
        ("POST", "/assistants/a1/latest", json!({"version": 1})),
    ] {
        let answer = api.send_as(Some(KEY_B), method, uri, Some(body)).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{method} {uri}");
    }
    let own = api
        .send_as(Some(KEY_A), "GET", "/assistants/a1", None)
        .await;
    assert_eq!(own.json()["version"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn patches_at_once_each_get_a_version_of_their_own() {
    let api = api().await;
    create(&api, "busy").await;
    let patches = (0..8).map(|n| {
        let api = &api;
        async move { patch(api, "busy", json!({"metadata": {"n": n}})).await["version"].clone() }
    });
    let mut made: Vec<u64> = futures::future::join_all(patches)
        .await
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    made.sort_unstable();
    made.dedup();
    assert_eq!(made.len(), 8, "two patches took one version: {made:?}");
    let listed = api
        .send(
            "POST",
            "/assistants/busy/versions",
            Some(json!({"limit": 100})),
        )
        .await;
    assert_eq!(versions(&listed.json()).len(), 9, "{}", listed.text);
}

/// The runtime context a run of assistant `id` starts with, opened.
async fn run_context(api: &TestApi, id: &str) -> Value {
    let body = json!({"assistant_id": id, "input": {"messages": ["hi"]}});
    let run = api.send("POST", "/runs", Some(body)).await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.text);
    api.run_context(&run).await
}

#[tokio::test]
async fn every_version_seals_the_secrets_of_its_config() {
    use deepfleet_proto::AgentSpec;

    let api = api().await;
    // Made before its graph named the key a secret: kept as given...
    let body = json!({"graph_id": GRAPH, "assistant_id": "sec",
        "config": {"configurable": {"api_token": "early"}}});
    assert_eq!(
        api.send("POST", "/assistants", Some(body)).await.status,
        StatusCode::OK
    );
    let spec = AgentSpec::from_yaml(&format!(
        "name: {GRAPH}\nmodel: openai:x\ncontext_secrets: [api_token]\n"
    ))
    .unwrap();
    api.state.runs.life.intake().register(&spec).await.unwrap();
    // ...and sealed by the next change, whatever it changes.
    let redacted = json!({"configurable": {"api_token": "[redacted]"}});
    let second = patch(&api, "sec", json!({"metadata": {"n": 2}})).await;
    assert_eq!(second["config"], redacted);
    let stored = api.store.get_record("assistants", "sec").await.unwrap();
    assert!(!stored.unwrap().to_string().contains("early"));
    assert_eq!(
        run_context(&api, "sec").await,
        json!({"api_token": "early"})
    );

    let third = patch(
        &api,
        "sec",
        json!({"config": {"configurable": {"api_token": "later"}}}),
    )
    .await;
    assert_eq!(third["config"], redacted);
    let listed = api
        .send(
            "POST",
            "/assistants/sec/versions",
            Some(json!({"limit": 2})),
        )
        .await;
    assert_eq!(versions(&listed.json()), [3, 2]);
    assert!(!listed.text.contains("early") && !listed.text.contains("later"));
    assert_eq!(
        run_context(&api, "sec").await,
        json!({"api_token": "later"})
    );

    // An earlier version runs with its own secret again.
    let shown = api
        .send(
            "POST",
            "/assistants/sec/latest",
            Some(json!({"version": 2})),
        )
        .await;
    assert_eq!(shown.json()["config"], redacted, "{}", shown.text);
    assert_eq!(
        run_context(&api, "sec").await,
        json!({"api_token": "early"})
    );
}
