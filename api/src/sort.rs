//! A search's `sort_by` and `sort_order`, as the SDKs send them for
//! threads and assistants: any of the fields a resource sorts by, either
//! way. A sorted search reads every match first (at most
//! [`MAX_SORTED`]), then sorts and pages; an unsorted one pages as it
//! walks.

use std::cmp::Ordering;

use serde_json::Value;

use super::error::ApiError;

/// The most matches a sorted search sorts; past them it is refused, so a
/// search never holds a tenant's every record.
pub const MAX_SORTED: usize = 10_000;

/// A checked sort.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sort {
    field: String,
    descending: bool,
}

impl Sort {
    /// `None` when the request names neither; `sort_order` alone sorts by
    /// `default_field`. A field not in `fields`, or an order other than
    /// `asc`/`desc`, is a 422.
    pub fn parse(
        sort_by: Option<&str>,
        sort_order: Option<&str>,
        fields: &[&str],
        default_field: &str,
    ) -> Result<Option<Sort>, ApiError> {
        if sort_by.is_none() && sort_order.is_none() {
            return Ok(None);
        }
        let field = sort_by.unwrap_or(default_field);
        if !fields.contains(&field) {
            return Err(ApiError::unprocessable(format!(
                "sort_by must be one of {}, not '{field}'",
                fields.join(", ")
            )));
        }
        let descending = match sort_order {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(other) => {
                return Err(ApiError::unprocessable(format!(
                    "sort_order must be asc or desc, not '{other}'"
                )));
            }
        };
        Ok(Some(Sort {
            field: field.to_owned(),
            descending,
        }))
    }

    /// The field it sorts by.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// Sorts resources (as JSON) by the field; a missing or null one
    /// sorts last either way. Times sort as their RFC 3339 text does.
    pub fn sort(&self, items: &mut [Value]) {
        items.sort_by(|a, b| match (key(a, &self.field), key(b, &self.field)) {
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

/// A field's sort key: its text, or a number's value as sortable text.
fn key(item: &Value, field: &str) -> Option<String> {
    match item.get(field)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => n.as_f64().map(|n| format!("{n:032.6}")),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_either_way_with_missing_fields_last() {
        let sort = Sort::parse(Some("name"), Some("asc"), &["name"], "name")
            .unwrap()
            .unwrap();
        let items = vec![json!({"name": "b"}), json!({}), json!({"name": "a"})];
        let page = sort.page(items.clone(), 0, 10).unwrap();
        assert_eq!(
            page,
            vec![json!({"name": "a"}), json!({"name": "b"}), json!({})]
        );
        let down = Sort::parse(None, Some("desc"), &["name"], "name")
            .unwrap()
            .unwrap();
        assert_eq!(down.page(items, 1, 1).unwrap(), vec![json!({"name": "a"})]);
        assert_eq!(Sort::parse(None, None, &["name"], "name").unwrap(), None);
        assert!(Sort::parse(Some("secret"), None, &["name"], "name").is_err());
        assert!(Sort::parse(None, Some("up"), &["name"], "name").is_err());
    }
}

#[cfg(test)]
#[path = "sort_tests.rs"]
mod router_tests;
