//! The item logic both back ends share: validation, filters, paging and
//! namespace listing.
//!
//! Order is the same everywhere: namespaces label by label, then keys
//! byte-wise, so a search pages identically on every store.

use deepfleet_proto::item::{validate_item_address, validate_prefix};
use deepfleet_proto::{Item, ItemSearch, NamespaceQuery};
use serde_json::{Map, Value};

use crate::error::StoreError;

/// Refuses a bad namespace or key before anything is read or written.
pub(crate) fn check_address(namespace: &[String], key: &str) -> Result<(), StoreError> {
    validate_item_address(namespace, key).map_err(|e| StoreError::Invalid(e.to_string()))
}

/// Refuses a bad namespace prefix.
pub(crate) fn check_prefix(prefix: &[String]) -> Result<(), StoreError> {
    validate_prefix(prefix).map_err(|e| StoreError::Invalid(format!("prefix: {e}")))
}

/// Whether `namespace` starts with `prefix`.
pub(crate) fn has_prefix(namespace: &[String], prefix: &[String]) -> bool {
    namespace.len() >= prefix.len() && namespace[..prefix.len()] == *prefix
}

/// Whether an item's value matches every equality in `filter`.
pub(crate) fn matches(value: &Map<String, Value>, filter: &Map<String, Value>) -> bool {
    filter
        .iter()
        .all(|(field, want)| value.get(field) == Some(want))
}

/// Pages through items given namespace by namespace (each namespace's
/// items sorted by key), keeping those matching the filter.
pub(crate) struct Pager<'q> {
    search: &'q ItemSearch,
    skipped: usize,
    out: Vec<Item>,
}

impl<'q> Pager<'q> {
    pub(crate) fn new(search: &'q ItemSearch) -> Self {
        Pager {
            search,
            skipped: 0,
            out: Vec::new(),
        }
    }

    /// Whether the page is full; later namespaces need not be read.
    pub(crate) fn full(&self) -> bool {
        self.out.len() >= self.search.limit
    }

    /// Offers one item.
    pub(crate) fn offer(&mut self, item: &Item) {
        if self.full() || !matches(&item.value, &self.search.filter) {
            return;
        }
        if self.skipped < self.search.offset {
            self.skipped += 1;
        } else {
            self.out.push(item.clone());
        }
    }

    pub(crate) fn finish(self) -> Vec<Item> {
        self.out
    }
}

/// The namespaces a listing returns, from every namespace that holds
/// items: prefix and suffix matched, cut to `max_depth`, deduplicated,
/// sorted, then paged.
pub(crate) fn list_namespaces(
    all: impl IntoIterator<Item = Vec<String>>,
    query: &NamespaceQuery,
) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = all
        .into_iter()
        .filter(|ns| has_prefix(ns, &query.prefix))
        .filter(|ns| ns.len() >= query.suffix.len() && ns.ends_with(&query.suffix))
        .map(|mut ns| {
            if let Some(depth) = query.max_depth {
                ns.truncate(depth);
            }
            ns
        })
        .collect();
    found.sort();
    found.dedup();
    found
        .into_iter()
        .skip(query.offset)
        .take(query.limit)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn ns(labels: &[&str]) -> Vec<String> {
        labels.iter().map(|l| (*l).to_owned()).collect()
    }

    #[test]
    fn listing_cuts_dedups_and_pages() {
        let all = vec![
            ns(&["a", "u1", "prefs"]),
            ns(&["a", "u2"]),
            ns(&["a", "u1", "notes"]),
            ns(&["b", "u1", "prefs"]),
        ];
        let query = NamespaceQuery {
            prefix: ns(&["a"]),
            max_depth: Some(2),
            ..NamespaceQuery::default()
        };
        assert_eq!(
            list_namespaces(all.clone(), &query),
            vec![ns(&["a", "u1"]), ns(&["a", "u2"])]
        );
        let query = NamespaceQuery {
            suffix: ns(&["prefs"]),
            offset: 1,
            ..NamespaceQuery::default()
        };
        assert_eq!(
            list_namespaces(all, &query),
            vec![ns(&["b", "u1", "prefs"])]
        );
    }

    #[test]
    fn filter_is_equality_on_top_level_fields() {
        let value = json!({"kind": "pref", "n": 1})
            .as_object()
            .cloned()
            .unwrap();
        let want = |v: Value| v.as_object().cloned().unwrap();
        assert!(matches(&value, &Map::new()));
        assert!(matches(&value, &want(json!({"kind": "pref"}))));
        assert!(!matches(&value, &want(json!({"kind": "pref", "n": 2}))));
        assert!(!matches(&value, &want(json!({"missing": null}))));
    }

    #[test]
    fn prefix_is_label_wise() {
        assert!(has_prefix(&ns(&["a", "b"]), &ns(&["a"])));
        assert!(!has_prefix(&ns(&["ab"]), &ns(&["a"])));
        assert!(has_prefix(&ns(&["a"]), &[]));
    }
}
