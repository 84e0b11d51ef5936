//! [`Schema`]: a tool's JSON Schema as requests carry it: one tree shared
//! by the agent and every request that offers the tool, written out as
//! JSON once and those bytes reused by every request body.
//!
//! Tool schemas are most of a request's fixed part (several kilobytes for
//! the built-in tools); copying and serializing them per call was a
//! quarter of a step's CPU.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON Schema, cheap to clone, serialized at most once.
#[derive(Clone, Default)]
pub struct Schema(Arc<Shared>);

#[derive(Default)]
struct Shared {
    tree: Value,
    /// The tree as JSON text, made by the first request body that
    /// carries it (`None`: it could not be, and the tree is written).
    json: OnceLock<Option<Box<RawValue>>>,
}

impl Schema {
    /// Wraps `tree`.
    pub fn new(tree: Value) -> Self {
        Schema(Arc::new(Shared {
            tree,
            json: OnceLock::new(),
        }))
    }

    /// The schema as JSON text.
    fn json(&self) -> Option<&RawValue> {
        self.0
            .json
            .get_or_init(|| serde_json::value::to_raw_value(&self.0.tree).ok())
            .as_deref()
    }
}

impl Deref for Schema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.tree
    }
}

impl From<Value> for Schema {
    fn from(tree: Value) -> Self {
        Schema::new(tree)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.tree == other.0.tree
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.tree.fmt(f)
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.json() {
            Some(json) => json.serialize(serializer),
            None => self.0.tree.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Schema::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn clones_share_one_tree_and_write_the_same_json_as_the_tree() {
        let tree = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let schema = Schema::new(tree.clone());
        let copy = schema.clone();
        assert!(std::ptr::eq(&*schema, &*copy));
        let body = json!({"name": "ls", "parameters": tree});
        let written = serde_json::to_string(&json!({"name": "ls", "parameters": schema})).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&written).unwrap(), body);
        // Twice: the second time from the kept text.
        assert_eq!(
            serde_json::to_string(&copy).unwrap(),
            serde_json::to_string(&tree).unwrap()
        );
    }

    #[test]
    fn reads_back_what_it_wrote() {
        let schema = Schema::new(json!({"type": "object"}));
        let text = serde_json::to_string(&schema).unwrap();
        let read: Schema = serde_json::from_str(&text).unwrap();
        assert_eq!(read, schema);
        assert_eq!(read["type"], "object");
    }
}
