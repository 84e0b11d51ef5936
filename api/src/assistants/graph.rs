//! An assistant's graph and schemas, as the Agent Server answers them
//! and UIs draw and fill them: every deep agent has the same loop (the
//! summarization middleware before each model call, the model, the human
//! review of gated calls when its spec has any, the tools), named as
//! stream events and checkpoint tasks name the nodes; its state schema
//! is deepagents' (`messages`, `files`, `todos`) with the spec's custom
//! fields, its context schema the spec's. Subagents are runs of their
//! own graphs, not subgraphs inside this one, so there are none.

use std::collections::BTreeMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::{Extension, Json};
use deepfleet_proto::api::{
    AssistantGraph, GraphEdge, GraphNode, GraphQuery, GraphSchemas, SubgraphsQuery,
};
use deepfleet_proto::{AgentSpec, Caller};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::routes::{READ, Routes};
use crate::state::ApiState;
use deepfleet_scheduler::runs::assistants::find;

/// The node that summarizes the conversation before a model call.
const SUMMARIZE: &str = "SummarizationMiddleware.before_model";
/// The node that asks a human about gated tool calls.
const REVIEW: &str = "HumanInTheLoopMiddleware.after_model";

/// Whether `name` names a node of a deep agent's graph (the start, or a
/// node of its loop), which `update_state`'s `as_node` may name.
pub fn is_node(name: &str) -> bool {
    [
        "__start__",
        "__input__",
        SUMMARIZE,
        "model",
        REVIEW,
        "tools",
    ]
    .contains(&name)
}

pub(crate) fn routes() -> Routes {
    Routes::new()
        .get("/assistants/{assistant_id}/graph", READ, graph)
        .get("/assistants/{assistant_id}/schemas", READ, schemas)
        .get("/assistants/{assistant_id}/subgraphs", READ, subgraphs)
        .get(
            "/assistants/{assistant_id}/subgraphs/{namespace}",
            READ,
            subgraphs_in,
        )
}

/// The spec the assistant's graph serves now.
async fn spec_of(
    state: &ApiState,
    caller: &Caller,
    id: &str,
) -> Result<(String, AgentSpec), ApiError> {
    let assistant = find(&state.runs, &caller.tenant, id).await?;
    let served = state
        .runs
        .life
        .intake()
        .spec_for(&assistant.graph_id)
        .await?;
    Ok((assistant.graph_id, served.spec))
}

async fn graph(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: Result<Query<GraphQuery>, QueryRejection>,
) -> Result<Json<AssistantGraph>, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::unprocessable(e.body_text()))?;
    if let Some(xray) = query.xray.as_deref()
        && !matches!(xray, "true" | "false")
        && xray.parse::<u32>().is_err()
    {
        return Err(ApiError::unprocessable(format!(
            "xray must be true, false or a depth; got '{xray}'"
        )));
    }
    let (_, spec) = spec_of(&state, &caller, &id).await?;
    Ok(Json(drawing(&spec)))
}

async fn schemas(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Json<GraphSchemas>, ApiError> {
    let (graph_id, spec) = spec_of(&state, &caller, &id).await?;
    Ok(Json(schemas_of(graph_id, &spec)))
}

async fn subgraphs(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: Result<Query<SubgraphsQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, GraphSchemas>>, ApiError> {
    query.map_err(|e| ApiError::unprocessable(e.body_text()))?;
    spec_of(&state, &caller, &id).await?;
    Ok(Json(BTreeMap::new()))
}

async fn subgraphs_in(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    Path((id, _namespace)): Path<(String, String)>,
    query: Result<Query<SubgraphsQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, GraphSchemas>>, ApiError> {
    query.map_err(|e| ApiError::unprocessable(e.body_text()))?;
    spec_of(&state, &caller, &id).await?;
    Ok(Json(BTreeMap::new()))
}

/// The loop every deep agent runs, with the review node when `spec`
/// gates any tool.
fn drawing(spec: &AgentSpec) -> AssistantGraph {
    let reviews = !spec.interrupt_on.is_empty();
    let mut names = vec!["__start__", SUMMARIZE, "model"];
    if reviews {
        names.push(REVIEW);
    }
    names.extend(["tools", "__end__"]);
    let nodes = names
        .iter()
        .map(|&name| {
            let schema = name.starts_with("__");
            GraphNode {
                id: name.to_owned(),
                kind: if schema { "schema" } else { "runnable" }.to_owned(),
                data: if schema {
                    Value::String(name.to_owned())
                } else {
                    json!({"id": ["deepfleet", name], "name": name})
                },
            }
        })
        .collect();
    let edge = |source: &str, target: &str, conditional: bool| GraphEdge {
        source: source.to_owned(),
        target: target.to_owned(),
        conditional,
    };
    let decides = if reviews { REVIEW } else { "model" };
    let mut edges = vec![
        edge("__start__", SUMMARIZE, false),
        edge(SUMMARIZE, "model", false),
    ];
    if reviews {
        edges.push(edge("model", REVIEW, false));
    }
    edges.extend([
        edge(decides, "tools", true),
        edge(decides, "__end__", true),
        edge("tools", SUMMARIZE, false),
    ]);
    AssistantGraph { nodes, edges }
}

/// deepagents' state schema with `spec`'s custom fields, and its context
/// schema.
pub(crate) fn schemas_of(graph_id: String, spec: &AgentSpec) -> GraphSchemas {
    let mut properties = Map::new();
    properties.insert(
        "messages".into(),
        json!({"type": "array", "items": {"type": "object"},
               "description": "The conversation, as LangChain message dicts."}),
    );
    properties.insert(
        "files".into(),
        json!({"type": "object", "additionalProperties": {"type": "object"},
               "description": "The agent's files, by path."}),
    );
    properties.insert(
        "todos".into(),
        json!({"type": "array", "items": {"type": "object"},
               "description": "The agent's plan (write_todos)."}),
    );
    if let Some(custom) = spec
        .state_schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    {
        properties.extend(custom.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let state = json!({"title": graph_id, "type": "object", "properties": properties});
    let input = json!({"title": graph_id, "type": "object", "properties": {
        "messages": properties["messages"],
        "files": properties["files"],
    }});
    GraphSchemas {
        graph_id,
        input_schema: Some(input),
        output_schema: Some(state.clone()),
        state_schema: Some(state),
        config_schema: None,
        context_schema: spec.context_schema.clone(),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;
    use crate::test_support::api;

    #[tokio::test]
    async fn routes_answer_by_assistant_or_graph_name() {
        let api = api().await;
        let graph = api
            .send("GET", "/assistants/agent/graph?xray=1", None)
            .await;
        assert_eq!(graph.status, StatusCode::OK, "{}", graph.text);
        assert_eq!(graph.json()["nodes"][0]["id"], "__start__");
        let schemas = api
            .send("GET", "/assistants/agent/schemas", None)
            .await
            .json();
        assert_eq!(schemas["graph_id"], "agent");
        assert!(schemas["state_schema"]["properties"]["messages"].is_object());
        for path in [
            "/assistants/agent/subgraphs",
            "/assistants/agent/subgraphs/task?recurse=true",
        ] {
            let answer = api.send("GET", path, None).await;
            assert_eq!(
                (answer.status, answer.json()),
                (StatusCode::OK, json!({})),
                "{path}"
            );
        }
        let missing = api.send("GET", "/assistants/nobody/graph", None).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text);
        let bad = api
            .send("GET", "/assistants/agent/graph?xray=deep", None)
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
    }

    fn spec(yaml: &str) -> AgentSpec {
        AgentSpec::from_yaml(yaml).unwrap()
    }

    #[test]
    fn the_loop_names_its_nodes_as_the_streams_do() {
        let plain = drawing(&spec("name: a\nmodel: openai:gpt-4.1\n"));
        let ids: Vec<&str> = plain.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["__start__", SUMMARIZE, "model", "tools", "__end__"]);
        assert!(
            plain
                .edges
                .iter()
                .any(|e| e.source == "model" && e.target == "tools" && e.conditional)
        );
        let gated = drawing(&spec(
            "name: a\nmodel: openai:gpt-4.1\ninterrupt_on:\n  delete: true\n",
        ));
        assert!(gated.nodes.iter().any(|n| n.id == REVIEW));
        assert!(
            gated
                .edges
                .iter()
                .any(|e| e.source == REVIEW && e.target == "__end__")
        );
    }

    #[test]
    fn the_state_schema_adds_the_specs_fields() {
        let custom = spec(
            "name: a\nmodel: openai:gpt-4.1\nstate_schema:\n  type: object\n  properties:\n    mood: {type: string}\n\
             context_schema:\n  type: object\n",
        );
        let schemas = schemas_of("a".into(), &custom);
        let state = schemas.state_schema.unwrap();
        assert_eq!(state["properties"]["mood"]["type"], "string");
        assert!(state["properties"]["messages"].is_object());
        assert_eq!(schemas.context_schema, Some(json!({"type": "object"})));
    }
}
