//! The browser guard through the real router: bodies a page could send
//! cross-site are refused before any route runs, and a keyless API
//! answers loopback and allowed host names only.

use axum::body::Body as HttpBody;
use axum::http::{HeaderValue, Request, StatusCode, header};
use deepfleet_queue::Queue;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::test_support::{
    Answer, GRAPH, KEY_A, TestApi, api, api_allowing, run_body, two_tenants,
};

/// A request of `method` to `uri`, with `headers`, carrying `body` (none
/// when `None`).
fn request(
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Request<HttpBody> {
    let mut builder = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let body = body.map_or_else(HttpBody::empty, |b| HttpBody::from(b.to_owned()));
    builder.body(body).unwrap()
}

fn start_command() -> String {
    json!({"id": 1, "method": "run.start",
           "params": {"assistant_id": GRAPH,
                      "input": {"messages": [{"role": "user", "content": "hi"}]}}})
    .to_string()
}

fn a2a_send() -> String {
    json!({"jsonrpc": "2.0", "id": "req-1", "method": "message/send",
           "params": {"message": {"role": "user", "messageId": "m-1", "kind": "message",
                                  "parts": [{"kind": "text", "text": "hi"}]},
                      "configuration": {"blocking": false}}})
    .to_string()
}

async fn depth(api: &TestApi) -> Option<u64> {
    api.queue.depth().await.unwrap()
}

fn assert_refused_type(answer: &Answer) {
    assert_eq!(
        answer.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "{}",
        answer.text
    );
    assert_eq!(answer.json()["code"], "invalid_request", "{}", answer.text);
    let detail = answer.json()["detail"].as_str().unwrap().to_owned();
    assert!(detail.contains("application/json"), "{detail}");
}

#[tokio::test]
async fn a_plain_text_command_starts_no_run() {
    let api = api().await;
    let thread_id = uuid::Uuid::new_v4().to_string();
    let path = format!("/threads/{thread_id}/commands");
    for content_type in ["text/plain", "Text/Plain; charset=UTF-8"] {
        let answer = api
            .raw(request(
                "POST",
                &path,
                &[("content-type", content_type)],
                Some(&start_command()),
            ))
            .await;
        assert_refused_type(&answer);
        assert!(
            answer.json()["detail"]
                .as_str()
                .unwrap()
                .contains("text/plain")
        );
    }
    assert_eq!(depth(&api).await, Some(0));
    let thread = api
        .send("GET", &format!("/threads/{thread_id}"), None)
        .await;
    assert_eq!(thread.status, StatusCode::NOT_FOUND, "{}", thread.text);

    // The same command as JSON starts its run.
    let answer = api
        .raw(request(
            "POST",
            &path,
            &[("content-type", "application/json")],
            Some(&start_command()),
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(answer.json()["type"], "success", "{}", answer.text);
    assert_eq!(depth(&api).await, Some(1));
}

#[tokio::test]
async fn an_untyped_body_starts_no_run_but_a_bodiless_request_goes_on() {
    let api = api().await;
    let thread_id = uuid::Uuid::new_v4().to_string();
    // What `fetch` sends for a `Blob` or `ArrayBuffer` body: no type.
    let answer = api
        .raw(request(
            "POST",
            &format!("/threads/{thread_id}/commands"),
            &[],
            Some(&start_command()),
        ))
        .await;
    assert_refused_type(&answer);
    assert_eq!(depth(&api).await, Some(0));

    // Cancelling and deleting take no body, and need no type.
    let thread_id = api.thread().await;
    let run = api.run_on(&thread_id, run_body("hi")).await;
    let run_id = run["run_id"].as_str().unwrap();
    let cancel = api
        .raw(request(
            "POST",
            &format!("/threads/{thread_id}/runs/{run_id}/cancel"),
            &[],
            None,
        ))
        .await;
    assert!(cancel.status.is_success(), "{}", cancel.text);
    let deleted = api
        .raw(request(
            "DELETE",
            &format!("/threads/{thread_id}"),
            &[],
            None,
        ))
        .await;
    assert!(deleted.status.is_success(), "{}", deleted.text);
}

#[tokio::test]
async fn a_plain_text_a2a_message_starts_no_run() {
    let api = api().await;
    for content_type in ["text/plain", "multipart/form-data; boundary=x"] {
        let answer = api
            .raw(request(
                "POST",
                "/a2a/agent",
                &[("content-type", content_type)],
                Some(&a2a_send()),
            ))
            .await;
        assert_refused_type(&answer);
    }
    assert_eq!(depth(&api).await, Some(0));
    let answer = api
        .raw(request(
            "POST",
            "/a2a/agent",
            &[("content-type", "application/json")],
            Some(&a2a_send()),
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    assert_eq!(depth(&api).await, Some(1));
}

#[tokio::test]
async fn a_form_post_creates_no_thread() {
    let api = api().await;
    let answer = api
        .raw(request(
            "POST",
            "/threads",
            &[("content-type", "application/x-www-form-urlencoded")],
            Some("thread_id=x"),
        ))
        .await;
    assert_refused_type(&answer);
    let detail = answer.json()["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("application/x-www-form-urlencoded"),
        "{detail}"
    );
    let listed = api.send("POST", "/threads/search", Some(json!({}))).await;
    assert_eq!(listed.json(), json!([]), "{}", listed.text);
}

/// The status of a thread search on `api` naming host `host`.
async fn search_as(api: &TestApi, key: Option<&str>, host: &str) -> Answer {
    let mut headers = vec![("host", host), ("content-type", "application/json")];
    if let Some(key) = key {
        headers.push(("x-api-key", key));
    }
    api.raw(request("POST", "/threads/search", &headers, Some("{}")))
        .await
}

#[tokio::test]
async fn a_keyless_api_refuses_other_host_names() {
    let api = api().await;
    for host in [
        "evil.example",
        "evil.example:2024",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "user@localhost",
    ] {
        let answer = search_as(&api, None, host).await;
        assert_eq!(
            answer.status,
            StatusCode::MISDIRECTED_REQUEST,
            "{host}: {}",
            answer.text
        );
        let detail = answer.json()["detail"].as_str().unwrap().to_owned();
        assert!(detail.contains("api.allowed_hosts"), "{detail}");
    }
    // HTTP/2 names the host in the URI's authority, not in `Host`.
    let answer = api
        .raw(request(
            "POST",
            "http://evil.example/threads/search",
            &[("content-type", "application/json")],
            Some("{}"),
        ))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::MISDIRECTED_REQUEST,
        "{}",
        answer.text
    );
    // Nothing is created through a refused name.
    let created = api
        .raw(request(
            "POST",
            "/threads",
            &[
                ("host", "evil.example"),
                ("content-type", "application/json"),
            ],
            Some("{}"),
        ))
        .await;
    assert_eq!(created.status, StatusCode::MISDIRECTED_REQUEST);
    let listed = api.send("POST", "/threads/search", Some(json!({}))).await;
    assert_eq!(listed.json(), json!([]), "{}", listed.text);
}

#[tokio::test]
async fn a_keyless_api_answers_loopback_names_on_any_port() {
    let api = api().await;
    for host in [
        "localhost:2024",
        "localhost",
        "LocalHost.:80",
        "ui.localhost:3000",
        "127.0.0.1:8123",
        "127.1.2.3",
        "[::1]:9",
        "[::1]",
    ] {
        let answer = search_as(&api, None, host).await;
        assert_eq!(answer.status, StatusCode::OK, "{host}: {}", answer.text);
    }
    let answer = api
        .raw(request(
            "POST",
            "http://127.0.0.1:2024/threads/search",
            &[("content-type", "application/json")],
            Some("{}"),
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
}

#[tokio::test]
async fn the_public_routes_answer_any_host_name() {
    let api = api().await;
    let answer = api
        .raw(request("GET", "/ok", &[("host", "scheduler:2024")], None))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
}

#[tokio::test]
async fn an_allowed_host_name_is_answered() {
    let api = api_allowing(&["Deepfleet.Internal", "fd00::1"]).await;
    for host in [
        "deepfleet.internal:2024",
        "DEEPFLEET.INTERNAL",
        "[fd00:0::1]:2024",
        "localhost",
    ] {
        let answer = search_as(&api, None, host).await;
        assert_eq!(answer.status, StatusCode::OK, "{host}: {}", answer.text);
    }
    let answer = search_as(&api, None, "other.internal").await;
    assert_eq!(answer.status, StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn with_keys_any_host_name_is_answered() {
    let api = two_tenants().await;
    let answer = search_as(&api, Some(KEY_A), "api.example.com").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    // The body check holds with keys too.
    let answer = api
        .raw(request(
            "POST",
            "/threads/search",
            &[("x-api-key", KEY_A), ("content-type", "text/plain")],
            Some("{}"),
        ))
        .await;
    assert_refused_type(&answer);
}

#[test]
fn authorities_split_into_a_normal_host() {
    let host = |a: &str| split_authority(a).map(|(h, _)| h);
    assert_eq!(host("LocalHost.:2024").as_deref(), Some("localhost"));
    assert_eq!(host("[0:0::1]:9").as_deref(), Some("[::1]"));
    assert_eq!(host("127.0.0.1").as_deref(), Some("127.0.0.1"));
    for bad in [
        "",
        ":80",
        "user@localhost",
        "localhost:x",
        "[::1]x",
        "[nope]",
        "a b",
        "a/b",
    ] {
        assert_eq!(host(bad), None, "{bad}");
    }
    for loopback in ["localhost", "a.localhost", "127.9.9.9", "[::1]"] {
        assert!(is_loopback(loopback), "{loopback}");
    }
    for other in [
        "localhost.example",
        "notlocalhost",
        "128.0.0.1",
        "[::ffff:127.0.0.1]",
    ] {
        assert!(!is_loopback(other), "{other}");
    }
}

#[test]
fn allowed_hosts_are_names_without_scheme_or_port() {
    let parsed = AllowedHosts::parse(&[" Api.Example.com. ", "::1", "[fd00::1]"]).unwrap();
    assert!(parsed.allows("api.example.com"));
    assert!(parsed.allows("[fd00::1]"));
    for bad in [
        "https://api.example.com",
        "api.example.com:8080",
        "[fd00::1]:80",
        "",
        "a/b",
        "user@host",
    ] {
        let error = AllowedHosts::parse(&[bad]).unwrap_err().to_string();
        assert!(error.starts_with("api.allowed_hosts: "), "{error}");
    }
}

#[test]
fn only_bodies_with_a_json_type_or_none_at_all_pass() {
    let headers = |value: Option<&str>| {
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            headers.insert(header::CONTENT_TYPE, value.parse().unwrap());
        }
        headers
    };
    assert!(check_body_type(&headers(Some("application/json")), false).is_ok());
    assert!(check_body_type(&headers(None), true).is_ok());
    assert!(check_body_type(&headers(None), false).is_err());
    for simple in [
        "text/plain",
        " MULTIPART/FORM-DATA ; boundary=1",
        "application/x-www-form-urlencoded;charset=utf-8",
    ] {
        let refused = check_body_type(&headers(Some(simple)), true).unwrap_err();
        assert_eq!(
            refused.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{simple}"
        );
    }
    let mut opaque = HeaderMap::new();
    opaque.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_bytes(b"text/plain; charset=\xe9").unwrap(),
    );
    assert!(check_body_type(&opaque, true).is_err());
}
