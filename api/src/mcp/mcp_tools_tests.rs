//! Tool naming, inputs and scoping; then `/mcp` driven over HTTP as an
//! MCP client would, with a stand-in worker ending the runs.

use axum::http::StatusCode;
use deepfleet_proto::RunStatus;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::test_support::{KEY_A, KEY_B, TestApi, mcp_request, two_tenants};

#[test]
fn names_keep_what_tool_names_may_hold() {
    assert_eq!(tool_name("research-agent_2"), "research-agent_2");
    assert_eq!(tool_name("Deep Researcher (v2)"), "Deep_Researcher__v2_");
    assert_eq!(tool_name("été"), "_t_");
    assert_eq!(tool_name(""), "assistant");
    assert_eq!(tool_name(&"x".repeat(100)).len(), MAX_NAME);
}

#[test]
fn names_taken_get_a_number() {
    assert_eq!(
        unique_names(["agent", "agent", "a gent", "a_gent", "agent"]),
        ["agent", "agent_2", "a_gent", "a_gent_2", "agent_3"]
    );
    let long = "y".repeat(MAX_NAME);
    let names = unique_names([long.as_str(), long.as_str()]);
    assert_eq!(names[1].len(), MAX_NAME);
    assert!(names[1].ends_with("_2"));
}

#[test]
fn an_untitled_assistant_goes_by_its_graph() {
    let mut assistant = Assistant {
        assistant_id: "a-1".into(),
        graph_id: "helper".into(),
        config: json!({}),
        context: json!({}),
        metadata: Default::default(),
        name: "Untitled".into(),
        description: None,
        version: 1,
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    };
    assert_eq!(label(&assistant), "helper");
    assistant.name = "Researcher".into();
    assert_eq!(label(&assistant), "Researcher");
}

#[test]
fn a_call_takes_an_input_string_or_messages() {
    let args = |v: Value| v.as_object().cloned();
    assert_eq!(
        run_input(args(json!({"input": "hi"})).as_ref()),
        Ok(json!({"messages": [{"role": "user", "content": "hi"}]}))
    );
    let messages = json!({"messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(run_input(args(messages.clone()).as_ref()), Ok(messages));
    for bad in [
        json!({}),
        json!({"input": " "}),
        json!({"input": 3}),
        json!({"messages": "hi"}),
        json!({"input": "a", "messages": []}),
    ] {
        assert!(run_input(args(bad.clone()).as_ref()).is_err(), "{bad}");
    }
    assert!(run_input(None).is_err());
}

#[test]
fn the_schema_offers_input_beside_the_graphs_properties() {
    let graph = json!({"type": "object", "properties": {"messages": {"type": "array"}}});
    let schema = Value::Object(input_schema(Some(&graph)));
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["messages"], json!({"type": "array"}));
    assert_eq!(schema["properties"]["input"]["type"], "string");
}

impl TestApi {
    /// One MCP request to `/mcp` as `key`; its JSON-RPC answer.
    async fn mcp(&self, key: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let answer = self.raw(mcp_request(key, &body)).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        answer
            .text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|message| message.get("id").is_some())
            .unwrap_or_else(|| panic!("no answer in {}", answer.text))
    }

    async fn tool_names(&self, key: &str) -> Vec<String> {
        let listed = self.mcp(key, "tools/list", json!({})).await;
        listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

async fn with_researcher() -> TestApi {
    let api = two_tenants().await;
    let body = json!({"graph_id": "agent", "name": "Researcher", "description": "Finds things."});
    let created = api
        .send_as(Some(KEY_A), "POST", "/assistants", Some(body))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    api
}

#[tokio::test]
async fn each_tenant_lists_only_its_own_assistants() {
    let api = with_researcher().await;
    assert_eq!(api.tool_names(KEY_A).await, ["agent", "Researcher"]);
    assert_eq!(api.tool_names(KEY_B).await, ["agent"]);
    let listed = api.mcp(KEY_A, "tools/list", json!({})).await;
    let researcher = &listed["result"]["tools"][1];
    assert_eq!(researcher["description"], "Finds things.");
    assert_eq!(
        researcher["inputSchema"]["properties"]["input"]["type"],
        "string"
    );
}

#[tokio::test]
async fn a_call_runs_the_assistant_and_answers_its_final_message() {
    let api = with_researcher().await;
    let params = json!({"name": "Researcher", "arguments": {"input": "find it"}});
    let (answer, job) = tokio::join!(
        api.mcp(KEY_A, "tools/call", params),
        api.work_one(RunStatus::Success)
    );
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": "done"}]),
        "{answer}"
    );
    assert_ne!(answer["result"]["isError"], true);
    // Stateless: the run's temporary thread is gone once answered.
    let thread = api
        .send_as(
            Some(KEY_A),
            "GET",
            &format!("/threads/{}", job.thread_id),
            None,
        )
        .await;
    assert_eq!(thread.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_failed_or_interrupted_run_and_bad_arguments_are_tool_errors() {
    let api = with_researcher().await;
    let params = json!({"name": "agent", "arguments": {"input": "x"}});
    let (failed, _) = tokio::join!(
        api.mcp(KEY_A, "tools/call", params),
        api.work_one(RunStatus::Error)
    );
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let text = failed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("the model is down"), "{text}");
    let params = json!({"name": "agent", "arguments": {"input": "x"}});
    let (asked, _) = tokio::join!(
        api.mcp(KEY_A, "tools/call", params),
        api.work_one(RunStatus::AwaitingHuman)
    );
    assert_eq!(asked["result"]["isError"], true, "{asked}");
    let text = asked["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("human decision"), "{text}");
    let bad = api
        .mcp(
            KEY_A,
            "tools/call",
            json!({"name": "agent", "arguments": {}}),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
}

#[tokio::test]
async fn another_tenants_assistant_is_no_tool() {
    let api = with_researcher().await;
    let params = json!({"name": "Researcher", "arguments": {"input": "x"}});
    let answer = api.mcp(KEY_B, "tools/call", params).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
}
