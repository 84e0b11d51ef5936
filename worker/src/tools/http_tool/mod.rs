//! An HTTP tool an agent spec declares (`http_tools`): a call's arguments
//! are checked against the declared JSON Schema before any request, the
//! request is built from the URL template ([`request`]), the declared
//! headers and fields are resolved from secrets, the run's context or the
//! thread's state ([`super::value_source`]), it is sent ([`transport`]),
//! and the answer becomes the result ([`answer`]). Every failure is a
//! result the model reads; none fails the step.

mod answer;
mod request;
mod transport;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_model::ToolSpec;
use deepfleet_proto::http_tool::HttpToolSpec;
use serde_json::{Map, Value};

use super::value_source::{resolve, resolve_text};
use super::{DynTool, ToolError, ToolOutput, ToolResult};
use crate::context::ToolView;

pub use answer::STATE_UPDATE;

/// A declared HTTP tool, its schemas compiled.
pub struct HttpTool {
    spec: HttpToolSpec,
    arguments: jsonschema::Validator,
    /// The state fields an answer may set, each with its `state_schema`
    /// property's validator when the schema has one.
    state_fields: BTreeMap<String, Option<jsonschema::Validator>>,
}

impl HttpTool {
    /// The tool `spec` declares, for an agent whose custom state follows
    /// `state_schema`; the error says which schema does not compile.
    pub fn new(spec: HttpToolSpec, state_schema: Option<&Value>) -> Result<Arc<Self>, String> {
        let arguments = jsonschema::validator_for(&spec.parameters)
            .map_err(|e| format!("http tool '{}': parameters: {e}", spec.name))?;
        let mut state_fields = BTreeMap::new();
        for field in &spec.updates_state {
            let property = state_schema
                .and_then(|s| s.get("properties"))
                .and_then(|p| p.get(field));
            let validator = property
                .map(jsonschema::validator_for)
                .transpose()
                .map_err(|e| format!("state_schema.properties.{field}: {e}"))?;
            state_fields.insert(field.clone(), validator);
        }
        Ok(Arc::new(HttpTool {
            spec,
            arguments,
            state_fields,
        }))
    }

    /// The call's arguments, checked against the schema.
    fn arguments(&self, raw: &str) -> Result<Map<String, Value>, String> {
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        let value: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        if let Some(error) = self.arguments.iter_errors(&value).next() {
            let at = error.instance_path().to_string();
            return Err(if at.is_empty() {
                error.to_string()
            } else {
                format!("{at}: {error}")
            });
        }
        match value {
            Value::Object(map) => Ok(map),
            _ => Err("the arguments must be a JSON object".to_owned()),
        }
    }

    async fn call(&self, view: &ToolView<'_>, args: Map<String, Value>) -> Result<String, String> {
        let model = |e: ToolError| e.to_string();
        let mut fields = Map::new();
        for (name, source) in &self.spec.fields {
            fields.insert(name.clone(), resolve(source, view).map_err(model)?);
        }
        let mut headers = Vec::new();
        for (name, source) in &self.spec.headers {
            headers.push((name.clone(), resolve_text(source, view).map_err(model)?));
        }
        let request = request::build(&self.spec, args, fields)?;
        let answer = transport::send(&self.spec, &request, &headers).await?;
        answer::read(&self.spec.name, answer, &self.state_fields, view.state())
    }
}

#[async_trait]
impl DynTool for HttpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.spec.name.clone(),
            description: self.spec.description.clone(),
            parameters: self.spec.parameters.clone().into(),
        }
    }

    fn mutated_path(&self, _raw_args: &str) -> Option<String> {
        None
    }

    async fn call_json(&self, view: &ToolView<'_>, raw_args: &str) -> ToolResult {
        let name = &self.spec.name;
        let args = self.arguments(raw_args).map_err(|reason| {
            ToolError::Model(format!(
                "Error: invalid arguments for tool `{name}`: {reason}. Call it again with a JSON object matching its schema."
            ))
        })?;
        match self.call(view, args).await {
            Ok(text) => Ok(ToolOutput::Text(text)),
            Err(e) if e.starts_with("Error: ") => Err(ToolError::Model(e)),
            Err(e) => Err(ToolError::Model(format!("Error: {name}: {e}"))),
        }
    }
}
