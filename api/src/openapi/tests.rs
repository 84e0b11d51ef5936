use std::collections::BTreeSet;

use axum::http::StatusCode;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::links::SUPPLIERS;
use super::*;
use crate::test_support::{api, api_with};
use deepfleet_proto::api::RunListQuery;
use deepfleet_proto::tenant::{Role, TenantId};
use deepfleet_scheduler::keys::{ApiKeys, key_line};

/// Methods a route may have (HEAD follows GET in axum).
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Every `METHOD path` the router answers: each method of each path of
/// the route table that is not 405 (the parameters filled with `probe`).
async fn routed() -> BTreeSet<String> {
    let api = api().await;
    let paths: BTreeSet<&str> = crate::route_table().iter().map(|d| d.path).collect();
    let mut found = BTreeSet::new();
    for path in paths {
        let uri = path
            .split('/')
            .map(|s| if s.starts_with('{') { "probe" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        for method in METHODS {
            let answer = api.send(method, &uri, None).await;
            if answer.status != StatusCode::METHOD_NOT_ALLOWED {
                found.insert(format!("{method} {path}"));
            }
        }
    }
    found
}

fn described() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (path, item) in description()["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            found.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    found
}

#[tokio::test]
async fn every_route_is_described_and_every_description_routed() {
    let routed = routed().await;
    let described = described();
    let undescribed: Vec<_> = routed.difference(&described).collect();
    let unrouted: Vec<_> = described.difference(&routed).collect();
    assert!(
        undescribed.is_empty() && unrouted.is_empty(),
        "routes without a description (add each to its resource's list, e.g. \
         api/src/openapi/threads.rs): {undescribed:?}; \
         described but not routed: {unrouted:?}"
    );
}

#[test]
fn the_route_table_declares_each_routed_method_once() {
    let table = crate::route_table();
    let declared: BTreeSet<String> = table
        .iter()
        .map(|d| format!("{} {}", d.method, d.path))
        .collect();
    assert_eq!(declared.len(), table.len(), "a route is declared twice");
    assert_eq!(
        declared,
        described(),
        "the table and the description differ"
    );
    // The description says a key is needed exactly where the table does.
    for route in &table {
        let method = route.method.as_str().to_lowercase();
        let operation = &description()["paths"][route.path][method.as_str()];
        let open = operation.get("security") == Some(&serde_json::json!([]));
        assert_eq!(
            open,
            route.access == crate::routes::Access::Public,
            "{} {}",
            route.method,
            route.path
        );
    }
}

/// Every `$ref` in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("$ref", Value::String(target)) => out.push(target.clone()),
                    _ => refs(inner, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_reference_resolves() {
    let doc = description();
    let mut found = Vec::new();
    refs(doc, &mut found);
    assert!(!found.is_empty());
    for target in found {
        assert!(
            doc.pointer(target.trim_start_matches('#')).is_some(),
            "{target} is not in the description"
        );
    }
}

#[test]
fn schemas_read_and_written_under_one_name_agree() {
    let mut schemas = Schemas::new();
    operations(&mut schemas);
    let requests = schemas.requests.take_definitions(true);
    let responses = schemas.responses.take_definitions(true);
    for (name, schema) in &requests {
        if let Some(other) = responses.get(name) {
            assert_eq!(schema, other, "{name} differs between bodies and answers");
        }
    }
}

#[test]
fn operation_ids_are_unique() {
    let mut ids = BTreeSet::new();
    for item in description()["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let id = op["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_owned()), "{id} twice");
        }
    }
}

#[test]
fn query_parameters_are_never_null() {
    let mut schemas = Schemas::new();
    let params = schemas.query::<RunListQuery>();
    let names: Vec<_> = params.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["limit", "offset", "status"]);
    for param in &params {
        assert_eq!(param["in"], "query");
        assert_eq!(param["required"], false);
        assert!(!param["schema"].to_string().contains("null"), "{param}");
    }
}

#[tokio::test]
async fn description_and_page_need_no_key() {
    let line = key_line("k", &TenantId::default(), Role::Admin);
    let keys = ApiKeys::parse([("test", line.as_str())]).unwrap();
    let api = api_with(keys, None).await;
    let json = api.send("GET", "/openapi.json", None).await;
    assert_eq!(json.status, StatusCode::OK);
    assert_eq!(json.json()["openapi"], "3.1.0");
    let page = api.send("GET", "/docs", None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("\"openapi\":\"3.1.0\""));
    assert_eq!(
        api.send("POST", "/threads/search", None).await.status,
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn the_page_cannot_be_closed_by_the_description() {
    assert_eq!(
        script_safe(r#"{"a":"</script>"}"#),
        r#"{"a":"\u003c/script>"}"#
    );
}

#[test]
fn created_resources_link_to_the_operations_on_them() {
    let doc = description();
    let links = &doc["paths"]["/threads"]["post"]["responses"]["200"]["links"];
    assert_eq!(
        links["get_threads_by_thread_id"]["parameters"]["thread_id"],
        "$response.body#/thread_id"
    );
    let ids: BTreeSet<String> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap().to_owned())
        .collect();
    for (_, path, _) in SUPPLIERS {
        let Some(item) = doc["paths"][*path]["post"].as_object() else {
            panic!("supplier {path} is not described");
        };
        let links = item["responses"]["200"]["links"].as_object().unwrap();
        assert!(!links.is_empty(), "{path} links nowhere");
        for link in links.values() {
            assert!(ids.contains(link["operationId"].as_str().unwrap()));
        }
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_with_a_detail() {
    let api = api().await;
    let route = api.send("GET", "/nowhere", None).await;
    assert_eq!(route.status, StatusCode::NOT_FOUND);
    assert_eq!(route.json()["code"], "not_found", "{}", route.text);
    let method = api.send("POST", "/threads/runs", None).await;
    assert_eq!(method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(method.json()["code"], "invalid_request", "{}", method.text);
    assert!(method.header(axum::http::header::ALLOW).is_some());
}

#[tokio::test]
async fn every_example_body_is_accepted() {
    let api = api().await;
    let thread = api.thread().await;
    let mut tried = 0;
    for (path, item) in description()["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let example = &op["requestBody"]["content"]["application/json"]["example"];
            // `/wait` and `/stream` follow the run to its end (no worker
            // here); their example is `/runs`' own.
            if example.is_null() || path.ends_with("/wait") || path.ends_with("/stream") {
                continue;
            }
            let uri = path.replace("{thread_id}", &thread);
            let answer = api
                .send(&method.to_uppercase(), &uri, Some(example.clone()))
                .await;
            assert!(
                answer.status.is_success(),
                "{method} {path}: {} {}",
                answer.status,
                answer.text
            );
            tried += 1;
        }
    }
    assert!(tried >= 6, "only {tried} examples");
}

#[test]
fn search_bodies_describe_their_sort_fields_orders_and_page_bound() {
    let doc = description();
    let schemas = &doc["components"]["schemas"];
    let names = |name: &str| -> Vec<String> {
        schemas[name]["oneOf"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} is not described: {}", schemas[name]))
            .iter()
            .map(|v| v["const"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("SortOrder"), ["asc", "desc"]);
    assert_eq!(
        names("ThreadSortBy"),
        ["thread_id", "status", "created_at", "updated_at"]
    );
    assert_eq!(
        names("AssistantSortBy"),
        [
            "assistant_id",
            "graph_id",
            "name",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(
        names("CronSortBy"),
        [
            "cron_id",
            "assistant_id",
            "thread_id",
            "created_at",
            "updated_at",
            "next_run_date",
            "end_time"
        ]
    );
    let search = &schemas["ThreadSearchParams"]["properties"];
    assert_eq!(search["limit"]["maximum"], 1000, "{}", search["limit"]);
    let sort_by = search["sort_by"].to_string();
    assert!(
        sort_by.contains("#/components/schemas/ThreadSortBy"),
        "{sort_by}"
    );
}
