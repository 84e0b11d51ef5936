//! MCP servers an agent declares (`mcp_servers`): where a worker reaches
//! each one (a child process over stdio, or a streamable HTTP endpoint),
//! which of its tools the model sees and under which names, and how long
//! a call may take. See `docs/mcp.md`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec_error::SpecError;
use crate::value_source::ValueSource;

/// The separator of a prefixed tool name, `SERVER__TOOL`.
pub const PREFIX_SEPARATOR: &str = "__";

/// How long a tool call may take when `timeout_secs` is not set.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// How long starting a server (spawn or connect, then the MCP
/// handshake) may take when `startup_timeout_secs` is not set.
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 30;

/// One MCP server: `command` (stdio) or `url` (streamable HTTP), not both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// The program a worker starts, speaking MCP on its stdin and stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The program's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables of the program, on top of the worker's
    /// `PATH`, `HOME` and `LANG` (nothing else of the worker's environment
    /// reaches it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, ValueSource>,
    /// The streamable HTTP endpoint, e.g. `https://tools.example/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url`: tokens from
    /// secrets, runtime context fields forwarded by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, ValueSource>,
    /// The server's tools the model sees, by the server's names; all of
    /// them when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Names every tool of this server `SERVER__TOOL`, not only those
    /// whose names collide.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prefix: bool,
    /// Arguments the worker sets on every call, whatever the model sent
    /// (e.g. a user id from the runtime context); they are removed from
    /// the schema the model sees.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, ValueSource>,
    /// How long one call may take, in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// How long starting the server may take, in seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_secs: Option<u64>,
}

impl McpServer {
    /// `timeout_secs`, or its default.
    pub fn timeout_secs(&self) -> u64 {
        self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)
    }

    /// `startup_timeout_secs`, or its default.
    pub fn startup_timeout_secs(&self) -> u64 {
        self.startup_timeout_secs
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT_SECS)
    }

    /// Whether the model may see the server's tool `name`.
    pub fn exposes(&self, name: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|t| t == name))
    }

    /// The canonical (prefixed) name of this server's tool `tool`.
    pub fn prefixed(server: &str, tool: &str) -> String {
        format!("{server}{PREFIX_SEPARATOR}{tool}")
    }
}

/// Checks the servers declared under `field`.
pub fn validate(field: &str, servers: &BTreeMap<String, McpServer>) -> Result<(), SpecError> {
    for (name, server) in servers {
        let at = |f: &str| format!("{field}.{name}{f}");
        let valid = !name.is_empty()
            && name.len() <= 32
            && !name.contains(PREFIX_SEPARATOR)
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(SpecError::field(
                at(""),
                format!(
                    "'{name}' must be 1-32 characters of letters, digits, '-' or '_', without '__'"
                ),
            ));
        }
        match (&server.command, &server.url) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(SpecError::field(
                    at(""),
                    "set either `command` (stdio) or `url` (streamable HTTP)",
                ));
            }
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(SpecError::field(at(".command"), "must not be empty"));
                }
                if !server.headers.is_empty() {
                    return Err(SpecError::field(
                        at(".headers"),
                        "headers are for `url` servers; a `command` server takes `env`",
                    ));
                }
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(SpecError::field(
                        at(".url"),
                        format!("'{url}' must be an http:// or https:// URL"),
                    ));
                }
                if !server.args.is_empty() || !server.env.is_empty() {
                    return Err(SpecError::field(
                        at(""),
                        "`args` and `env` are for `command` servers",
                    ));
                }
            }
        }
        if let Some(tools) = &server.tools
            && let Some(i) = tools.iter().position(|t| t.trim().is_empty())
        {
            return Err(SpecError::field(at(&format!(".tools[{i}]")), "empty name"));
        }
        for (f, value) in [
            (".timeout_secs", server.timeout_secs),
            (".startup_timeout_secs", server.startup_timeout_secs),
        ] {
            if value == Some(0) {
                return Err(SpecError::field(at(f), "must be at least 1"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn servers(yaml: &str) -> BTreeMap<String, McpServer> {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn stdio_and_http_servers_read_from_yaml() {
        let s = servers(
            "files: {command: npx, args: [-y, server], env: {TOKEN: {secret: FS_TOKEN}}, tools: [read]}\n\
             web: {url: 'https://x.example/mcp', headers: {X-User: {context: user.id}}, prefix: true, timeout_secs: 5}\n",
        );
        validate("mcp_servers", &s).unwrap();
        assert_eq!(s["files"].command.as_deref(), Some("npx"));
        assert!(s["files"].exposes("read") && !s["files"].exposes("write"));
        assert!(s["web"].exposes("anything"));
        assert_eq!(s["web"].timeout_secs(), 5);
        assert_eq!(s["files"].startup_timeout_secs(), 30);
        assert_eq!(McpServer::prefixed("web", "fetch"), "web__fetch");
    }

    #[test]
    fn errors_name_the_server_and_field() {
        for (yaml, field) in [
            ("a: {}\n", "mcp_servers.a"),
            ("a: {command: x, url: 'http://h'}\n", "mcp_servers.a"),
            ("a__b: {command: x}\n", "mcp_servers.a__b"),
            ("a: {url: 'ftp://h'}\n", "mcp_servers.a.url"),
            (
                "a: {command: x, headers: {A: b}}\n",
                "mcp_servers.a.headers",
            ),
            ("a: {url: 'http://h', env: {A: b}}\n", "mcp_servers.a"),
            ("a: {command: x, tools: ['']}\n", "mcp_servers.a.tools[0]"),
            (
                "a: {command: x, timeout_secs: 0}\n",
                "mcp_servers.a.timeout_secs",
            ),
        ] {
            let err = validate("mcp_servers", &servers(yaml)).unwrap_err();
            assert_eq!(err.field, field, "{yaml}");
        }
    }
}
