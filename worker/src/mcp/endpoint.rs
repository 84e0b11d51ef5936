//! A declared MCP server with its values resolved for one run: the
//! program and its environment, or the URL and its headers. Values come
//! from [`ValueSource`]s at connect time (secrets from the worker's
//! environment or the sealed runtime context), live only in memory, and
//! make part of the endpoint's identity: runs whose headers differ (a
//! forwarded user id) get connections of their own.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use deepfleet_proto::mcp::McpServer;
use deepfleet_proto::value_source::ValueSource;

use crate::context::ToolView;
use crate::tools::ToolError;
use crate::tools::value_source::resolve_text;

/// Variables of the worker's environment a stdio server inherits; the
/// rest (provider keys, the context key) never reach it.
pub const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// How a worker reaches the server.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A child process speaking MCP on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment (on top of [`INHERITED_ENV`]), resolved.
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request, resolved.
        headers: Vec<(String, String)>,
    },
}

/// A server ready to connect to.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The server's name in the spec.
    pub server: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long a call may take.
    pub timeout: Duration,
    /// How long starting may take.
    pub startup_timeout: Duration,
}

/// Never shows resolved values: they may be secrets.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// `config` of server `server`, its values resolved through `view`; a
    /// value that is not there is the model's error.
    pub fn resolve(
        server: &str,
        config: &McpServer,
        view: &ToolView<'_>,
    ) -> Result<Endpoint, ToolError> {
        let transport = match (&config.command, &config.url) {
            (Some(command), _) => Transport::Stdio {
                command: command.clone(),
                args: config.args.clone(),
                env: resolved(&config.env, view)?,
            },
            (None, Some(url)) => Transport::Http {
                url: url.clone(),
                headers: resolved(&config.headers, view)?,
            },
            (None, None) => {
                return Err(ToolError::Model(format!(
                    "the MCP server `{server}` declares neither `command` nor `url`"
                )));
            }
        };
        Ok(Endpoint {
            server: server.to_owned(),
            transport,
            timeout: Duration::from_secs(config.timeout_secs()),
            startup_timeout: Duration::from_secs(config.startup_timeout_secs()),
        })
    }

    /// The endpoint's identity in the pool.
    pub fn key(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

fn resolved(
    values: &BTreeMap<String, ValueSource>,
    view: &ToolView<'_>,
) -> Result<Vec<(String, String)>, ToolError> {
    values
        .iter()
        .map(|(name, source)| Ok((name.clone(), resolve_text(source, view)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_cx;

    const CALL_ID: &str = "call_1";

    fn ctx() -> crate::StepContext {
        test_cx("")
    }

    fn server(yaml: &str) -> McpServer {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn values_resolve_per_run_and_make_the_identity() {
        let mut cx = ctx();
        cx.context = Some(serde_json::json!({"user": "u-1"}));
        let config =
            server("url: 'http://h/mcp'\nheaders: {X-User: {context: user}, X-Fixed: v}\n");
        let one = Endpoint::resolve("web", &config, &cx.tool(CALL_ID)).unwrap();
        let Transport::Http { headers, .. } = &one.transport else {
            panic!("an http endpoint");
        };
        assert_eq!(
            headers,
            &[
                ("X-Fixed".to_owned(), "v".to_owned()),
                ("X-User".to_owned(), "u-1".to_owned())
            ]
        );
        cx.context = Some(serde_json::json!({"user": "u-2"}));
        let two = Endpoint::resolve("web", &config, &cx.tool(CALL_ID)).unwrap();
        assert_ne!(one.key(), two.key());
        assert!(!format!("{two:?}").contains("u-2"));
        cx.context = None;
        let missing = Endpoint::resolve("web", &config, &cx.tool(CALL_ID));
        assert!(matches!(missing, Err(ToolError::Model(m)) if m.contains("user")));
    }
}
