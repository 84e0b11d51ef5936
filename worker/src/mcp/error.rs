//! Why an MCP server could not answer a call or a listing. Each reads as
//! the model's error text: the server and what happened, never a header
//! or environment value.

use std::time::Duration;

/// A failure of one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The program could not be started.
    #[error("the MCP server could not be started: {0}")]
    Spawn(String),
    /// The server did not complete the MCP handshake.
    #[error("the MCP server did not start: {0}")]
    Handshake(String),
    /// Starting the server took longer than `startup_timeout_secs`.
    #[error("the MCP server did not start within {} s", .0.as_secs_f64())]
    StartupTimeout(Duration),
    /// A call or listing took longer than `timeout_secs`.
    #[error("the MCP server did not answer within {} s (timeout_secs); the call was cancelled", .0.as_secs_f64())]
    Timeout(Duration),
    /// The connection ended (the program exited, the endpoint went away);
    /// the server is restarted on a later call.
    #[error("the MCP server stopped during the call ({0}); it will be restarted on the next call")]
    Died(String),
    /// The server is down after failing; it is tried again after a backoff.
    #[error("the MCP server is unavailable ({last}); it will be tried again in {} s", .retry_in.as_secs())]
    Down {
        /// Why it failed last.
        last: String,
        /// How long until the next attempt.
        retry_in: Duration,
    },
    /// The server answered the request with a protocol error (an unknown
    /// tool, invalid arguments).
    #[error("the MCP server refused the call: {0}")]
    Refused(String),
    /// The endpoint's configuration cannot be used (a header value that is
    /// no valid header, an HTTP client that cannot be built).
    #[error("the MCP server's configuration cannot be used: {0}")]
    Config(String),
}
