//! A search's `sort_by` and `sort_order`, as the SDKs send them for
//! threads, assistants and crons (read into the typed fields of
//! `deepfleet_proto::api::search`, so only a field the resource sorts by
//! gets here). A sorted search reads every match first (at most
//! [`MAX_SORTED`]), then sorts and pages; an unsorted one pages as it
//! walks.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use deepfleet_proto::api::SortOrder;
use serde_json::Value;

use crate::error::ApiError;

/// The most matches a sorted search sorts; past them it is refused, so a
/// search never holds a tenant's every record.
pub const MAX_SORTED: usize = 10_000;

/// A resource field to sort by, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    field: &'static str,
    descending: bool,
}

impl Sort {
    /// A sort by `field` (as the resource's JSON names it), descending
    /// unless `order` is `asc`.
    pub fn new(field: &'static str, order: Option<SortOrder>) -> Sort {
        Sort {
            field,
            descending: order.unwrap_or_default() == SortOrder::Desc,
        }
    }

    /// The sort a search asks for: `None` when it names neither a field
    /// nor an order; an order alone sorts by the field type's default.
    pub fn asked<F: Default>(
        field: Option<F>,
        order: Option<SortOrder>,
        name: fn(F) -> &'static str,
    ) -> Option<Sort> {
        if field.is_none() && order.is_none() {
            return None;
        }
        Some(Sort::new(name(field.unwrap_or_default()), order))
    }

    /// The field it sorts by.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// Sorts resources (as JSON) by the field; a missing or null one
    /// sorts last either way, and ties keep their order.
    pub fn sort(&self, items: &mut [Value]) {
        items.sort_by(|a, b| match (key(a, self.field), key(b, self.field)) {
            (Some(x), Some(y)) if self.descending => y.cmp(&x),
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        });
    }

    /// `items` sorted, then the page `offset`/`limit` of them; a 422 past
    /// [`MAX_SORTED`].
    pub fn page(
        &self,
        mut items: Vec<Value>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<Value>, ApiError> {
        if items.len() > MAX_SORTED {
            return Err(ApiError::unprocessable(format!(
                "more than {MAX_SORTED} matches to sort: narrow the search, or leave sort_by out"
            )));
        }
        self.sort(&mut items);
        Ok(items.into_iter().skip(offset).take(limit).collect())
    }
}

/// What a field sorts as: every sortable field is a time or text.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// An RFC 3339 time, compared as the instant it names: its text
    /// would not sort so (`...00Z` after `...00.5Z`).
    Time(DateTime<Utc>),
    /// Any other value, as its text.
    Text(String),
}

/// A field's sort key; none when it is missing or null.
fn key(item: &Value, field: &str) -> Option<Key> {
    match item.get(field)? {
        Value::Null => None,
        Value::String(text) => Some(match DateTime::parse_from_rfc3339(text) {
            Ok(time) => Key::Time(time.to_utc()),
            Err(_) => Key::Text(text.clone()),
        }),
        other => Some(Key::Text(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::api::ThreadSortBy;
    use serde_json::json;

    #[test]
    fn sorts_either_way_with_missing_fields_last() {
        let sort = Sort::new("name", Some(SortOrder::Asc));
        let items = vec![json!({"name": "b"}), json!({}), json!({"name": "a"})];
        let page = sort.page(items.clone(), 0, 10).unwrap();
        assert_eq!(
            page,
            vec![json!({"name": "a"}), json!({"name": "b"}), json!({})]
        );
        let down = Sort::new("name", None);
        assert_eq!(down.page(items, 1, 1).unwrap(), vec![json!({"name": "a"})]);
    }

    #[test]
    fn an_order_alone_sorts_by_the_default_field() {
        let asked = |field, order| Sort::asked(field, order, ThreadSortBy::as_str);
        assert_eq!(asked(None, None), None);
        assert_eq!(
            asked(None, Some(SortOrder::Asc)),
            Some(Sort::new("created_at", Some(SortOrder::Asc)))
        );
        assert_eq!(
            asked(Some(ThreadSortBy::Status), None),
            Some(Sort::new("status", Some(SortOrder::Desc)))
        );
    }

    #[test]
    fn times_sort_as_instants_whatever_their_precision() {
        let at = |t: &str| json!({"at": t});
        let mut items = vec![
            at("2024-01-01T00:00:00Z"),
            at("2024-01-01T00:00:00.500Z"),
            at("2024-01-01T00:00:00.123456789Z"),
            at("2024-01-01T01:00:00+02:00"),
        ];
        Sort::new("at", Some(SortOrder::Asc)).sort(&mut items);
        assert_eq!(
            items,
            vec![
                at("2024-01-01T01:00:00+02:00"),
                at("2024-01-01T00:00:00Z"),
                at("2024-01-01T00:00:00.123456789Z"),
                at("2024-01-01T00:00:00.500Z"),
            ]
        );
    }
}

#[cfg(test)]
#[path = "sort_tests.rs"]
mod router_tests;
