//! Router tests of `/assistants`.

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::test_support::{GRAPH, api};
use deepfleet_scheduler::runs::assistants::system_assistant_id;

#[tokio::test]
async fn a_created_assistant_reads_back_and_is_found_by_search() {
    let api = api().await;
    let body = json!({"graph_id": GRAPH, "assistant_id": "a1", "config": {"tags": ["x"]},
        "context": {"user": "u"}, "metadata": {"team": "red"}, "name": "Helper"});
    let created = api.send("POST", "/assistants", Some(body)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let assistant = created.json();
    let now = assistant["created_at"].clone();
    assert_eq!(
        assistant,
        json!({"assistant_id": "a1", "graph_id": GRAPH, "config": {"tags": ["x"]},
            "context": {"user": "u"}, "metadata": {"team": "red"}, "name": "Helper",
            "description": null, "version": 1, "created_at": now, "updated_at": now})
    );
    assert_eq!(
        api.send("GET", "/assistants/a1", None).await.json(),
        assistant
    );
    let found = api
        .send(
            "POST",
            "/assistants/search",
            Some(json!({"metadata": {"team": "red"}})),
        )
        .await;
    assert_eq!(found.json(), json!([assistant]));
    let all = api
        .send("POST", "/assistants/search", Some(json!({})))
        .await;
    assert_eq!(all.json().as_array().map(Vec::len), Some(2));
    let limited = api
        .send(
            "POST",
            "/assistants/search",
            Some(json!({"limit": 1, "offset": 1})),
        )
        .await;
    assert_eq!(limited.json()[0]["assistant_id"], "a1");
}

#[tokio::test]
async fn the_system_assistant_answers_by_graph_name_and_by_id() {
    let api = api().await;
    let by_name = api.send("GET", &format!("/assistants/{GRAPH}"), None).await;
    let id = system_assistant_id(GRAPH);
    let started = by_name.json()["created_at"].clone();
    assert_eq!(
        by_name.json(),
        json!({"assistant_id": id, "graph_id": GRAPH, "config": {}, "context": {},
            "metadata": {"created_by": "system"}, "name": GRAPH, "description": null,
            "version": 1, "created_at": started, "updated_at": started})
    );
    let by_id = api.send("GET", &format!("/assistants/{id}"), None).await;
    assert_eq!(by_id.json(), by_name.json());
    let search = api
        .send(
            "POST",
            "/assistants/search",
            Some(json!({"graph_id": "other"})),
        )
        .await;
    assert_eq!(search.json(), json!([]));
}

#[tokio::test]
async fn duplicates_conflict_unless_asked_to_do_nothing() {
    let api = api().await;
    let body = json!({"graph_id": GRAPH, "assistant_id": "a1", "name": "first"});
    api.send("POST", "/assistants", Some(body)).await;
    let again = json!({"graph_id": GRAPH, "assistant_id": "a1", "name": "second"});
    let conflict = api.send("POST", "/assistants", Some(again.clone())).await;
    assert_eq!(
        (conflict.status, conflict.json()),
        (
            StatusCode::CONFLICT,
            json!({"detail": "Assistant 'a1' already exists.", "code": "conflict"})
        )
    );
    let mut quiet = again;
    quiet["if_exists"] = json!("do_nothing");
    let existing = api.send("POST", "/assistants", Some(quiet)).await;
    assert_eq!(
        (existing.status, existing.json()["name"].clone()),
        (StatusCode::OK, json!("first"))
    );
}

#[tokio::test]
async fn unknown_graphs_ids_and_bad_bodies_are_refused() {
    let api = api().await;
    let unknown_graph = api
        .send("POST", "/assistants", Some(json!({"graph_id": "nope"})))
        .await;
    assert_eq!(unknown_graph.status, StatusCode::NOT_FOUND);
    assert_eq!(
        unknown_graph.json()["detail"],
        format!("Graph 'nope' not found. Expected one of: [\"{GRAPH}\"]")
    );
    let missing = api.send("GET", "/assistants/nope", None).await;
    assert_eq!(
        (missing.status, missing.json()),
        (
            StatusCode::NOT_FOUND,
            json!({"detail": "Assistant 'nope' not found.", "code": "not_found"})
        )
    );
    let no_graph = api
        .send("POST", "/assistants", Some(json!({"name": "x"})))
        .await;
    assert_eq!(no_graph.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(no_graph.json()["code"], "invalid_request");
    let bad_search = api
        .send("POST", "/assistants/search", Some(json!({"limit": "ten"})))
        .await;
    assert_eq!(bad_search.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn bad_json_is_400_and_a_missing_content_type_415() {
    let api = api().await;
    let request = axum::http::Request::builder()
        .method("POST")
        .uri("/assistants")
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{not json"))
        .unwrap();
    let syntax = api.raw(request).await;
    assert_eq!(syntax.status, StatusCode::BAD_REQUEST);
    assert_eq!(syntax.json()["code"], "invalid_request");
    let request = axum::http::Request::builder()
        .method("POST")
        .uri("/assistants")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    assert_eq!(
        api.raw(request).await.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
}

#[tokio::test]
async fn deleting_answers_an_empty_object_then_404() {
    let api = api().await;
    api.send(
        "POST",
        "/assistants",
        Some(json!({"graph_id": GRAPH, "assistant_id": "a1"})),
    )
    .await;
    let deleted = api.send("DELETE", "/assistants/a1", None).await;
    assert_eq!(
        (deleted.status, deleted.json()),
        (StatusCode::OK, json!({}))
    );
    let again = api.send("DELETE", "/assistants/a1", None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(
        api.send("GET", "/assistants/a1", None).await.json()["code"],
        Value::from("not_found")
    );
}

#[tokio::test]
async fn an_assistants_secrets_are_sealed_shown_redacted_and_reach_its_runs() {
    use deepfleet_proto::AgentSpec;

    let api = api().await;
    let spec = AgentSpec::from_yaml(&format!(
        "name: {GRAPH}\nmodel: openai:x\ncontext_secrets: [api_key]\n"
    ))
    .unwrap();
    api.state.runs.life.intake().register(&spec).await.unwrap();
    let body = json!({"graph_id": GRAPH, "assistant_id": "sec",
        "context": {"api_key": "sk-very-secret", "user": "u"}});
    let created = api.send("POST", "/assistants", Some(body)).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let shown = json!({"api_key": "[redacted]", "user": "u"});
    assert_eq!(created.json()["context"], shown);
    assert_eq!(
        api.send("GET", "/assistants/sec", None).await.json()["context"],
        shown
    );
    let stored = api.store.get_record("assistants", "sec").await.unwrap();
    assert!(
        !stored.unwrap().to_string().contains("sk-very-secret"),
        "the secret is stored in clear"
    );

    let run = api
        .send(
            "POST",
            "/runs",
            Some(json!({"assistant_id": "sec", "input": {"messages": [{"role": "user", "content": "hi"}]}})),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.text);
    let opened = api.run_context(&run).await;
    assert_eq!(opened, json!({"api_key": "sk-very-secret", "user": "u"}));
}

#[tokio::test]
async fn an_assistant_without_secrets_keeps_its_context_as_given() {
    let api = api().await;
    let body = json!({"graph_id": GRAPH, "assistant_id": "plain", "context": {"api_key": "k"}});
    let created = api.send("POST", "/assistants", Some(body)).await;
    assert_eq!(created.json()["context"], json!({"api_key": "k"}));
    let stored = api.store.get_record("assistants", "plain").await.unwrap();
    assert_eq!(stored.unwrap().get("sealed_context"), None);
}

/// An admin and a read key of one tenant.
const ADMIN_KEY: &str = "admin-key";
const READ_KEY: &str = "read-key";

/// The API with [`ADMIN_KEY`] and [`READ_KEY`], serving [`GRAPH`] with
/// `api_token` among its `context_secrets`.
async fn api_with_secret_token() -> crate::test_support::TestApi {
    use crate::test_support::api_with;
    use deepfleet_proto::{AgentSpec, Role, TenantId};
    use deepfleet_scheduler::keys::{ApiKeys, key_line};

    let tenant = TenantId::new("t").unwrap();
    let lines = [
        key_line(ADMIN_KEY, &tenant, Role::Admin),
        key_line(READ_KEY, &tenant, Role::Read),
    ];
    let keys = ApiKeys::parse(lines.iter().map(|l| ("test", l.as_str()))).unwrap();
    let api = api_with(keys, None).await;
    let spec = AgentSpec::from_yaml(&format!(
        "name: {GRAPH}\nmodel: openai:x\ncontext_secrets: [api_token]\n"
    ))
    .unwrap();
    api.state.runs.life.intake().register(&spec).await.unwrap();
    api
}

#[tokio::test]
async fn secrets_in_an_assistants_configurable_are_sealed_answered_redacted_and_reach_its_runs() {
    use deepfleet_proto::keys::records::assistant_versions;

    let api = api_with_secret_token().await;
    let config = json!({"tags": ["x"], "configurable": {"api_token": "s3cret", "model": "m"}});
    let body = json!({"graph_id": GRAPH, "assistant_id": "sec", "config": config});
    let created = api
        .send_as(Some(ADMIN_KEY), "POST", "/assistants", Some(body))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let shown = json!({"tags": ["x"], "configurable": {"api_token": "[redacted]", "model": "m"}});
    assert_eq!(created.json()["config"], shown);
    assert!(!created.text.contains("s3cret"), "{}", created.text);

    for key in [ADMIN_KEY, READ_KEY] {
        let got = api.send_as(Some(key), "GET", "/assistants/sec", None).await;
        assert_eq!(got.json()["config"], shown, "{key}: {}", got.text);
        let found = api
            .send_as(Some(key), "POST", "/assistants/search", Some(json!({})))
            .await;
        let versions = api
            .send_as(
                Some(key),
                "POST",
                "/assistants/sec/versions",
                Some(json!({})),
            )
            .await;
        assert_eq!(
            versions.json()[0]["config"],
            shown,
            "{key}: {}",
            versions.text
        );
        for answer in [&got, &found, &versions] {
            assert_eq!(answer.status, StatusCode::OK, "{key}: {}", answer.text);
            assert!(!answer.text.contains("s3cret"), "{key}: {}", answer.text);
        }
    }

    let stored = api.store.get_record("assistants", "sec").await.unwrap();
    let stored = stored.unwrap();
    assert!(!stored.to_string().contains("s3cret"), "{stored}");
    assert!(stored.get("sealed_config").is_some(), "{stored}");
    let version = api
        .store
        .get_record(&assistant_versions("sec"), "1")
        .await
        .unwrap();
    assert!(!version.unwrap().to_string().contains("s3cret"));

    let run = api
        .send_as(
            Some(ADMIN_KEY),
            "POST",
            "/runs",
            Some(json!({"assistant_id": "sec", "input": {"messages": ["hi"]}})),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.text);
    assert!(!run.text.contains("s3cret"), "{}", run.text);
    let opened = api.run_context(&run).await;
    assert_eq!(opened, json!({"api_token": "s3cret", "model": "m"}));
}

#[tokio::test]
async fn a_secret_in_an_assistants_config_without_a_context_key_is_refused() {
    use deepfleet_scheduler::Intake;
    use deepfleet_scheduler::lifecycle::Lifecycle;

    let mut api = api_with_secret_token().await;
    // The same back ends, with no key to seal anything.
    let intake = Intake::new(api.store.clone(), api.queue.clone());
    api.state.runs.life = Lifecycle::new(intake);
    api.router = crate::router(api.state.clone());
    let body = json!({"graph_id": GRAPH, "assistant_id": "sec",
        "config": {"configurable": {"api_token": "s3cret"}}});
    let refused = api
        .send_as(Some(ADMIN_KEY), "POST", "/assistants", Some(body))
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = refused.json()["detail"].as_str().unwrap_or("").to_owned();
    assert!(
        message.starts_with("config holds a value named in the graph's context_secrets")
            && message.contains("no context key is configured"),
        "{}",
        refused.text
    );
    let stored = api.store.get_record("assistants", "sec").await.unwrap();
    assert_eq!(stored, None);
    // Without a secret, nothing needs the key.
    let body = json!({"graph_id": GRAPH, "assistant_id": "plain",
        "config": {"configurable": {"model": "m"}}});
    let created = api
        .send_as(Some(ADMIN_KEY), "POST", "/assistants", Some(body))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
}
