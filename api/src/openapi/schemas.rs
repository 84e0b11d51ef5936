//! The schemas of bodies, answers and query strings, generated from the
//! wire types' `JsonSchema` derives into `components.schemas`.

use deepfleet_proto::api::ErrorResponse;
use schemars::generate::{Contract, SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

/// The schemas of bodies (as they are read) and of answers (as they are
/// written), collected into `components.schemas`.
pub(super) struct Schemas {
    pub(super) requests: SchemaGenerator,
    pub(super) responses: SchemaGenerator,
    inline: SchemaGenerator,
}

impl Schemas {
    pub(super) fn new() -> Self {
        let settings = |contract: Contract, inline: bool| {
            let mut s = SchemaSettings::draft2020_12();
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
            s.contract = contract;
            s.inline_subschemas = inline;
            s.into_generator()
        };
        Schemas {
            requests: settings(Contract::Deserialize, false),
            responses: settings(Contract::Serialize, false),
            inline: settings(Contract::Deserialize, true),
        }
    }

    pub(super) fn request<T: JsonSchema>(&mut self) -> Option<Schema> {
        Some(self.requests.subschema_for::<T>())
    }

    pub(super) fn response<T: JsonSchema>(&mut self) -> Schema {
        self.responses.subschema_for::<T>()
    }

    /// The query parameters of the query-string type `T`: one per field.
    /// A query value is absent rather than `null`, so `null` is dropped
    /// from their types and defaults.
    pub(super) fn query<T: JsonSchema>(&mut self) -> Vec<Value> {
        let root = self.inline.root_schema_for::<T>();
        let required: Vec<&str> = root
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(properties) = root.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        properties
            .iter()
            .map(|(name, schema)| {
                let mut schema = schema.clone();
                let description = schema
                    .as_object_mut()
                    .and_then(|s| s.remove("description"))
                    .unwrap_or(Value::Null);
                drop_null_type(&mut schema);
                let mut param = json!({
                    "name": name,
                    "in": "query",
                    "required": required.contains(&name.as_str()),
                    "schema": schema,
                });
                if let Some(object) = param.as_object_mut()
                    && !description.is_null()
                {
                    object.insert("description".into(), description);
                }
                param
            })
            .collect()
    }

    /// Every collected definition, with `ErrorResponse` (every refusal's
    /// body). A name both contracts describe is kept once: the tests
    /// check that both describe it alike.
    pub(super) fn into_components(mut self) -> Map<String, Value> {
        self.responses.subschema_for::<ErrorResponse>();
        let mut all = self.requests.take_definitions(true);
        for (name, schema) in self.responses.take_definitions(true) {
            all.entry(name).or_insert(schema);
        }
        all
    }
}

pub(super) fn drop_null_type(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut()
        && object.get("default") == Some(&Value::Null)
    {
        object.remove("default");
    }
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema["type"] = only;
        }
    }
}
