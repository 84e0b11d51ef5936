//! Assistants: a graph (agent spec) with its config and context.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::search::{AssistantSortBy, PageLimit, SortOrder};

/// `POST /assistants`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantCreateParams {
    /// The graph it runs; must be registered.
    pub graph_id: String,
    /// Its id; a new UUID when absent.
    #[serde(default)]
    pub assistant_id: Option<String>,
    /// Free-form config; its `configurable` joins the runs' context.
    #[serde(default)]
    pub config: Option<Value>,
    /// Runtime context given to its runs.
    #[serde(default)]
    pub context: Option<Value>,
    /// Caller metadata (searchable).
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// `do_nothing` answers the existing assistant; anything else (the
    /// default, `raise`) answers 409 on a duplicate id.
    #[serde(default)]
    pub if_exists: Option<String>,
    /// Display name (default `Untitled`).
    #[serde(default)]
    pub name: Option<String>,
    /// Display description.
    #[serde(default)]
    pub description: Option<String>,
}

/// `POST /assistants/search`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantSearchParams {
    /// Only assistants of this graph.
    #[serde(default)]
    pub graph_id: Option<String>,
    /// Only assistants whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Only these fields of each (all when absent).
    #[serde(default)]
    pub select: Option<Vec<String>>,
    /// Only assistants with this name.
    #[serde(default)]
    pub name: Option<String>,
    /// Sort by this field (system assistants first, then the created
    /// ones oldest first, when neither sort field is set).
    #[serde(default)]
    pub sort_by: Option<AssistantSortBy>,
    /// `asc` or `desc` (the default).
    #[serde(default)]
    pub sort_order: Option<SortOrder>,
}

/// `POST /assistants/count`: the filters of [`AssistantSearchParams`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantCountParams {
    /// Only assistants of this graph.
    #[serde(default)]
    pub graph_id: Option<String>,
    /// Only assistants whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Only assistants with this name.
    #[serde(default)]
    pub name: Option<String>,
}

/// `PATCH /assistants/{assistant_id}`: a new version, from the shown one
/// with these changes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantPatchParams {
    /// Another graph to run.
    #[serde(default)]
    pub graph_id: Option<String>,
    /// Replaces the config.
    #[serde(default)]
    pub config: Option<Value>,
    /// Replaces the runtime context.
    #[serde(default)]
    pub context: Option<Value>,
    /// Merged into the metadata: each key set, the others kept.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Replaces the display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Replaces the display description.
    #[serde(default)]
    pub description: Option<String>,
}

/// `POST /assistants/{assistant_id}/versions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantVersionsParams {
    /// Only versions whose metadata has these key/values.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// At most this many (default 10).
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// `POST /assistants/{assistant_id}/latest`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantLatestParams {
    /// The version to show and run from now on.
    pub version: u32,
}

/// The Assistant resource; created ones are stored in this shape too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Assistant {
    /// Its id (`uuid5` of the graph name for a system assistant).
    pub assistant_id: String,
    /// The graph it runs.
    pub graph_id: String,
    /// Free-form config.
    pub config: Value,
    /// Runtime context given to its runs.
    pub context: Value,
    /// Caller metadata (`created_by: system` for system assistants).
    pub metadata: Map<String, Value>,
    /// Display name.
    pub name: String,
    /// Display description.
    pub description: Option<String>,
    /// Its version: 1 when created, one more with each change.
    pub version: u32,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}
