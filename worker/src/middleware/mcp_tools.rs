//! MCP servers' tools for one role: offered with each model call (the
//! servers listed through the worker's [`McpPool`], named by
//! [`crate::mcp::naming`]) and called when the model calls them. The
//! layer sits inside the filesystem layer, so large results are
//! offloaded like any tool's. A server that is down never fails the
//! step: its declared tools stay offered and each call reads why.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_model::{ModelRequest, ModelResponse};
use deepfleet_proto::hitl::InterruptOn;
use deepfleet_proto::mcp::McpServer;
use deepfleet_proto::{AgentSpec, SubagentSpec, ToolCall};
use futures::future::join_all;
use serde_json::{Map, Value};

use super::{Middleware, ModelNext, ToolNext};
use crate::context::{StepContext, ToolView};
use crate::error::StepError;
use crate::mcp::McpPool;
use crate::mcp::content::to_tool_result;
use crate::mcp::endpoint::Endpoint;
use crate::mcp::naming::{Listing, McpRoutes, offer};
use crate::tool_id::ToolId;
use crate::tool_names::ToolNames;
use crate::tools::value_source::resolve;
use crate::tools::{ToolError, ToolResult};

/// The role's MCP tools.
pub struct McpTools {
    pool: Arc<McpPool>,
    servers: BTreeMap<String, McpServer>,
    /// The subagent's tool allowlist, when it has one.
    allow: Option<Vec<String>>,
    gates: BTreeMap<String, InterruptOn>,
}

impl McpTools {
    /// The layer for `spec`'s role `role` (the main agent when `None`),
    /// or `None` when the role has no MCP servers.
    pub fn for_role(
        spec: &AgentSpec,
        role: Option<&SubagentSpec>,
        pool: &Arc<McpPool>,
    ) -> Option<Self> {
        let name = role.map(|r| r.name.as_str());
        let servers = spec.mcp_servers_for(name);
        (!servers.is_empty()).then(|| McpTools {
            pool: Arc::clone(pool),
            servers,
            allow: role.and_then(|r| r.tools.clone()),
            gates: spec.interrupt_on_for(name),
        })
    }

    /// Where the names of the role's MCP tools lead now: what its
    /// servers offer, and their aliases. With `start`, servers are
    /// started and listed where needed (a model call); without, only
    /// cached listings are read (routing a call, resolving gates).
    pub async fn routes(
        &self,
        view: &ToolView<'_>,
        builtins: &[String],
        start: bool,
    ) -> McpRoutes<'_> {
        let listed = join_all(self.servers.iter().map(|(server, config)| async move {
            let tools = match Endpoint::resolve(server, config, view) {
                Ok(endpoint) => {
                    let connection = self.pool.connection(endpoint);
                    if start {
                        connection.tools().await.map_err(|e| e.to_string())
                    } else {
                        connection
                            .cached()
                            .ok_or_else(|| "not listed yet".to_owned())
                    }
                }
                Err(e) => Err(e.to_string()),
            };
            Listing {
                server,
                config,
                tools,
            }
        }))
        .await;
        McpRoutes::new(
            offer(&listed, builtins, &self.gates),
            &self.servers,
            self.allow.as_deref(),
        )
    }

    async fn call(
        &self,
        call: &ToolCall,
        server: &str,
        tool: &str,
        view: &ToolView<'_>,
    ) -> ToolResult {
        let Some(config) = self.servers.get(server) else {
            return Err(ToolError::Model(format!(
                "Error: no MCP server `{server}`."
            )));
        };
        let mut arguments = arguments(&call.name, &call.arguments)?;
        for (field, source) in &config.arguments {
            arguments.insert(field.clone(), resolve(source, view)?);
        }
        let endpoint = Endpoint::resolve(server, config, view)?;
        let connection = self.pool.connection(endpoint);
        match connection.call(tool, arguments).await {
            Ok(result) => to_tool_result(&call.name, result),
            Err(error) => Err(ToolError::Model(format!(
                "Error: the tool `{}` (MCP server `{server}`) failed: {error}",
                call.name
            ))),
        }
    }
}

/// The model's arguments as a JSON object; empty means none.
fn arguments(name: &str, raw: &str) -> Result<Map<String, Value>, ToolError> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ToolError::Model(format!(
            "Error: invalid arguments for tool `{name}`: not a JSON object. Call it again with a JSON object matching its schema."
        ))),
        Err(e) => Err(ToolError::Model(format!(
            "Error: invalid arguments for tool `{name}`: {e}. Call it again with a JSON object matching its schema."
        ))),
    }
}

#[async_trait]
impl Middleware for McpTools {
    fn name(&self) -> &'static str {
        "mcp_tools"
    }

    async fn wrap_model(
        &self,
        mut request: ModelRequest,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        let builtins: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
        let offered = self
            .routes(&cx.tool(""), &builtins, true)
            .await
            .into_offered();
        request.tools = (request.tools.iter().cloned())
            .chain(offered.into_iter().map(|o| o.spec))
            .collect();
        next.run(request, cx).await
    }

    async fn wrap_tool(
        &self,
        call: &ToolCall,
        ctx: &ToolView<'_>,
        next: ToolNext<'_>,
    ) -> ToolResult {
        let builtins = next.tools().names();
        if builtins.contains(&call.name) {
            return next.run(call, ctx).await;
        }
        // The resolver gates are matched by (`Agent::gates`), so a call
        // reaches only the tool its gate was looked up for.
        let names = ToolNames::new(builtins, Some(self.routes(ctx, builtins, false).await));
        match names.resolve(&call.name) {
            Some(ToolId::Mcp { server, tool }) => self.call(call, &server, &tool, ctx).await,
            Some(ToolId::Builtin(_)) | None => next.run(call, ctx).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert!(arguments("t", "").unwrap().is_empty());
        assert_eq!(arguments("t", r#"{"a": 1}"#).unwrap()["a"], 1);
        for raw in ["[1]", "{not json"] {
            let Err(ToolError::Model(text)) = arguments("t", raw) else {
                panic!("expected a model error for {raw}");
            };
            assert!(
                text.starts_with("Error: invalid arguments for tool `t`"),
                "{text}"
            );
        }
    }
}
