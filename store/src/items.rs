//! Long-term items: the logic both back ends share (validation, filters,
//! paging, namespace listing) and the embedded back end's table.
//!
//! Order is the same everywhere: namespaces label by label, then keys
//! byte-wise, so a search pages identically on every store.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_proto::item::{join_namespace, validate_item_address, validate_prefix};
use deepfleet_proto::{Item, ItemSearch, NamespaceQuery};
use serde_json::{Map, Value};

use crate::StoreError;

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

/// The embedded store's items, by dot-joined namespace (string keys, so
/// the table serializes as JSON) then key.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ItemTable {
    namespaces: BTreeMap<String, BTreeMap<String, Item>>,
}

impl ItemTable {
    pub(crate) fn put(
        &mut self,
        namespace: &[String],
        key: &str,
        value: &Map<String, Value>,
        now: DateTime<Utc>,
    ) {
        let items = self
            .namespaces
            .entry(join_namespace(namespace))
            .or_default();
        let created_at = items.get(key).map_or(now, |old| old.created_at);
        items.insert(
            key.to_owned(),
            Item {
                namespace: namespace.to_vec(),
                key: key.to_owned(),
                value: value.clone(),
                created_at,
                updated_at: now,
            },
        );
    }

    pub(crate) fn get(&self, namespace: &[String], key: &str) -> Option<Item> {
        self.namespaces
            .get(&join_namespace(namespace))
            .and_then(|items| items.get(key))
            .cloned()
    }

    pub(crate) fn delete(&mut self, namespace: &[String], key: &str) {
        let joined = join_namespace(namespace);
        if let Some(items) = self.namespaces.get_mut(&joined) {
            items.remove(key);
            if items.is_empty() {
                self.namespaces.remove(&joined);
            }
        }
    }

    pub(crate) fn search(&self, search: &ItemSearch) -> Vec<Item> {
        let mut pager = Pager::new(search);
        for (namespace, items) in self.in_order() {
            if !has_prefix(namespace, &search.namespace_prefix) {
                continue;
            }
            for item in items.values() {
                pager.offer(item);
            }
            if pager.full() {
                break;
            }
        }
        pager.finish()
    }

    pub(crate) fn namespaces(&self, query: &NamespaceQuery) -> Vec<Vec<String>> {
        let all = self.in_order().into_iter().map(|(ns, _)| ns.clone());
        list_namespaces(all, query)
    }

    /// Namespaces holding items, label by label (the joined keys order
    /// `a-b` before `a.c`; labels order `["a", "c"]` first).
    fn in_order(&self) -> Vec<(&Vec<String>, &BTreeMap<String, Item>)> {
        let mut out: Vec<(&Vec<String>, &BTreeMap<String, Item>)> = self
            .namespaces
            .values()
            .filter_map(|items| items.values().next().map(|first| (&first.namespace, items)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }
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
