//! The names the model calls MCP tools by.
//!
//! A tool keeps its own name unless it must not: it is named
//! `SERVER__TOOL` when its server sets `prefix: true`, when the name is
//! one of the agent's built-in tools, when another of the role's servers
//! offers a tool of that name too (then each of them is prefixed), or
//! when the role's `interrupt_on` gates it as `SERVER__TOOL`. Characters
//! providers refuse in tool names become `_`, and names are cut to 64.
//! A call reaches a tool by its offered name or by its `SERVER__TOOL`
//! alias ([`McpRoutes::route`]); a gate names the tool, not one of these
//! names, so it holds calls by either (see [`crate::tool_id`]). A bare
//! gate is accepted at load only where the bare name is certain (see
//! [`gate_accepted`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use deepfleet_model::ToolSpec;
use deepfleet_proto::hitl::InterruptOn;
use deepfleet_proto::mcp::{McpServer, PREFIX_SEPARATOR};
use rmcp::model::Tool;
use serde_json::{Value, json};

use crate::tool_id::ToolId;

/// The longest tool name providers accept.
const MAX_NAME: usize = 64;

/// What one of the role's servers offers: its listing, or why there is
/// none.
pub struct Listing<'a> {
    /// The server's name.
    pub server: &'a str,
    /// Its declaration.
    pub config: &'a McpServer,
    /// Its tools, or why they are not known.
    pub tools: Result<Arc<Vec<Tool>>, String>,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered {
    /// The name the model calls.
    pub name: String,
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// What the model sees.
    pub spec: ToolSpec,
}

/// The tools `listings` offer, named by the module's rule against the
/// agent's `builtins` and `gates`. A server without a listing offers the
/// tools it declares (`tools:`), each saying the server is unavailable,
/// so a call reads why instead of failing as an unknown tool.
pub fn offer(
    listings: &[Listing<'_>],
    builtins: &[String],
    gates: &BTreeMap<String, InterruptOn>,
) -> Vec<Offered> {
    let candidates: Vec<(&Listing<'_>, String, String, Value)> = listings
        .iter()
        .flat_map(|listing| {
            candidates(listing)
                .into_iter()
                .map(move |(t, d, s)| (listing, t, d, s))
        })
        .collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (_, tool, _, _) in &candidates {
        *seen.entry(tool.as_str()).or_default() += 1;
    }
    candidates
        .iter()
        .map(|(listing, tool, description, parameters)| {
            let canonical = McpServer::prefixed(listing.server, tool);
            let prefixed = listing.config.prefix
                || builtins.iter().any(|b| b == tool)
                || seen.get(tool.as_str()).is_some_and(|n| *n > 1)
                || gates.contains_key(&canonical);
            let name = sanitized(if prefixed { &canonical } else { tool });
            Offered {
                spec: ToolSpec {
                    name: name.clone(),
                    description: description.clone(),
                    parameters: parameters.clone().into(),
                },
                name,
                server: listing.server.to_owned(),
                tool: tool.clone(),
            }
        })
        .collect()
}

/// Where the names of a role's MCP tools lead: the tools offered now
/// (those its allowlist, if any, names) and the servers a `SERVER__TOOL`
/// alias reaches. Calls are routed by it and gates resolved against it,
/// so both see the same names.
pub struct McpRoutes<'a> {
    offered: Vec<Offered>,
    servers: &'a BTreeMap<String, McpServer>,
    allow: Option<&'a [String]>,
}

impl<'a> McpRoutes<'a> {
    /// The routes to `offered` (by [`offer`]) and to the tools of
    /// `servers` by alias, under the role's tool allowlist `allow`: an
    /// offered tool stays when it names the tool by its offered name or
    /// `SERVER__TOOL`, an alias routes when it names the alias.
    pub fn new(
        mut offered: Vec<Offered>,
        servers: &'a BTreeMap<String, McpServer>,
        allow: Option<&'a [String]>,
    ) -> Self {
        if let Some(allow) = allow {
            offered.retain(|o| {
                let canonical = McpServer::prefixed(&o.server, &o.tool);
                allow.iter().any(|a| *a == o.name || *a == canonical)
            });
        }
        McpRoutes {
            offered,
            servers,
            allow,
        }
    }

    /// The tools offered, in order.
    pub fn into_offered(self) -> Vec<Offered> {
        self.offered
    }

    /// The tool a call named `name` goes to: an offered tool, else
    /// `SERVER__TOOL` of a declared server (whose listing may be missing
    /// because it is down) that the allowlist, if any, names.
    pub fn route(&self, name: &str) -> Option<ToolId> {
        if let Some(o) = self.offered.iter().find(|o| o.name == name) {
            return Some(o.id());
        }
        let allowed = self.allow.is_none_or(|a| a.iter().any(|a| a == name));
        allowed.then(|| self.alias(name)).flatten()
    }

    /// The tool `name` names as `SERVER__TOOL` of a declared server that
    /// exposes it, listed or not.
    pub fn alias(&self, name: &str) -> Option<ToolId> {
        let (server, tool) = name.split_once(PREFIX_SEPARATOR)?;
        let config = self.servers.get(server)?;
        config.exposes(tool).then(|| ToolId::Mcp {
            server: server.to_owned(),
            tool: tool.to_owned(),
        })
    }

    /// The offered tools `key` spells: by the server's name of the tool
    /// or by `SERVER__TOOL`, each as written or sanitized as offered.
    pub fn spelled_by<'k>(&'k self, key: &'k str) -> impl Iterator<Item = ToolId> + 'k {
        self.offered
            .iter()
            .filter(move |o| {
                let canonical = McpServer::prefixed(&o.server, &o.tool);
                [o.tool.as_str(), canonical.as_str()]
                    .into_iter()
                    .any(|spelling| spelling == key || sanitized(spelling) == key)
            })
            .map(Offered::id)
    }
}

impl Offered {
    /// The tool offered.
    fn id(&self) -> ToolId {
        ToolId::Mcp {
            server: self.server.clone(),
            tool: self.tool.clone(),
        }
    }
}

/// The (tool, description, schema) a listing offers.
fn candidates(listing: &Listing<'_>) -> Vec<(String, String, Value)> {
    let server = listing.server;
    match &listing.tools {
        Ok(tools) => tools
            .iter()
            .filter(|t| listing.config.exposes(&t.name))
            .map(|t| {
                let description = t.description.as_deref().or(t.title.as_deref()).map_or_else(
                    || format!("The tool `{}` of MCP server `{server}`.", t.name),
                    str::to_owned,
                );
                let schema = parameters(Value::Object((*t.input_schema).clone()), listing.config);
                (t.name.to_string(), description, schema)
            })
            .collect(),
        Err(reason) => listing
            .config
            .tools
            .iter()
            .flatten()
            .map(|tool| {
                let description = format!(
                    "A tool of MCP server `{server}`, which is unavailable now ({reason}); \
                     a call reports why."
                );
                (
                    tool.clone(),
                    description,
                    json!({"type": "object", "properties": {}}),
                )
            })
            .collect(),
    }
}

/// The server's input schema without the arguments the worker sets.
fn parameters(mut schema: Value, config: &McpServer) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        obj.entry("type").or_insert_with(|| json!("object"));
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            props.retain(|k, _| !config.arguments.contains_key(k));
        }
        if let Some(required) = obj.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|k| k.as_str().is_none_or(|k| !config.arguments.contains_key(k)));
        }
    }
    schema
}

fn sanitized(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME)
        .collect()
}

/// Whether `key` of a role's `interrupt_on` names one of its MCP tools
/// for certain, before any server is listed: `SERVER__TOOL` for a
/// declared server (and a tool it declares, if it declares them), or a
/// bare name only one server declares in `tools:` while every other
/// server declares its tools too, none of them prefixes, and no built-in
/// has the name.
pub fn gate_accepted(
    key: &str,
    servers: &BTreeMap<String, McpServer>,
    builtins: &[String],
) -> bool {
    let canonical = servers.iter().any(|(name, config)| {
        key.strip_prefix(name.as_str())
            .and_then(|rest| rest.strip_prefix(PREFIX_SEPARATOR))
            .is_some_and(|tool| !tool.is_empty() && config.exposes(tool))
    });
    if canonical {
        return true;
    }
    let declaring: Vec<&McpServer> = servers
        .values()
        .filter(|c| c.tools.as_ref().is_some_and(|t| t.iter().any(|t| t == key)))
        .collect();
    declaring.len() == 1
        && !declaring[0].prefix
        && servers.values().all(|c| c.tools.is_some())
        && !builtins.iter().any(|b| b == key)
}

/// Servers, listings and routes for unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A listed tool named `name` taking `a` and `user`.
    pub(crate) fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({
            "name": name,
            "description": format!("does {name}"),
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}, "user": {"type": "string"}}, "required": ["a", "user"]}
        }))
        .unwrap_or_else(|e| panic!("test tool: {e}"))
    }

    /// `mcp_servers` from YAML.
    pub(crate) fn servers(yaml: &str) -> BTreeMap<String, McpServer> {
        serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("test servers: {e}"))
    }

    /// The routes of `servers` when each (server, tools) of `listed` is
    /// listed, named next to the agent's `builtins` and the role's
    /// `gates`, without an allowlist.
    pub(crate) fn routes<'a>(
        servers: &'a BTreeMap<String, McpServer>,
        listed: &[(&'a str, &[&str])],
        builtins: &[String],
        gates: &BTreeMap<String, InterruptOn>,
    ) -> McpRoutes<'a> {
        let listings: Vec<Listing<'_>> = listed
            .iter()
            .map(|(server, tools)| Listing {
                server,
                config: &servers[*server],
                tools: Ok(Arc::new(tools.iter().map(|t| tool(t)).collect())),
            })
            .collect();
        McpRoutes::new(offer(&listings, builtins, gates), servers, None)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{servers, tool};
    use super::*;
    use pretty_assertions::assert_eq;

    fn names(offered: &[Offered]) -> Vec<&str> {
        offered.iter().map(|o| o.name.as_str()).collect()
    }

    #[test]
    fn collisions_prefixes_and_gates_name_tools_after_their_server() {
        let s = servers(
            "fs: {command: x}\nweb: {command: y, prefix: true}\nmore: {command: z, tools: [echo, add]}\n",
        );
        let listing = |server: &'static str, tools: &[&str]| Listing {
            server,
            config: &s[server],
            tools: Ok(Arc::new(tools.iter().map(|t| tool(t)).collect())),
        };
        let listings = [
            listing("fs", &["read_file", "echo", "tree", "a.b"]),
            listing("web", &["fetch"]),
            listing("more", &["echo", "add", "hidden"]),
        ];
        let gates: BTreeMap<String, InterruptOn> =
            serde_norway::from_str("fs__tree: true\n").unwrap();
        let offered = offer(&listings, &["read_file".to_owned()], &gates);
        assert_eq!(
            names(&offered),
            [
                "fs__read_file",
                "fs__echo",
                "fs__tree",
                "a_b",
                "web__fetch",
                "more__echo",
                "add"
            ]
        );
        assert_eq!(
            (offered[3].server.as_str(), offered[3].tool.as_str()),
            ("fs", "a.b")
        );
    }

    #[test]
    fn worker_set_arguments_leave_the_schema_and_down_servers_offer_their_declared_tools() {
        let s = servers(
            "a: {command: x, arguments: {user: {context: user}}}\nb: {command: y, tools: [t]}\n",
        );
        let listings = [
            Listing {
                server: "a",
                config: &s["a"],
                tools: Ok(Arc::new(vec![tool("t1")])),
            },
            Listing {
                server: "b",
                config: &s["b"],
                tools: Err("it exited".into()),
            },
        ];
        let offered = offer(&listings, &[], &BTreeMap::new());
        assert_eq!(
            *offered[0].spec.parameters,
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
        );
        assert_eq!(offered[1].name, "t");
        assert!(
            offered[1]
                .spec
                .description
                .contains("unavailable now (it exited)")
        );
    }

    #[test]
    fn gates_are_accepted_where_the_name_is_certain() {
        let s = servers("a: {command: x, tools: [echo]}\nb: {command: y}\n");
        let builtins = ["ls".to_owned()];
        assert!(gate_accepted("a__echo", &s, &builtins));
        assert!(gate_accepted("b__anything", &s, &builtins));
        assert!(!gate_accepted("a__other", &s, &builtins));
        // `b` may offer an `echo` too, which would prefix both.
        assert!(!gate_accepted("echo", &s, &builtins));
        let s = servers("a: {command: x, tools: [echo, ls]}\nb: {command: y, tools: [add]}\n");
        assert!(gate_accepted("echo", &s, &builtins));
        assert!(!gate_accepted("ls", &s, &builtins));
        assert!(!gate_accepted("c__echo", &s, &builtins));
    }
}
