//! `GET /.well-known/agent-card.json?assistant_id=...`: an assistant's A2A
//! agent card, what an A2A client reads before it talks to the agent at
//! `POST /a2a/{assistant_id}`: its name, what it does, where its endpoint
//! is, what it can do (stream; no push notifications) and its one skill,
//! the assistant itself.

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::{Extension, Json};
use deepfleet_proto::api::{AgentCardQuery, Assistant};
use deepfleet_proto::{AgentSpec, Caller};
use serde_json::{Value, json};

use crate::error::{ApiError, QueryString};
use crate::routes::{READ, Routes};
use crate::state::ApiState;
use deepfleet_scheduler::runs::assistants::find;

/// The A2A protocol version the cards and the endpoint follow.
pub const A2A_VERSION: &str = "0.3.0";
/// The longest description taken from a system prompt.
const ABOUT_CHARS: usize = 300;

pub(crate) fn routes() -> Routes {
    Routes::new().get("/.well-known/agent-card.json", READ, card)
}

async fn card(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    QueryString(query): QueryString<AgentCardQuery>,
) -> Result<Json<Value>, ApiError> {
    let assistant = find(&state.runs, &caller.tenant, &query.assistant_id).await?;
    let spec = state
        .runs
        .life
        .intake()
        .spec_for(&assistant.graph_id)
        .await?
        .spec;
    let url = format!("{}/a2a/{}", base_url(&headers), assistant.assistant_id);
    Ok(Json(agent_card(&assistant, &spec, &url)))
}

/// The card of `assistant` (serving `spec`) reached at `url`.
pub fn agent_card(assistant: &Assistant, spec: &AgentSpec, url: &str) -> Value {
    let description = about(assistant, spec);
    json!({
        "protocolVersion": A2A_VERSION,
        "name": assistant.name,
        "description": description,
        "url": url,
        "preferredTransport": "JSONRPC",
        "version": assistant.version.to_string(),
        "capabilities": {
            "streaming": true,
            "pushNotifications": false,
            "stateTransitionHistory": false,
        },
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{
            "id": assistant.assistant_id,
            "name": assistant.name,
            "description": description,
            "tags": ["deepfleet", assistant.graph_id],
            "inputModes": ["text"],
            "outputModes": ["text"],
        }],
    })
}

/// What the assistant does, for a card or a tool: its description, else
/// the start of its agent's instructions, else its graph.
pub fn about(assistant: &Assistant, spec: &AgentSpec) -> String {
    if let Some(description) = assistant
        .description
        .as_ref()
        .filter(|d| !d.trim().is_empty())
    {
        return description.clone();
    }
    match spec.system_prompt.as_deref().map(str::trim) {
        Some(prompt) if !prompt.is_empty() => prompt.chars().take(ABOUT_CHARS).collect(),
        _ => format!("The deep agent '{}'.", assistant.graph_id),
    }
}

/// Where the client reached this server: the forwarded scheme and host a
/// proxy sets, else the `Host` header over plain HTTP.
fn base_url(headers: &HeaderMap) -> String {
    let value = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let scheme = value("x-forwarded-proto").unwrap_or("http");
    let host = value("x-forwarded-host")
        .or_else(|| value(header::HOST.as_str()))
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use pretty_assertions::assert_eq;
    use serde_json::Map;

    use super::*;

    fn assistant(description: Option<&str>) -> Assistant {
        Assistant {
            assistant_id: "a-1".into(),
            graph_id: "helper".into(),
            config: Value::Object(Map::new()),
            context: Value::Object(Map::new()),
            metadata: Map::new(),
            name: "Helper".into(),
            description: description.map(str::to_owned),
            version: 3,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    fn spec(prompt: Option<&str>) -> AgentSpec {
        let mut spec: AgentSpec =
            serde_json::from_value(json!({"name": "helper", "model": "replay:x.yaml"})).unwrap();
        spec.system_prompt = prompt.map(str::to_owned);
        spec
    }

    #[test]
    fn the_card_names_the_endpoint_and_the_assistant_as_its_skill() {
        let card = agent_card(
            &assistant(Some("Answers questions.")),
            &spec(None),
            "http://h:1/a2a/a-1",
        );
        assert_eq!(card["url"], "http://h:1/a2a/a-1");
        assert_eq!(card["name"], "Helper");
        assert_eq!(card["version"], "3");
        assert_eq!(card["capabilities"]["streaming"], true);
        assert_eq!(card["defaultInputModes"], json!(["text"]));
        assert_eq!(card["defaultOutputModes"], json!(["text"]));
        assert_eq!(
            card["skills"],
            json!([{"id": "a-1", "name": "Helper", "description": "Answers questions.",
                    "tags": ["deepfleet", "helper"], "inputModes": ["text"],
                    "outputModes": ["text"]}])
        );
    }

    #[test]
    fn without_a_description_the_prompt_or_the_graph_says_what_it_does() {
        let long = "x".repeat(1000);
        assert_eq!(
            about(&assistant(None), &spec(Some(&long))).len(),
            ABOUT_CHARS
        );
        assert_eq!(
            about(&assistant(Some(" ")), &spec(None)),
            "The deep agent 'helper'."
        );
    }

    #[test]
    fn the_url_follows_a_proxy_or_the_host() {
        let mut headers = HeaderMap::new();
        assert_eq!(base_url(&headers), "http://localhost");
        headers.insert(header::HOST, HeaderValue::from_static("api.local:2024"));
        assert_eq!(base_url(&headers), "http://api.local:2024");
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        headers.insert(
            "x-forwarded-host",
            HeaderValue::from_static("fleet.example.com"),
        );
        assert_eq!(base_url(&headers), "https://fleet.example.com");
    }
}
