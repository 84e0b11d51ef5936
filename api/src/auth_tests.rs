//! The auth layer through the whole router: 401 without a known key, 403
//! for a role that may not, and another tenant's ids answering 404 as
//! unknown ones do.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use deepfleet_proto::RunStatus;
use deepfleet_queue::Queue;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::routes::Access;
use crate::test_support::{TestApi, api_with, finish, run_body};
use deepfleet_proto::tenant::{Caller, Role, TenantId};
use deepfleet_scheduler::keys::{ApiKeys, key_hash, key_line};

const A_ADMIN: &str = "key-a-admin";
const A_READ: &str = "key-a-read";
const B_ADMIN: &str = "key-b-admin";

fn keys() -> ApiKeys {
    let lines = [
        key_line(A_ADMIN, &TenantId::new("a").unwrap(), Role::Admin),
        key_line(A_READ, &TenantId::new("a").unwrap(), Role::Read),
        key_line(B_ADMIN, &TenantId::new("b").unwrap(), Role::Admin),
    ];
    ApiKeys::parse(lines.iter().map(|l| ("test", l.as_str()))).unwrap()
}

async fn two_tenants() -> TestApi {
    api_with(keys(), None).await
}

#[test]
fn key_lines_parse_and_name_their_origin_on_error() {
    let keys = keys();
    let a = keys.identify(Some(A_READ)).unwrap();
    assert_eq!((a.tenant.as_str(), a.role), ("a", Role::Read));
    assert_eq!(keys.identify(Some("nope")), None);
    assert_eq!(keys.identify(None), None);
    assert_eq!(ApiKeys::open().identify(None), Some(Caller::open()));
    let hash = key_hash("k");
    assert_eq!(hash.len(), 64);
    for (line, reason) in [
        ("abc a read", "64 hex"),
        (&format!("{hash} a"), "2 fields"),
        (&format!("{hash} a.b read"), "tenant id"),
        (&format!("{hash} a root"), "role"),
    ] {
        let err = ApiKeys::parse([("api.keys.x", line)]).err().unwrap();
        assert!(err.to_string().starts_with("api.keys.x: "), "{err}");
        assert!(err.to_string().contains(reason), "{err}");
    }
    let twice = format!("{hash} a read");
    let err = ApiKeys::parse([("1", twice.as_str()), ("2", twice.as_str())])
        .err()
        .unwrap();
    assert!(err.to_string().contains("twice"), "{err}");
}

#[test]
fn keys_come_as_x_api_key_or_bearer() {
    let mut headers = HeaderMap::new();
    assert_eq!(presented_key(&headers), None);
    headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer k1"));
    assert_eq!(presented_key(&headers), Some("k1"));
    headers.insert(CREDENTIAL_HEADER, HeaderValue::from_static("k2"));
    assert_eq!(presented_key(&headers), Some("k2"));
    let mut basic = HeaderMap::new();
    basic.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic k1"));
    assert_eq!(presented_key(&basic), None);
}

#[test]
fn the_route_table_declares_each_routes_role() {
    let table = crate::route_table();
    for (method, path, role) in [
        (Method::GET, "/threads/{thread_id}", Role::Read),
        (Method::POST, "/threads/search", Role::Read),
        (Method::POST, "/assistants/search", Role::Read),
        (Method::POST, "/threads/{thread_id}/history", Role::Read),
        (
            Method::POST,
            "/threads/{thread_id}/state/checkpoint",
            Role::Read,
        ),
        (Method::POST, "/store/namespaces", Role::Read),
        (Method::POST, "/store/items/search", Role::Read),
        (Method::POST, "/threads", Role::Submit),
        (Method::POST, "/threads/{thread_id}/runs", Role::Submit),
        (Method::PUT, "/store/items", Role::Submit),
        (Method::DELETE, "/threads/{thread_id}", Role::Submit),
        (Method::POST, "/assistants", Role::Admin),
        (Method::DELETE, "/assistants/{assistant_id}", Role::Admin),
        (Method::POST, "/threads/count", Role::Read),
        (Method::POST, "/assistants/count", Role::Read),
        (
            Method::POST,
            "/assistants/{assistant_id}/versions",
            Role::Read,
        ),
        (Method::PATCH, "/threads/{thread_id}", Role::Submit),
        (Method::POST, "/threads/{thread_id}/copy", Role::Submit),
        (Method::POST, "/threads/prune", Role::Submit),
        (Method::POST, "/runs/cancel", Role::Submit),
        (Method::PATCH, "/assistants/{assistant_id}", Role::Admin),
        (
            Method::POST,
            "/assistants/{assistant_id}/latest",
            Role::Admin,
        ),
    ] {
        let declared = table
            .iter()
            .find(|d| d.method == method && d.path == path)
            .unwrap_or_else(|| panic!("{method} {path} is not routed"));
        assert_eq!(declared.access, Access::Role(role), "{method} {path}");
    }
}

#[tokio::test]
async fn no_key_or_an_unknown_one_answers_401_but_system_routes_stay_open() {
    let api = two_tenants().await;
    for key in [None, Some("wrong")] {
        let answer = api
            .send_as(key, "POST", "/threads/search", Some(json!({})))
            .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.text);
        assert_eq!(answer.json()["code"], "unauthenticated");
        assert_eq!(answer.header(header::WWW_AUTHENTICATE), Some("Bearer"));
    }
    for path in ["/ok", "/info"] {
        assert_eq!(api.send("GET", path, None).await.status, StatusCode::OK);
    }
    let bearer = axum::http::Request::builder()
        .method("POST")
        .uri("/threads")
        .header(header::AUTHORIZATION, format!("Bearer {A_ADMIN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    assert_eq!(api.raw(bearer).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_read_key_reads_but_cannot_create_runs_or_assistants() {
    let api = two_tenants().await;
    let thread = api
        .send_as(Some(A_ADMIN), "POST", "/threads", Some(json!({})))
        .await;
    let thread_id = thread.json()["thread_id"].as_str().unwrap().to_owned();
    let read = api
        .send_as(Some(A_READ), "GET", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(read.status, StatusCode::OK);
    for (method, uri, body) in [
        ("POST", format!("/threads/{thread_id}/runs"), run_body("hi")),
        ("POST", "/runs".to_owned(), run_body("hi")),
        ("POST", "/runs/wait".to_owned(), run_body("hi")),
        ("POST", "/runs/batch".to_owned(), json!([run_body("hi")])),
        ("POST", "/threads".to_owned(), json!({})),
        (
            "POST",
            "/assistants".to_owned(),
            json!({"graph_id": "agent"}),
        ),
        (
            "PUT",
            "/store/items".to_owned(),
            json!({"namespace": ["n"], "key": "k", "value": {}}),
        ),
    ] {
        let answer = api.send_as(Some(A_READ), method, &uri, Some(body)).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{method} {uri}: {}",
            answer.text
        );
        assert_eq!(answer.json()["code"], "forbidden");
    }
    assert_eq!(
        api.queue.depth().await.unwrap(),
        Some(0),
        "nothing was published"
    );
}

/// Tenant A's records, one of each kind, for tenant B to look for.
struct Owned {
    assistant_id: String,
    thread_id: String,
    run_id: String,
    batch_id: String,
}

/// Creates an assistant, a thread with a finished run, a batch and a store
/// item as tenant A.
async fn tenant_a_records(api: &TestApi) -> Owned {
    let a = Some(A_ADMIN);
    let created = api
        .send_as(a, "POST", "/assistants", Some(json!({"graph_id": "agent"})))
        .await;
    let assistant_id = created.json()["assistant_id"].as_str().unwrap().to_owned();
    let thread = api.send_as(a, "POST", "/threads", Some(json!({}))).await;
    let thread_id = thread.json()["thread_id"].as_str().unwrap().to_owned();
    let run = api
        .send_as(
            a,
            "POST",
            &format!("/threads/{thread_id}/runs"),
            Some(run_body("hi")),
        )
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.text);
    let run_id = run.json()["run_id"].as_str().unwrap().to_owned();
    finish(api.store.as_ref(), &thread_id, &run_id, RunStatus::Success).await;
    let batch = api
        .send_as(a, "POST", "/runs/batch", Some(json!([run_body("x")])))
        .await;
    let batch_id = batch.json()[0]["metadata"]["batch_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let item = json!({"namespace": ["notes"], "key": "k", "value": {"v": 1}});
    let put = api.send_as(a, "PUT", "/store/items", Some(item)).await;
    assert_eq!(put.status, StatusCode::NO_CONTENT);

    Owned {
        assistant_id,
        thread_id,
        run_id,
        batch_id,
    }
}

#[tokio::test]
async fn another_tenants_records_answer_404_like_unknown_ones() {
    let api = two_tenants().await;
    let (a, b) = (Some(A_ADMIN), Some(B_ADMIN));
    let Owned {
        assistant_id,
        thread_id,
        run_id,
        batch_id,
    } = tenant_a_records(&api).await;
    let (t, r) = (&thread_id, &run_id);
    let gets = [
        format!("/assistants/{assistant_id}"),
        format!("/threads/{t}"),
        format!("/threads/{t}/state"),
        format!("/threads/{t}/history"),
        format!("/threads/{t}/runs"),
        format!("/threads/{t}/runs/{r}"),
        format!("/threads/{t}/runs/{r}/join"),
        format!("/threads/{t}/runs/{r}/stream"),
        format!("/batches/{batch_id}"),
        format!("/batches/{batch_id}/runs"),
    ];
    for uri in &gets {
        assert_eq!(
            api.send_as(a, "GET", uri, None).await.status,
            StatusCode::OK,
            "{uri}"
        );
        let theirs = api.send_as(b, "GET", uri, None).await;
        let unknown = api
            .send_as(
                b,
                "GET",
                &uri.replace(t.as_str(), "nope")
                    .replace(&batch_id, "nope")
                    .replace(&assistant_id, "nope"),
                None,
            )
            .await;
        assert_eq!(
            theirs.status,
            StatusCode::NOT_FOUND,
            "{uri}: {}",
            theirs.text
        );
        assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{uri}");
        assert_eq!(theirs.json()["code"], unknown.json()["code"], "{uri}");
    }
}

#[tokio::test]
async fn another_tenants_records_cannot_be_changed() {
    let api = two_tenants().await;
    let b = Some(B_ADMIN);
    let Owned {
        assistant_id,
        thread_id,
        run_id,
        ..
    } = tenant_a_records(&api).await;
    let (t, r) = (&thread_id, &run_id);
    for (method, uri, body) in [
        ("POST", format!("/threads/{t}/runs"), Some(run_body("hi"))),
        (
            "POST",
            format!("/threads/{t}/runs/wait"),
            Some(run_body("hi")),
        ),
        (
            "POST",
            format!("/threads/{t}/runs/stream"),
            Some(run_body("hi")),
        ),
        ("POST", format!("/threads/{t}/runs/{r}/cancel"), None),
        ("DELETE", format!("/threads/{t}/runs/{r}"), None),
        ("DELETE", format!("/threads/{t}"), None),
        ("DELETE", format!("/assistants/{assistant_id}"), None),
        (
            "POST",
            "/runs".to_owned(),
            Some(json!({"assistant_id": assistant_id, "input": {"messages": []}})),
        ),
    ] {
        let answer = api.send_as(b, method, &uri, body).await;
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "{method} {uri}: {}",
            answer.text
        );
    }
    // `if_not_exists: create` never takes over another tenant's thread.
    let mut create = run_body("hi");
    create["if_not_exists"] = json!("create");
    let answer = api
        .send_as(b, "POST", &format!("/threads/{t}/runs"), Some(create))
        .await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.text);
}

#[tokio::test]
async fn searches_and_the_store_hold_only_the_callers_records() {
    let api = two_tenants().await;
    let (a, b) = (Some(A_ADMIN), Some(B_ADMIN));
    let Owned { assistant_id, .. } = tenant_a_records(&api).await;
    // Searches list only the caller's records.
    let threads = api
        .send_as(b, "POST", "/threads/search", Some(json!({})))
        .await;
    assert_eq!(threads.json(), json!([]));
    let assistants = api
        .send_as(b, "POST", "/assistants/search", Some(json!({})))
        .await;
    assert!(
        assistants
            .json()
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["assistant_id"] != assistant_id.as_str())
    );
    let mine = api
        .send_as(a, "POST", "/threads/search", Some(json!({})))
        .await;
    assert_eq!(mine.json().as_array().unwrap().len(), 1);

    // Store items: the same namespace is another item per tenant, and the
    // tenant's own label never shows.
    let get = "/store/items?namespace=notes&key=k";
    assert_eq!(api.send_as(b, "GET", get, None).await.json(), json!(null));
    let own = api.send_as(a, "GET", get, None).await.json();
    assert_eq!(own["namespace"], json!(["notes"]));
    let search = api
        .send_as(
            b,
            "POST",
            "/store/items/search",
            Some(json!({"namespace_prefix": []})),
        )
        .await;
    assert_eq!(search.json()["items"], json!([]));
    let found = api
        .send_as(
            a,
            "POST",
            "/store/items/search",
            Some(json!({"namespace_prefix": []})),
        )
        .await;
    assert_eq!(found.json()["items"][0]["namespace"], json!(["notes"]));
    let names = api
        .send_as(b, "POST", "/store/namespaces", Some(json!({})))
        .await;
    assert_eq!(names.json()["namespaces"], json!([]));
    let names = api
        .send_as(
            a,
            "POST",
            "/store/namespaces",
            Some(json!({"max_depth": 1})),
        )
        .await;
    assert_eq!(names.json()["namespaces"], json!([["notes"]]));
    let delete = json!({"namespace": ["notes"], "key": "k"});
    api.send_as(b, "DELETE", "/store/items", Some(delete)).await;
    assert_eq!(api.send_as(a, "GET", get, None).await.json()["key"], "k");
}

#[tokio::test]
async fn a_tenant_past_its_runs_in_flight_gets_429_with_retry_after() {
    let api = api_with(keys(), Some(1)).await;
    let first = api
        .send_as(Some(A_ADMIN), "POST", "/runs", Some(run_body("1")))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let second = api
        .send_as(Some(A_ADMIN), "POST", "/runs", Some(run_body("2")))
        .await;
    assert_eq!(
        second.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        second.text
    );
    assert_eq!(second.json()["code"], "too_many_runs");
    assert_eq!(second.header(header::RETRY_AFTER), Some("5"));
    let batch = api
        .send_as(
            Some(B_ADMIN),
            "POST",
            "/runs/batch",
            Some(json!([run_body("1"), run_body("2")])),
        )
        .await;
    assert_eq!(
        batch.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        batch.text
    );
    // The other tenant has its own allowance.
    let other = api
        .send_as(Some(B_ADMIN), "POST", "/runs", Some(run_body("1")))
        .await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.text);
}

#[tokio::test]
async fn a_webhook_needs_a_secret_for_the_callers_tenant() {
    // The fixture's secret is the default tenant's; tenant a has none.
    let api = two_tenants().await;
    let mut body = run_body("1");
    body["webhook"] = json!("https://hooks.example.com/runs");
    let refused = api
        .send_as(Some(A_ADMIN), "POST", "/runs", Some(body))
        .await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text
    );
    assert_eq!(
        refused.json()["detail"],
        "webhook: no signing secret is configured for tenant 'a' (webhooks.secrets.a), \
         so its webhooks cannot be signed"
    );
}
