//! The MCP client: agents' declared MCP servers as tools (see
//! `docs/mcp.md`).
//!
//! One [`McpPool`] per worker process holds a [`Connection`] per server
//! and resolved configuration ([`Endpoint`]), shared by every run: a
//! server starts (or is connected to) at its first use, its tool list is
//! cached until it says the list changed, and a server that fails or dies
//! is restarted on a later call. The `mcp_tools` middleware offers the
//! tools to the model under the names [`naming`] gives them and maps each
//! call's result with [`content`]. Nothing here fails a step: every
//! failure is an error the model reads.

pub mod connection;
pub mod content;
pub mod endpoint;
pub mod error;
pub mod naming;
pub mod pool;

pub use connection::Connection;
pub use endpoint::Endpoint;
pub use error::McpError;
pub use pool::McpPool;
