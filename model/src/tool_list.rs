//! [`ToolList`]: a request body's `tools` value, converted from the
//! request's tools or already written.
//!
//! An agent offers the same tools on every call, and their descriptions
//! and schemas are most of a short conversation's body: escaping them
//! into JSON again on every call was the largest single cost of writing a
//! body. The transport writes an agent's list once and hands the bytes to
//! the protocol, which puts them where its converted list would go
//! ([`crate::transport::WireProtocol::request`]).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A body's tools: converted per call, or written once per tool list.
#[derive(Debug, Clone)]
pub enum ToolList<T> {
    /// Converted from the request's tools, as a body read back from JSON
    /// always is.
    Listed(Vec<T>),
    /// The same list as this protocol writes it, shared by an agent's
    /// calls.
    Written(Arc<RawValue>),
}

impl<T> ToolList<T> {
    /// `written` when there is one, else the list `convert` makes.
    pub fn written_or(written: Option<Arc<RawValue>>, convert: impl FnOnce() -> Vec<T>) -> Self {
        match written {
            Some(written) => ToolList::Written(written),
            None => ToolList::Listed(convert()),
        }
    }

    /// No tools: the field is left out of the body. A written list is
    /// never empty (the transport writes none for a request without
    /// tools).
    pub fn is_empty(&self) -> bool {
        match self {
            ToolList::Listed(tools) => tools.is_empty(),
            ToolList::Written(_) => false,
        }
    }
}

impl<T: DeserializeOwned> ToolList<T> {
    /// The tools as values, a written list read back.
    ///
    /// # Errors
    /// A written list that is not a list of `T`; the transport only ever
    /// writes one from a list of `T`.
    pub fn into_vec(self) -> Result<Vec<T>, serde_json::Error> {
        match self {
            ToolList::Listed(tools) => Ok(tools),
            ToolList::Written(written) => serde_json::from_str(written.get()),
        }
    }
}

impl<T> Default for ToolList<T> {
    fn default() -> Self {
        ToolList::Listed(Vec::new())
    }
}

impl<T: PartialEq + Serialize> PartialEq for ToolList<T> {
    /// Equal when they write the same JSON.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ToolList::Listed(a), ToolList::Listed(b)) => a == b,
            (ToolList::Written(a), ToolList::Written(b)) => a.get() == b.get(),
            _ => serde_json::to_string(self).ok() == serde_json::to_string(other).ok(),
        }
    }
}

impl<T: Serialize> Serialize for ToolList<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolList::Listed(tools) => tools.serialize(serializer),
            ToolList::Written(written) => written.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ToolList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(ToolList::Listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Tool {
        name: String,
    }

    #[test]
    fn a_written_list_writes_its_bytes_and_reads_back_as_the_list() {
        let listed = ToolList::Listed(vec![Tool { name: "ls".into() }]);
        let bytes = serde_json::to_string(&listed).unwrap();
        let written: ToolList<Tool> =
            ToolList::Written(Arc::from(RawValue::from_string(bytes.clone()).unwrap()));
        assert_eq!(serde_json::to_string(&written).unwrap(), bytes);
        assert_eq!(written, listed);
        assert!(!written.is_empty());
        assert_eq!(
            written.into_vec().unwrap(),
            vec![Tool { name: "ls".into() }]
        );

        let read: ToolList<Tool> = serde_json::from_value(json!([{"name": "ls"}])).unwrap();
        assert_eq!(read, listed);
        assert!(ToolList::<Tool>::default().is_empty());
    }
}
