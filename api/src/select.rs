//! `select`: the fields a read answers with, as the SDKs' `select`
//! options ask (searches of assistants, threads and crons, a thread's
//! runs, its state and history). Every field when absent; a field the
//! resource does not have is a 422 naming it. A thread state's `values`
//! may be narrowed to some keys with `values.<key>`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::{ApiError, query_list};

/// A checked `select`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Select {
    /// The top-level fields kept (`None`: all).
    fields: Option<Vec<String>>,
    /// The `values` keys kept, when `values.<key>` narrowed them.
    values: Option<Vec<String>>,
}

impl Select {
    /// Checks `select` against the fields of `what` (`fields`); with
    /// `values_keys`, `values.<key>` may name keys of its `values`.
    pub fn parse(
        select: Option<&[String]>,
        fields: &[String],
        what: &str,
        values_keys: bool,
    ) -> Result<Self, ApiError> {
        let Some(select) = select else {
            return Ok(Select::default());
        };
        let mut kept = Vec::new();
        let mut values = Vec::new();
        for field in select {
            match field.strip_prefix("values.") {
                Some(key) if values_keys && !key.is_empty() => values.push(key.to_owned()),
                _ if fields.contains(field) => kept.push(field.clone()),
                _ => {
                    return Err(ApiError::unprocessable(format!(
                        "select: '{field}' is not a field of {what}; expected one of {}{}",
                        fields.join(", "),
                        if values_keys { " or values.<key>" } else { "" }
                    )));
                }
            }
        }
        // `values` whole wins over some of its keys.
        let values = (!values.is_empty() && !kept.iter().any(|f| f == "values")).then(|| {
            kept.push("values".to_owned());
            values
        });
        Ok(Select {
            fields: Some(kept),
            values,
        })
    }

    /// Reads a query string's `select` (repeated, or comma-separated).
    pub fn from_query(query: Option<&str>) -> Option<Vec<String>> {
        let fields = query_list(query, "select");
        (!fields.is_empty()).then_some(fields)
    }

    /// `item` with the selected fields only.
    pub fn apply(&self, item: &impl Serialize) -> Value {
        let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
        if let (Some(fields), Value::Object(map)) = (&self.fields, &mut value) {
            map.retain(|key, _| fields.contains(key));
            if let (Some(keys), Some(Value::Object(values))) = (&self.values, map.get_mut("values"))
            {
                values.retain(|key, _| keys.contains(key));
            }
        }
        value
    }

    /// Each of `items` with the selected fields only.
    pub fn apply_all<T: Serialize>(&self, items: &[T]) -> Vec<Value> {
        items.iter().map(|item| self.apply(item)).collect()
    }
}

/// The fields of the wire type `T`, as its schema names them (so a
/// field added to the type can be selected at once).
pub fn fields_of<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use deepfleet_proto::api::ThreadState;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn fields_are_kept_and_values_narrowed() {
        let fields = fields_of::<ThreadState>();
        assert!(
            fields.contains(&"parent_checkpoint".to_owned()),
            "{fields:?}"
        );
        let state = json!({"values": {"messages": [1], "files": {}}, "next": [], "metadata": {}});
        let all = Select::parse(None, &fields, "a thread state", true).unwrap();
        assert_eq!(all.apply(&state), state);
        let some = strings(&["values.messages", "next"]);
        let select = Select::parse(Some(&some), &fields, "a thread state", true).unwrap();
        assert_eq!(
            select.apply(&state),
            json!({"values": {"messages": [1]}, "next": []})
        );
        let whole = strings(&["values", "values.messages"]);
        let select = Select::parse(Some(&whole), &fields, "a thread state", true).unwrap();
        assert_eq!(select.apply(&state)["values"]["files"], json!({}));
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let refused = Select::parse(
            Some(&strings(&["nope"])),
            &strings(&["a"]),
            "a thing",
            false,
        )
        .unwrap_err();
        assert!(refused.detail.contains("nope"), "{}", refused.detail);
        let narrowed = strings(&["values.x"]);
        assert!(Select::parse(Some(&narrowed), &strings(&["values"]), "a thing", false).is_err());
        assert_eq!(
            Select::from_query(Some("limit=1&select=a,b&select=c")),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(Select::from_query(Some("limit=1")), None);
    }
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod router_tests;
