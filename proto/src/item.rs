//! Long-term store items: JSON values by namespace and key, shared across
//! threads (the `/memories/` store backend, the Agent Server `/store` API).
//!
//! The shapes follow the Agent Server store API so the HTTP API can serve
//! them as they are: an [`Item`], a search body ([`ItemSearch`]) and a
//! namespace listing body ([`NamespaceQuery`]).

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One stored item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Item {
    /// Where the item lives, outermost label first (e.g. `[agent, user]`).
    pub namespace: Vec<String>,
    /// The item's key within its namespace.
    pub key: String,
    /// The stored value (always a JSON object).
    pub value: Map<String, Value>,
    /// When the item was first put.
    pub created_at: DateTime<Utc>,
    /// When the item was last put.
    pub updated_at: DateTime<Utc>,
}

/// Items under a namespace prefix (`POST /store/items/search`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemSearch {
    /// Items whose namespace starts with these labels (empty: all).
    #[serde(default)]
    pub namespace_prefix: Vec<String>,
    /// Top-level fields of the value that must equal these values.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub filter: Map<String, Value>,
    /// At most this many items.
    #[serde(default = "default_search_limit")]
    pub limit: usize,
    /// Items skipped first, for paging.
    #[serde(default)]
    pub offset: usize,
}

impl Default for ItemSearch {
    fn default() -> Self {
        ItemSearch {
            namespace_prefix: Vec::new(),
            filter: Map::new(),
            limit: default_search_limit(),
            offset: 0,
        }
    }
}

/// Namespaces in use (`POST /store/namespaces`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamespaceQuery {
    /// Only namespaces starting with these labels.
    #[serde(default)]
    pub prefix: Vec<String>,
    /// Only namespaces ending with these labels.
    #[serde(default)]
    pub suffix: Vec<String>,
    /// Namespaces cut to this many labels (then deduplicated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<usize>,
    /// At most this many namespaces.
    #[serde(default = "default_namespace_limit")]
    pub limit: usize,
    /// Namespaces skipped first, for paging.
    #[serde(default)]
    pub offset: usize,
}

impl Default for NamespaceQuery {
    fn default() -> Self {
        NamespaceQuery {
            prefix: Vec::new(),
            suffix: Vec::new(),
            max_depth: None,
            limit: default_namespace_limit(),
            offset: 0,
        }
    }
}

fn default_search_limit() -> usize {
    10
}

fn default_namespace_limit() -> usize {
    100
}

/// A namespace or key the store refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// An item's namespace needs at least one label.
    #[error("namespace must have at least one label")]
    Empty,
    /// A label is the empty string.
    #[error("namespace label {index} is empty")]
    EmptyLabel {
        /// 0-based position of the label.
        index: usize,
    },
    /// A label contains a character namespaces reserve.
    #[error("namespace label {label:?} must not contain {what}")]
    BadLabel {
        /// The label.
        label: String,
        /// What it contains (`'.'`, a NUL byte).
        what: &'static str,
    },
    /// An item key is the empty string.
    #[error("item key must not be empty")]
    EmptyKey,
}

/// Checks an item's namespace: at least one label, each non-empty, without
/// `.` (the Agent Server joins labels with dots) or NUL.
pub fn validate_namespace(namespace: &[String]) -> Result<(), NamespaceError> {
    if namespace.is_empty() {
        return Err(NamespaceError::Empty);
    }
    validate_prefix(namespace)
}

/// Checks a namespace prefix: like [`validate_namespace`], but may be empty.
pub fn validate_prefix(prefix: &[String]) -> Result<(), NamespaceError> {
    for (index, label) in prefix.iter().enumerate() {
        if label.is_empty() {
            return Err(NamespaceError::EmptyLabel { index });
        }
        let what = if label.contains('.') {
            "'.'"
        } else if label.contains('\0') {
            "a NUL byte"
        } else {
            continue;
        };
        return Err(NamespaceError::BadLabel {
            label: label.clone(),
            what,
        });
    }
    Ok(())
}

/// Checks an item's namespace and key.
pub fn validate_item_address(namespace: &[String], key: &str) -> Result<(), NamespaceError> {
    validate_namespace(namespace)?;
    if key.is_empty() {
        return Err(NamespaceError::EmptyKey);
    }
    Ok(())
}

/// The namespace as one string, labels joined with `.` (unambiguous, since
/// labels cannot contain a dot): the store's index keys.
pub fn join_namespace(namespace: &[String]) -> String {
    namespace.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ns(labels: &[&str]) -> Vec<String> {
        labels.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn namespace_rules() {
        assert_eq!(validate_namespace(&ns(&["a", "b-c@d"])), Ok(()));
        assert_eq!(validate_namespace(&[]), Err(NamespaceError::Empty));
        assert_eq!(validate_prefix(&[]), Ok(()));
        assert_eq!(
            validate_namespace(&ns(&["a", ""])),
            Err(NamespaceError::EmptyLabel { index: 1 })
        );
        let err = validate_namespace(&ns(&["a.b"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "namespace label \"a.b\" must not contain '.'"
        );
        assert!(validate_namespace(&ns(&["a\0"])).is_err());
        assert_eq!(
            validate_item_address(&ns(&["a"]), ""),
            Err(NamespaceError::EmptyKey)
        );
    }

    #[test]
    fn search_body_defaults() {
        let search: ItemSearch = serde_json::from_str(r#"{"namespace_prefix": ["a"]}"#).unwrap();
        assert_eq!((search.limit, search.offset), (10, 0));
        let query: NamespaceQuery = serde_json::from_str("{}").unwrap();
        assert_eq!(query, NamespaceQuery::default());
        assert_eq!(query.limit, 100);
    }
}
