//! A thread's time to live (`ttl`): how the SDKs send it and how the
//! Thread resource shows it.
//!
//! The Python SDK folds `threads.create(ttl=30)` into
//! `{"ttl": 30, "strategy": "delete"}`; the API also takes the bare
//! number. Both are read into one [`ThreadTtl`], which answers always in
//! the object form. A value that is not a positive number of minutes, or
//! names another strategy, is refused while the body is read, so the 422
//! names the field.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, de::Error as _};
use serde_json::{Map, Value};

/// A thread's time to live.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct ThreadTtl {
    /// Minutes after the thread's last update (a run's start, a PATCH)
    /// at which it is deleted; a busy thread waits until it is idle.
    pub ttl: f64,
    /// What happens then (a request may leave it out: `delete`).
    pub strategy: TtlStrategy,
}

/// What a thread's time to live does when it runs out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TtlStrategy {
    /// Deletes the thread with its runs, as `DELETE /threads/{id}`.
    #[default]
    Delete,
}

impl ThreadTtl {
    /// A time to live of `minutes`, or why it is none.
    fn minutes(minutes: &Value) -> Result<f64, String> {
        match minutes.as_f64() {
            Some(m) if m.is_finite() && m > 0.0 => Ok(m),
            _ => Err(format!(
                "ttl must be a positive number of minutes, not {minutes}"
            )),
        }
    }

    /// Reads the number or the object the SDKs send.
    fn from_sent(sent: &Value) -> Result<Self, String> {
        match sent {
            Value::Number(_) => Ok(ThreadTtl {
                ttl: Self::minutes(sent)?,
                strategy: TtlStrategy::Delete,
            }),
            Value::Object(fields) => Self::from_fields(fields),
            other => Err(format!(
                "ttl must be a number of minutes or {{\"ttl\": minutes, \"strategy\": \"delete\"}}, not {other}"
            )),
        }
    }

    fn from_fields(fields: &Map<String, Value>) -> Result<Self, String> {
        let ttl = fields
            .get("ttl")
            .ok_or_else(|| "ttl.ttl is required: a positive number of minutes".to_owned())?;
        let strategy = match fields.get("strategy") {
            None | Some(Value::Null) => TtlStrategy::Delete,
            Some(Value::String(s)) if s == "delete" => TtlStrategy::Delete,
            Some(other) => {
                return Err(format!(
                    "ttl.strategy must be \"delete\" (the only strategy), not {other}"
                ));
            }
        };
        Ok(ThreadTtl {
            ttl: Self::minutes(ttl).map_err(|e| format!("ttl.{e}"))?,
            strategy,
        })
    }
}

impl<'de> Deserialize<'de> for ThreadTtl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let sent = Value::deserialize(deserializer)?;
        ThreadTtl::from_sent(&sent).map_err(D::Error::custom)
    }
}

/// Reads a field that may be absent (the outer `None`, by
/// `#[serde(default)]`), null (`Some(None)`) or a value: a PATCH tells
/// "remove" from "keep" this way.
pub(crate) fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The schema of a `ttl` as sent: minutes, the object, or null.
pub(crate) fn ttl_sent_schema(generator: &mut SchemaGenerator) -> Schema {
    let object = generator.subschema_for::<ThreadTtl>();
    json_schema!({
        "description": "Minutes after the thread's last update at which it is deleted, alone or as {\"ttl\": minutes, \"strategy\": \"delete\"}; null: none.",
        "anyOf": [
            {"type": "number", "exclusiveMinimum": 0},
            object,
            {"type": "null"}
        ]
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn read(sent: Value) -> Result<ThreadTtl, String> {
        serde_json::from_value(sent).map_err(|e| e.to_string())
    }

    #[test]
    fn minutes_and_the_object_read_alike() {
        let expected = ThreadTtl {
            ttl: 30.0,
            strategy: TtlStrategy::Delete,
        };
        assert_eq!(read(json!(30)), Ok(expected));
        assert_eq!(read(json!({"ttl": 30, "strategy": "delete"})), Ok(expected));
        assert_eq!(read(json!({"ttl": 30})), Ok(expected));
        assert_eq!(
            serde_json::to_value(expected).unwrap(),
            json!({"ttl": 30.0, "strategy": "delete"})
        );
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        for (sent, says) in [
            (json!(0), "positive number"),
            (json!(-5), "positive number"),
            (json!("30"), "number of minutes"),
            (json!(true), "number of minutes"),
            (json!({"ttl": "x"}), "ttl.ttl must be"),
            (json!({"ttl": 0, "strategy": "delete"}), "ttl.ttl must be"),
            (json!({"strategy": "delete"}), "ttl.ttl is required"),
            (json!({"ttl": 5, "strategy": "keep_latest"}), "ttl.strategy"),
        ] {
            let error = read(sent.clone()).unwrap_err();
            assert!(error.contains(says), "{sent}: {error}");
        }
    }
}
