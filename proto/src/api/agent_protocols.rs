//! The other protocols each assistant is served over: A2A
//! (`POST /a2a/{assistant_id}`, its agent card) and MCP (`/mcp`). Both
//! speak JSON-RPC 2.0, whose envelope is described here; what the
//! methods carry is each protocol's own (A2A v0.3, MCP streamable HTTP).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `GET /.well-known/agent-card.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentCardQuery {
    /// The assistant (or graph name) whose card is asked for.
    pub assistant_id: String,
}

/// A JSON-RPC 2.0 request, as `POST /a2a/{assistant_id}` and `POST /mcp`
/// take them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JsonRpcRequest {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// Echoed in the answer; absent for a notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The method: for A2A `message/send`, `message/stream`, `tasks/get`
    /// or `tasks/cancel`; for MCP `initialize`, `tools/list`,
    /// `tools/call`, ...
    pub method: String,
    /// The method's params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}
