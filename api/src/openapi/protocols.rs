//! The other protocols each assistant is served over: A2A (JSON-RPC at
//! `/a2a/{assistant_id}`, its agent card) and MCP (`/mcp`). What their
//! methods carry is each protocol's own; the description gives the
//! JSON-RPC envelope.

use deepfleet_proto::api::{AgentCardQuery, JsonRpcRequest};

use super::operation::{Operation, Success, object, op};
use super::schemas::Schemas;

/// A2A and MCP.
pub(super) fn operations(s: &mut Schemas) -> Vec<Operation> {
    let envelope = s.request::<JsonRpcRequest>();
    // An MCP notification is accepted with no answer.
    let mcp = || vec![Success::JsonOrEvents(200, object()), Success::Empty(202)];
    vec![
        op(
            "post",
            "/a2a/{assistant_id}",
            "Talk to an assistant over A2A (JSON-RPC: message/send, message/stream, \
             tasks/get, tasks/cancel)",
            envelope.clone(),
            vec![Success::JsonOrEvents(200, object())],
        ),
        Operation {
            query: s.query::<AgentCardQuery>(),
            ..op(
                "get",
                "/.well-known/agent-card.json",
                "An assistant's A2A agent card",
                None,
                vec![Success::Json(200, object())],
            )
        },
        op(
            "post",
            "/mcp",
            "The assistants as MCP tools (streamable HTTP, stateless)",
            envelope.clone(),
            mcp(),
        ),
        op(
            "post",
            "/mcp/",
            "The assistants as MCP tools (streamable HTTP, stateless)",
            envelope,
            mcp(),
        ),
    ]
}
