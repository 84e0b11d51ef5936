//! An assistant's graph as the Agent Server draws it
//! (`GET /assistants/{id}/graph`) and its schemas
//! (`GET /assistants/{id}/schemas`, and per subgraph namespace
//! `GET /assistants/{id}/subgraphs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The nodes and edges of an assistant's graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantGraph {
    /// Its nodes, `__start__` first and `__end__` last.
    pub nodes: Vec<GraphNode>,
    /// Its edges.
    pub edges: Vec<GraphEdge>,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphNode {
    /// The node's name, as stream events and checkpoints' tasks name it.
    pub id: String,
    /// `schema` for the start and end, `runnable` otherwise.
    #[serde(rename = "type")]
    pub kind: String,
    /// What the node is: its name for the start and end, `{id, name}`
    /// otherwise.
    pub data: Value,
}

/// One edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphEdge {
    /// The node it leaves.
    pub source: String,
    /// The node it reaches.
    pub target: String,
    /// Taken only when the source decides so (the model's tool calls, or
    /// none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conditional: bool,
}

/// The JSON Schemas of a graph's input, output, state, config and
/// runtime context (each null when the graph has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphSchemas {
    /// The graph.
    pub graph_id: String,
    /// What a run's `input` may hold.
    pub input_schema: Option<Value>,
    /// What a run's values hold at its end.
    pub output_schema: Option<Value>,
    /// The thread's values.
    pub state_schema: Option<Value>,
    /// `config.configurable`.
    pub config_schema: Option<Value>,
    /// A run's `context`.
    pub context_schema: Option<Value>,
}

/// `GET /assistants/{id}/graph`'s query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphQuery {
    /// Also draw subgraphs (`true`, or a depth); a deep agent's graph has
    /// none inside it, so the drawing is the same.
    #[serde(default)]
    pub xray: Option<String>,
}

/// `GET /assistants/{id}/subgraphs`' query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubgraphsQuery {
    /// Also list subgraphs of subgraphs.
    #[serde(default)]
    pub recurse: Option<String>,
}
