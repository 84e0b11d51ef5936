//! The two rules every search and list route of the Agent Server shares:
//! a `metadata` filter matches when the record carries each given key
//! with the given value, and a page is `offset` records skipped, then at
//! most `limit` (10 when unset).

use serde_json::{Map, Value};

/// The page size when a request names none, as the reference's default.
pub const DEFAULT_LIMIT: usize = 10;

/// Whether `metadata` holds every key of `filter` with the same value; no
/// filter matches everything.
pub fn metadata_matches(
    filter: Option<&Map<String, Value>>,
    metadata: &Map<String, Value>,
) -> bool {
    filter.is_none_or(|f| f.iter().all(|(k, v)| metadata.get(k) == Some(v)))
}

/// The page of `items` that `offset` and `limit` select.
pub fn page<T>(items: Vec<T>, offset: Option<usize>, limit: Option<usize>) -> Vec<T> {
    items
        .into_iter()
        .skip(offset.unwrap_or(0))
        .take(limit.unwrap_or(DEFAULT_LIMIT))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_filter_matches_records_holding_each_of_its_pairs() {
        let metadata = map(json!({"team": "a", "tier": 2}));
        assert!(metadata_matches(None, &metadata));
        assert!(metadata_matches(
            Some(&map(json!({"team": "a"}))),
            &metadata
        ));
        assert!(!metadata_matches(
            Some(&map(json!({"team": "b"}))),
            &metadata
        ));
        assert!(!metadata_matches(
            Some(&map(json!({"owner": "a"}))),
            &metadata
        ));
    }

    #[test]
    fn a_page_skips_then_takes_with_a_default_limit() {
        let items: Vec<usize> = (0..25).collect();
        assert_eq!(page(items.clone(), None, None), (0..10).collect::<Vec<_>>());
        assert_eq!(
            page(items.clone(), Some(20), None),
            (20..25).collect::<Vec<_>>()
        );
        assert_eq!(page(items, Some(3), Some(2)), vec![3, 4]);
    }
}
