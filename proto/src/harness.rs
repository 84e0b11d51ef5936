//! Agent spec sections that shape the harness: file backend routes and
//! harness profiles.
//!
//! Kept apart from [`crate::spec`] so each concept reads on its own; the
//! spec embeds them and [`crate::spec::AgentSpec::validate`] calls the
//! checks here.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec_error::SpecError;

/// Where the file tools' paths live (`backend:` in a spec). Paths not
/// routed stay in the thread's state backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {
    /// Path prefix (e.g. `/memories/`) -> backend. The longest matching
    /// prefix wins; the routed backend sees the path without the prefix.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routes: BTreeMap<String, BackendRoute>,
    /// The store namespace of the `store` routes, one template per label:
    /// `{agent}` is the agent's name, `{context.KEY}` a string in the run's
    /// runtime context. Setting it without any route routes `/memories/`
    /// to the store. Default: `["{agent}"]` (one namespace per agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_namespace: Option<Vec<String>>,
}

/// A backend a route leads to: `store`, or `{local: {root: DIR}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(from = "RawRoute", into = "RawRoute")]
pub enum BackendRoute {
    /// The long-term store, in the namespace of `store_namespace`: shared
    /// across threads.
    Store,
    /// A directory on the worker's disk (development only).
    Local {
        /// The directory; every path stays inside it.
        root: String,
    },
}

/// How a route is written in YAML: a bare name or a one-key map (YAML's
/// external enum tags would need `!local`, which nobody writes).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "a route: `store` or `{local: {root: DIR}}`")]
enum RawRoute {
    /// `store`.
    Name(RouteName),
    /// `{local: {root: DIR}}`.
    Local {
        /// The directory.
        local: LocalRoot,
    },
}

/// The routes written by name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RouteName {
    /// The long-term store.
    Store,
}

/// A local route's settings.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LocalRoot {
    /// The directory.
    root: String,
}

impl From<RawRoute> for BackendRoute {
    fn from(raw: RawRoute) -> Self {
        match raw {
            RawRoute::Name(RouteName::Store) => BackendRoute::Store,
            RawRoute::Local { local } => BackendRoute::Local { root: local.root },
        }
    }
}

impl From<BackendRoute> for RawRoute {
    fn from(route: BackendRoute) -> Self {
        match route {
            BackendRoute::Store => RawRoute::Name(RouteName::Store),
            BackendRoute::Local { root } => RawRoute::Local {
                local: LocalRoot { root },
            },
        }
    }
}

/// The route `/memories/` gets when only `store_namespace` is set.
pub const DEFAULT_STORE_ROUTE: &str = "/memories/";

impl BackendSpec {
    /// Whether the spec leaves everything in the state backend.
    pub fn is_default(&self) -> bool {
        *self == BackendSpec::default()
    }

    /// The routes in effect, with the default `/memories/` store route
    /// added when only a namespace is configured.
    pub fn effective_routes(&self) -> BTreeMap<String, BackendRoute> {
        let mut routes = self.routes.clone();
        if routes.is_empty() && self.store_namespace.is_some() {
            routes.insert(DEFAULT_STORE_ROUTE.to_owned(), BackendRoute::Store);
        }
        routes
    }

    /// The store namespace template in effect.
    pub fn namespace_template(&self) -> Vec<String> {
        self.store_namespace
            .clone()
            .unwrap_or_else(|| vec!["{agent}".to_owned()])
    }

    pub(crate) fn validate(&self) -> Result<(), SpecError> {
        for (prefix, route) in &self.routes {
            let field = format!("backend.routes.{prefix}");
            let valid = prefix.starts_with('/')
                && prefix
                    .trim_matches('/')
                    .split('/')
                    .all(|p| !p.is_empty() && p != "." && p != "..");
            if !valid || prefix.trim_matches('/').is_empty() {
                return Err(SpecError::field(
                    field,
                    "a route prefix is an absolute path below the root, e.g. /memories/",
                ));
            }
            if let BackendRoute::Local { root } = route
                && root.trim().is_empty()
            {
                return Err(SpecError::field(
                    format!("{field}.local.root"),
                    "must not be empty",
                ));
            }
        }
        if let Some(template) = &self.store_namespace {
            if template.is_empty() {
                return Err(SpecError::field(
                    "backend.store_namespace",
                    "needs at least one label",
                ));
            }
            for (i, label) in template.iter().enumerate() {
                check_label_template(label)
                    .map_err(|m| SpecError::field(format!("backend.store_namespace[{i}]"), m))?;
            }
        }
        Ok(())
    }
}

/// A namespace label template: literal text with `{agent}` or
/// `{context.KEY}` placeholders; never empty, no `.` outside placeholders.
fn check_label_template(label: &str) -> Result<(), String> {
    if label.is_empty() {
        return Err("must not be empty".to_owned());
    }
    let mut rest = label;
    while let Some(open) = rest.find('{') {
        if rest[..open].contains('.') {
            return Err(format!("'{label}': labels must not contain '.'"));
        }
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("'{label}': unclosed '{{'"));
        };
        let name = &rest[open + 1..open + close];
        let known = name == "agent"
            || name
                .strip_prefix("context.")
                .is_some_and(|key| !key.is_empty() && !key.contains(['{', '}']));
        if !known {
            return Err(format!(
                "'{label}': unknown placeholder {{{name}}}; use {{agent}} or {{context.KEY}}"
            ));
        }
        rest = &rest[open + close + 1..];
    }
    if rest.contains('.') || rest.contains('}') {
        return Err(format!(
            "'{label}': labels must not contain '.' or a stray '}}'"
        ));
    }
    Ok(())
}

/// Per-model adjustments of the harness (deepagents' harness profiles),
/// matched by `provider:model`, then by `provider`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HarnessProfile {
    /// Replaces the harness's base prompt (`""` removes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_system_prompt: Option<String>,
    /// Appended after the base prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt_suffix: Option<String>,
    /// Tool name -> the description the model sees instead of the built-in.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_description_overrides: BTreeMap<String, String>,
    /// Tools removed from requests; a call to one gets an error result.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub excluded_tools: BTreeSet<String>,
}

impl HarnessProfile {
    /// `self` with `over` laid on top: scalars of `over` win, overrides
    /// merge (over's win), exclusions add up.
    pub fn merged(&self, over: &HarnessProfile) -> HarnessProfile {
        let mut out = self.clone();
        if over.base_system_prompt.is_some() {
            out.base_system_prompt.clone_from(&over.base_system_prompt);
        }
        if over.system_prompt_suffix.is_some() {
            out.system_prompt_suffix
                .clone_from(&over.system_prompt_suffix);
        }
        out.tool_description_overrides.extend(
            over.tool_description_overrides
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        out.excluded_tools
            .extend(over.excluded_tools.iter().cloned());
        out
    }

    /// The profile for `model` (`provider:name`) among `profiles`: the
    /// `provider` entry with the exact `provider:name` entry on top.
    pub fn lookup(profiles: &BTreeMap<String, HarnessProfile>, model: &str) -> HarnessProfile {
        let provider = model.split_once(':').map_or(model, |(p, _)| p);
        let base = profiles.get(provider).cloned().unwrap_or_default();
        match profiles.get(model) {
            Some(exact) if model != provider => base.merged(exact),
            _ => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn store_namespace_alone_routes_memories() {
        let spec = BackendSpec {
            store_namespace: Some(vec!["{agent}".into(), "{context.user_id}".into()]),
            ..BackendSpec::default()
        };
        assert_eq!(
            spec.effective_routes(),
            BTreeMap::from([("/memories/".to_owned(), BackendRoute::Store)])
        );
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(BackendSpec::default().namespace_template(), ["{agent}"]);
    }

    #[test]
    fn documented_yaml_parses() {
        let spec = crate::spec::AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\nbackend:\n  routes:\n    /memories/: store\n    \
             /workspace/: {local: {root: ./dev-tree}}\n  store_namespace: ['{agent}', 'user-{context.user_id}']\n\
             memory: [/memories/AGENTS.md]\nskills: [/skills/]\n",
        )
        .unwrap();
        assert_eq!(
            spec.backend.routes["/workspace/"],
            BackendRoute::Local {
                root: "./dev-tree".into()
            }
        );
        let err = crate::spec::AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\nsystem_prompt: x\nsystem_prompt_template: y\n",
        )
        .unwrap_err();
        assert_eq!(err.field, "system_prompt_template");
        let err = crate::spec::AgentSpec::from_yaml("name: a\nmodel: openai:x\nmemory: [../x]\n")
            .unwrap_err();
        assert_eq!(err.field, "memory[0]");
    }

    #[test]
    fn label_templates_are_checked() {
        assert_eq!(check_label_template("user-{context.user_id}"), Ok(()));
        assert!(check_label_template("").is_err());
        assert!(check_label_template("a.b").is_err());
        assert!(check_label_template("{tenant}").is_err());
        assert!(check_label_template("{context.}").is_err());
        assert!(check_label_template("{agent").is_err());
    }

    #[test]
    fn bad_route_prefix_names_the_field() {
        let spec = BackendSpec {
            routes: BTreeMap::from([("memories/".to_owned(), BackendRoute::Store)]),
            ..BackendSpec::default()
        };
        assert_eq!(
            spec.validate().unwrap_err().field,
            "backend.routes.memories/"
        );
    }

    #[test]
    fn profiles_match_model_then_provider() {
        let profiles = BTreeMap::from([
            (
                "openai".to_owned(),
                HarnessProfile {
                    system_prompt_suffix: Some("provider".into()),
                    excluded_tools: BTreeSet::from(["grep".to_owned()]),
                    ..HarnessProfile::default()
                },
            ),
            (
                "openai:gpt-5".to_owned(),
                HarnessProfile {
                    base_system_prompt: Some("exact".into()),
                    excluded_tools: BTreeSet::from(["glob".to_owned()]),
                    ..HarnessProfile::default()
                },
            ),
        ]);
        let exact = HarnessProfile::lookup(&profiles, "openai:gpt-5");
        assert_eq!(exact.base_system_prompt.as_deref(), Some("exact"));
        assert_eq!(exact.system_prompt_suffix.as_deref(), Some("provider"));
        assert_eq!(exact.excluded_tools.len(), 2);
        let other = HarnessProfile::lookup(&profiles, "openai:gpt-4.1");
        assert_eq!(other.base_system_prompt, None);
        assert_eq!(
            HarnessProfile::lookup(&profiles, "replay:x"),
            HarnessProfile::default()
        );
    }
}
