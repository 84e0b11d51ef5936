//! Tools: the typed [`Tool`] trait, its type-erased form and the registry.
//!
//! A tool declares its arguments as a `Deserialize + JsonSchema` type; the
//! blanket [`DynTool`] impl parses the model's raw argument string, so
//! broken JSON becomes an error message the model can read instead of a
//! failed step. Errors come in two kinds ([`ToolError`]): `Model` errors are
//! answers (a missing file, a bad path), `Fatal` ones fail the step and the
//! queue retries it.

pub mod async_tasks;
pub mod delete;
pub mod edit_file;
pub mod execute;
pub mod format;
pub mod glob;
pub mod grep;
pub mod http_tool;
pub mod ls;
pub mod read_file;
pub mod task;
pub mod value_source;
pub mod write_file;
pub mod write_todos;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_model::ToolSpec;
use deepfleet_proto::ContentBlock;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::ToolView;

/// What a tool call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// A text result.
    Text(String),
    /// Rich content (e.g. an image read from a file).
    Content(Vec<ContentBlock>),
    /// Hand the work to a subagent run; its final answer becomes this
    /// call's result when it finishes.
    Delegate {
        /// The subagent type.
        subagent: String,
        /// The task: the subagent's only user message.
        description: String,
    },
    /// Start a subagent run in the background; the call's result is the
    /// new task's id and the parent goes on at once.
    Spawn {
        /// The subagent type.
        subagent: String,
        /// The task: the subagent's only user message.
        description: String,
    },
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// An answer for the model (status `error`): the text is what it reads.
    #[error("{0}")]
    Model(String),
    /// A failure the model cannot act on: the step fails and is retried.
    #[error("tool failed: {0}")]
    Fatal(String),
}

/// The result of a tool call.
pub type ToolResult = Result<ToolOutput, ToolError>;

/// A tool with typed arguments.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// Its arguments; the JSON Schema the model sees is derived from them.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// The path a call writes, for the guard against parallel mutations of
    /// one path within a turn; `None` for read-only tools.
    fn mutated_path(&self, _args: &Self::Args) -> Option<String> {
        None
    }

    /// Runs the call.
    async fn call(&self, ctx: &ToolView<'_>, args: Self::Args) -> ToolResult;
}

/// A tool with its arguments erased to the raw JSON string.
#[async_trait]
pub trait DynTool: Send + Sync {
    /// The tool's name.
    fn name(&self) -> &str;
    /// Name, description and parameter schema, as sent to the model.
    fn spec(&self) -> ToolSpec;
    /// The path the call would mutate (see [`Tool::mutated_path`]).
    fn mutated_path(&self, raw_args: &str) -> Option<String>;
    /// Parses the arguments and runs the call.
    async fn call_json(&self, ctx: &ToolView<'_>, raw_args: &str) -> ToolResult;
}

#[async_trait]
impl<T: Tool> DynTool for T {
    fn name(&self) -> &str {
        T::NAME
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: T::NAME.to_owned(),
            description: self.description(),
            parameters: parameters_schema::<T::Args>().into(),
        }
    }

    fn mutated_path(&self, raw_args: &str) -> Option<String> {
        parse_args::<T::Args>(raw_args)
            .ok()
            .and_then(|args| Tool::mutated_path(self, &args))
    }

    async fn call_json(&self, ctx: &ToolView<'_>, raw_args: &str) -> ToolResult {
        match parse_args::<T::Args>(raw_args) {
            Ok(args) => self.call(ctx, args).await,
            Err(reason) => Err(ToolError::Model(format!(
                "Error: invalid arguments for tool `{}`: {reason}. Call it again with a JSON object matching its schema.",
                T::NAME
            ))),
        }
    }
}

/// Parses tool arguments; an empty string means no arguments.
fn parse_args<A: DeserializeOwned>(raw: &str) -> Result<A, String> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    serde_json::from_str(raw).map_err(|e| e.to_string())
}

/// The JSON Schema of a tool's arguments, without the `$schema`/`title`
/// noise providers do not need.
pub fn parameters_schema<A: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(A).to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    schema
}

/// Tools by name, in the order they are offered to the model.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    order: Vec<String>,
    tools: BTreeMap<String, Arc<dyn DynTool>>,
    /// Shared with every request that offers them; rebuilt by the
    /// changes an agent's build makes, never per step.
    specs: Arc<[ToolSpec]>,
}

impl ToolRegistry {
    /// Adds a tool; a later tool with the same name replaces the earlier
    /// one in place.
    pub fn register(&mut self, tool: Arc<dyn DynTool>) {
        let name = tool.name().to_owned();
        let spec = tool.spec();
        let mut specs = self.specs.to_vec();
        if let Some(i) = self.order.iter().position(|n| *n == name) {
            specs[i] = spec;
        } else {
            self.order.push(name.clone());
            specs.push(spec);
        }
        self.specs = specs.into();
        self.tools.insert(name, tool);
    }

    /// Whether a tool named `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Removes tools not in `allow`.
    pub fn retain(&mut self, allow: impl Fn(&str) -> bool) {
        let keep: Vec<bool> = self.order.iter().map(|n| allow(n)).collect();
        self.specs = (self.specs.iter().zip(keep))
            .filter(|(_, keep)| *keep)
            .map(|(spec, _)| spec.clone())
            .collect();
        self.order.retain(|n| allow(n));
        self.tools.retain(|n, _| allow(n));
    }

    /// Replaces the description the model sees for `name` (a harness
    /// profile's override); unknown names are ignored.
    pub fn set_description(&mut self, name: &str, description: &str) {
        if let Some(i) = self.order.iter().position(|n| n == name) {
            let mut specs = self.specs.to_vec();
            specs[i].description = description.to_owned();
            self.specs = specs.into();
        }
    }

    /// A tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name)
    }

    /// Specs in registration order; computed once, so a step never
    /// re-derives schemas, and shared, so a request copies none.
    pub fn specs(&self) -> &Arc<[ToolSpec]> {
        &self.specs
    }

    /// Tool names in registration order.
    pub fn names(&self) -> &[String] {
        &self.order
    }
}

#[cfg(test)]
mod tests;
