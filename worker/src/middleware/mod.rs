//! Harness middleware, composed like tower layers.
//!
//! Each middleware may contribute tools and a prompt section, run a hook
//! before the model call, wrap the model call, and wrap each tool call.
//! Wrapping hooks get the request and a `next` to call (or not: a layer may
//! short-circuit). The stack's first entry is the outermost layer; the
//! order is fixed in one place, [`crate::agent::Agent::build`], and written
//! up in `docs/middleware.md`.

pub mod async_subagents;
pub mod filesystem;
pub mod mcp_tools;
pub mod memory;
#[cfg(test)]
mod order_tests;
pub mod patch_tool_calls;
pub mod planning;
pub mod profile;
pub mod prompt_template;
pub mod sandbox;
pub mod skills;
pub mod subagents;
pub mod summarization;
#[cfg(test)]
mod test_support;

use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_model::{ModelClient, ModelRequest, ModelResponse};
use deepfleet_proto::ToolCall;

use crate::context::{StepContext, ToolView};
use crate::error::StepError;
use crate::prompt::PromptSection;
use crate::tools::{DynTool, ToolError, ToolRegistry, ToolResult};

#[cfg(test)]
pub(crate) use test_support::test_cx;

/// A layer of the harness.
#[async_trait]
pub trait Middleware: Send + Sync {
    /// A short name for logs and docs.
    fn name(&self) -> &'static str;

    /// Tools this middleware adds, in the order offered to the model.
    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        Vec::new()
    }

    /// This middleware's section of the system prompt.
    fn prompt(&self, _cx: &StepContext) -> Option<PromptSection> {
        None
    }

    /// Runs before the request is built (e.g. to load memory).
    async fn before_model(&self, _cx: &mut StepContext) -> Result<(), StepError> {
        Ok(())
    }

    /// Wraps the model call.
    async fn wrap_model(
        &self,
        request: ModelRequest,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        next.run(request, cx).await
    }

    /// Wraps one tool call.
    async fn wrap_tool(
        &self,
        call: &ToolCall,
        ctx: &ToolView<'_>,
        next: ToolNext<'_>,
    ) -> ToolResult {
        next.run(call, ctx).await
    }
}

/// The rest of the model-call chain. `Copy`, so a layer can call the rest
/// again (the overflow retry does).
#[derive(Clone, Copy)]
pub struct ModelNext<'a> {
    rest: &'a [Arc<dyn Middleware>],
    model: &'a dyn ModelClient,
}

impl<'a> ModelNext<'a> {
    /// The chain over `stack`, ending in `model`.
    pub fn new(stack: &'a [Arc<dyn Middleware>], model: &'a dyn ModelClient) -> Self {
        ModelNext { rest: stack, model }
    }

    /// Passes the request to the next layer, or to the model: streamed to
    /// `cx.deltas` when the run is followed, else a plain completion.
    pub async fn run(
        self,
        request: ModelRequest,
        cx: &StepContext,
    ) -> Result<ModelResponse, StepError> {
        match self.rest.split_first() {
            Some((layer, rest)) => {
                let next = ModelNext {
                    rest,
                    model: self.model,
                };
                layer.wrap_model(request, cx, next).await
            }
            None => Ok(match &cx.deltas {
                Some(sink) => self.model.stream(&request, sink.as_ref()).await?,
                None => self.model.complete(&request).await?,
            }),
        }
    }
}

/// The rest of a tool-call chain.
pub struct ToolNext<'a> {
    rest: &'a [Arc<dyn Middleware>],
    tools: &'a ToolRegistry,
}

impl<'a> ToolNext<'a> {
    /// The chain over `stack`, ending in the tool from `tools`.
    pub fn new(stack: &'a [Arc<dyn Middleware>], tools: &'a ToolRegistry) -> Self {
        ToolNext { rest: stack, tools }
    }

    /// The agent's own tools (MCP tools are not among them).
    pub fn tools(&self) -> &'a ToolRegistry {
        self.tools
    }

    /// Passes the call to the next layer, or runs the tool.
    pub async fn run(self, call: &ToolCall, ctx: &ToolView<'_>) -> ToolResult {
        match self.rest.split_first() {
            Some((layer, rest)) => {
                let next = ToolNext {
                    rest,
                    tools: self.tools,
                };
                layer.wrap_tool(call, ctx, next).await
            }
            None => match self.tools.get(&call.name) {
                Some(tool) => tool.call_json(ctx, &call.arguments).await,
                None => Err(ToolError::Model(unknown_tool(&call.name, self.tools))),
            },
        }
    }
}

/// The answer to a call of a tool the agent does not have; a call with no
/// name at all (a provider that dropped it) is told so.
fn unknown_tool(name: &str, tools: &ToolRegistry) -> String {
    let available = tools
        .names()
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if name.is_empty() {
        return format!("Error: the tool call has no tool name, try one of [{available}].");
    }
    format!("Error: {name} is not a valid tool, try one of [{available}].")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Issue #14: a call a provider sent without a name is answered as
    /// such, not as a call of a tool named ``.
    #[test]
    fn a_call_without_a_name_is_told_it_has_none() {
        let tools = ToolRegistry::default();
        assert_eq!(
            unknown_tool("", &tools),
            "Error: the tool call has no tool name, try one of []."
        );
        assert_eq!(
            unknown_tool("frobnicate", &tools),
            "Error: frobnicate is not a valid tool, try one of []."
        );
    }
}
