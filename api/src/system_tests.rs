//! Router tests of `/ok`, `/info` and `/metrics`.

use std::sync::Arc;

use axum::http::{StatusCode, header};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::router;
use crate::test_support::{GRAPH, api};

#[tokio::test]
async fn ok_and_info_describe_the_server() {
    let api = api().await;
    let ok = api.send("GET", "/ok", None).await;
    assert_eq!(
        (ok.status, ok.json()),
        (StatusCode::OK, json!({"ok": true}))
    );
    let info = api.send("GET", "/info", None).await;
    assert_eq!(
        info.json(),
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "langgraph_py_version": null,
            "flags": {"assistants": true, "crons": true, "langsmith": false, "strict_resume": true},
            "metadata": {"server": "deepfleet", "graphs": [GRAPH]},
        })
    );
}

#[tokio::test]
async fn metrics_are_the_registry_text_or_empty() {
    let mut api = api().await;
    let empty = api.send("GET", "/metrics", None).await;
    assert_eq!((empty.status, empty.text.as_str()), (StatusCode::OK, ""));
    assert_eq!(
        empty.header(header::CONTENT_TYPE),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    api.state.metrics = Some(Arc::new(|| "df_up 1\n".to_owned()));
    api.router = router(api.state.clone());
    assert_eq!(api.send("GET", "/metrics", None).await.text, "df_up 1\n");
}

#[tokio::test]
async fn every_answer_carries_a_request_id() {
    let api = api().await;
    let answer = api.send("GET", "/ok", None).await;
    assert!(answer.headers.contains_key("x-request-id"));
    let missing = api.send("GET", "/nowhere", None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}
