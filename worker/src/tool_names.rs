//! Every name a role's tools answer to, and the tool each name runs
//! ([`ToolId`]): the one resolver calls are routed by and gates decide by.

use std::collections::BTreeSet;

use crate::mcp::naming::McpRoutes;
use crate::tool_id::ToolId;

/// Every name a role's tools answer to: its own tools by their names,
/// its MCP tools by their offered names and `SERVER__TOOL` aliases.
pub struct ToolNames<'a> {
    builtins: &'a [String],
    mcp: Option<McpRoutes<'a>>,
}

impl<'a> ToolNames<'a> {
    /// The names of `builtins` (the agent's registry) and of the MCP
    /// tools `mcp` routes to, when the role has servers.
    pub fn new(builtins: &'a [String], mcp: Option<McpRoutes<'a>>) -> Self {
        ToolNames { builtins, mcp }
    }

    /// The tool a call named `name` runs: the agent's own tool of that
    /// name first (as the MCP layer hands those on), else the MCP tool it
    /// routes to; `None` for a name that reaches no tool.
    pub fn resolve(&self, name: &str) -> Option<ToolId> {
        if self.builtins.iter().any(|b| b == name) {
            return Some(ToolId::Builtin(name.to_owned()));
        }
        self.mcp.as_ref()?.route(name)
    }

    /// The tools a configuration key (an `interrupt_on` key) names: the
    /// agent's own tool of that name; else every MCP tool it spells (the
    /// server's name for it or `SERVER__TOOL`, as written or as offered,
    /// so the tool a call of that name reaches too) and the tool it names
    /// as an alias, listed or not. A bare name several servers offer
    /// names all of them: a key that may mean a tool holds it.
    pub fn named_by(&self, key: &str) -> BTreeSet<ToolId> {
        if self.builtins.iter().any(|b| b == key) {
            return BTreeSet::from([ToolId::Builtin(key.to_owned())]);
        }
        let Some(mcp) = &self.mcp else {
            return BTreeSet::new();
        };
        mcp.spelled_by(key).chain(mcp.alias(key)).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::mcp::naming::testing::{routes, servers};
    use pretty_assertions::assert_eq;

    fn mcp(server: &str, tool: &str) -> ToolId {
        ToolId::Mcp {
            server: server.into(),
            tool: tool.into(),
        }
    }

    #[test]
    fn every_name_of_a_tool_resolves_to_it() {
        let builtins = ["read_file".to_owned()];
        let servers = servers("fs: {command: x}\nweb: {command: y}\n");
        let routes = routes(
            &servers,
            &[
                ("fs", &["read_file", "files.read", "tree"]),
                ("web", &["tree"]),
            ],
            &builtins,
            &BTreeMap::new(),
        );
        let names = ToolNames::new(&builtins, Some(routes));
        let resolved = |name: &str| names.resolve(name);
        assert_eq!(
            resolved("read_file"),
            Some(ToolId::Builtin("read_file".into()))
        );
        assert_eq!(resolved("fs__read_file"), Some(mcp("fs", "read_file")));
        // Offered sanitized, reached by its alias as the server spells it.
        assert_eq!(resolved("files_read"), Some(mcp("fs", "files.read")));
        assert_eq!(resolved("fs__files.read"), Some(mcp("fs", "files.read")));
        // Two servers offer `tree`: each is offered prefixed, neither bare.
        assert_eq!(resolved("fs__tree"), Some(mcp("fs", "tree")));
        assert_eq!(resolved("web__tree"), Some(mcp("web", "tree")));
        assert_eq!(resolved("tree"), None);
        assert_eq!(resolved("nope__tree"), None);
    }

    #[test]
    fn a_key_names_each_tool_it_spells() {
        let builtins = ["read_file".to_owned()];
        let servers = servers("fs: {command: x}\nweb: {command: y}\n");
        let routes = routes(
            &servers,
            &[
                ("fs", &["read_file", "files.read", "tree"]),
                ("web", &["tree"]),
            ],
            &builtins,
            &BTreeMap::new(),
        );
        let names = ToolNames::new(&builtins, Some(routes));
        let named = |key: &str| names.named_by(key).into_iter().collect::<Vec<_>>();
        assert_eq!(named("read_file"), [ToolId::Builtin("read_file".into())]);
        for key in ["files.read", "files_read", "fs__files.read"] {
            assert_eq!(named(key), [mcp("fs", "files.read")], "{key}");
        }
        // The tool it spells, and the one a call of that name reaches.
        assert_eq!(
            named("fs__files_read"),
            [mcp("fs", "files.read"), mcp("fs", "files_read")]
        );
        assert_eq!(named("tree"), [mcp("fs", "tree"), mcp("web", "tree")]);
        // A declared server's tool not listed (yet) is named by its alias.
        assert_eq!(named("web__later"), [mcp("web", "later")]);
        assert_eq!(named("files"), []);
        assert_eq!(named("fs__files"), [mcp("fs", "files")]);
    }
}
