//! Which tool a call runs, whatever name it used.
//!
//! An MCP tool answers to more than one name: the name it is offered
//! under (sanitized, cut to 64, maybe prefixed) and its `SERVER__TOOL`
//! alias. Anything that decides on tools by name (human-in-the-loop
//! gates) therefore decides on the [`ToolId`] a name resolves to, through
//! the one resolver calls are routed by
//! ([`crate::tool_names::ToolNames::resolve`]), so that
//! routing and deciding cannot disagree.

/// A tool, as opposed to a spelling of its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ToolId {
    /// One of the agent's own tools (a built-in, a layer's, an HTTP
    /// tool): these share one namespace and are never renamed.
    Builtin(String),
    /// Tool `tool` of MCP server `server`, as the server names it.
    Mcp {
        /// The server's name in the spec.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
}
