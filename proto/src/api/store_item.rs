//! The long-term store: `PUT|GET|DELETE /store/items`,
//! `POST /store/items/search`, `POST /store/namespaces` (reference §1.9).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::search::PageLimit;
use crate::item::Item;

/// `PUT /store/items`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemPutParams {
    /// Where it goes, outermost label first.
    pub namespace: Vec<String>,
    /// Its key in the namespace.
    pub key: String,
    /// The value, a JSON object.
    pub value: Map<String, Value>,
}

/// `GET /store/items`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ItemGetQuery {
    /// Dot-joined, as the SDK sends it.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The key.
    pub key: String,
}

/// `DELETE /store/items`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ItemDeleteParams {
    /// The item's namespace.
    pub namespace: Vec<String>,
    /// Its key.
    pub key: String,
}

/// `POST /store/items/search`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemSearchParams {
    /// Items whose namespace starts with these labels.
    #[serde(default)]
    pub namespace_prefix: Vec<String>,
    /// Top-level value fields that must match.
    #[serde(default)]
    pub filter: Option<Map<String, Value>>,
    /// At most this many.
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Semantic search is not indexed here; a query is refused, not
    /// silently ignored.
    #[serde(default)]
    pub query: Option<String>,
}

/// The answer of an item search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemSearchResponse {
    /// The matching items.
    pub items: Vec<Item>,
}

/// `POST /store/namespaces`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceListParams {
    /// Only namespaces starting with these labels.
    #[serde(default)]
    pub prefix: Option<Vec<String>>,
    /// Only namespaces ending with these labels.
    #[serde(default)]
    pub suffix: Option<Vec<String>>,
    /// Namespaces cut to this many labels.
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// At most this many.
    #[serde(default)]
    pub limit: Option<PageLimit>,
    /// Skipped first.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// The answer of a namespace listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NamespaceListResponse {
    /// The namespaces, each a list of labels.
    pub namespaces: Vec<Vec<String>>,
}
