//! Harness profiles: per-model adjustments of the prompt and the tools
//! (deepagents' `HarnessProfile`), matched by `provider:model`, then by
//! `provider`, from the worker's configuration with the spec's own
//! profiles on top.
//!
//! The prompt parts are applied by [`crate::agent::Agent`]; this module
//! changes the tool registry and rejects calls to excluded tools. An
//! exclusion hides a tool from the model; it is not a security boundary.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use deepfleet_proto::ToolCall;
use deepfleet_proto::harness::HarnessProfile;

use crate::context::ToolView;
use crate::middleware::{Middleware, ToolNext};
use crate::tools::{ToolError, ToolRegistry, ToolResult};

/// The profile for `model` (`provider:model`): the configured profiles,
/// then the spec's, each matched by model then provider.
pub fn resolve(
    configured: &BTreeMap<String, HarnessProfile>,
    spec: &BTreeMap<String, HarnessProfile>,
    model: &str,
) -> HarnessProfile {
    HarnessProfile::lookup(configured, model).merged(&HarnessProfile::lookup(spec, model))
}

/// Applies the profile's description overrides and exclusions to the
/// tools the model is offered.
pub fn apply_to_tools(profile: &HarnessProfile, tools: &mut ToolRegistry) {
    for (name, description) in &profile.tool_description_overrides {
        tools.set_description(name, description);
    }
    tools.retain(|name| !profile.excluded_tools.contains(name));
}

/// The base section of the system prompt under a profile: its replacement
/// of `base` (if any), then its suffix.
pub fn base_prompt(profile: &HarnessProfile, base: &str) -> String {
    let base = profile.base_system_prompt.as_deref().unwrap_or(base);
    match profile.system_prompt_suffix.as_deref() {
        Some(suffix) if base.trim().is_empty() => suffix.to_owned(),
        Some(suffix) => format!("{}\n\n{suffix}", base.trim_end()),
        None => base.to_owned(),
    }
}

/// Refuses calls to tools the profile excludes.
pub struct ToolExclusion {
    excluded: BTreeSet<String>,
}

impl ToolExclusion {
    /// Refuses these tools.
    pub fn new(excluded: BTreeSet<String>) -> Self {
        ToolExclusion { excluded }
    }
}

#[async_trait]
impl Middleware for ToolExclusion {
    fn name(&self) -> &'static str {
        "tool_exclusion"
    }

    async fn wrap_tool(
        &self,
        call: &ToolCall,
        ctx: &ToolView<'_>,
        next: ToolNext<'_>,
    ) -> ToolResult {
        if self.excluded.contains(&call.name) {
            return Err(ToolError::Model(format!(
                "Error: {} is not available.",
                call.name
            )));
        }
        next.run(call, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tools::ls::Ls;
    use crate::tools::read_file::ReadFile;
    use pretty_assertions::assert_eq;

    fn profile() -> HarnessProfile {
        HarnessProfile {
            base_system_prompt: Some("Replaced base.".into()),
            system_prompt_suffix: Some("Suffix.".into()),
            tool_description_overrides: BTreeMap::from([("ls".into(), "List it.".into())]),
            excluded_tools: BTreeSet::from(["read_file".to_owned()]),
        }
    }

    #[test]
    fn prompt_parts() {
        assert_eq!(
            base_prompt(&profile(), "Base."),
            "Replaced base.\n\nSuffix."
        );
        let suffix_only = HarnessProfile {
            system_prompt_suffix: Some("Suffix.".into()),
            ..HarnessProfile::default()
        };
        assert_eq!(base_prompt(&suffix_only, "Base.\n"), "Base.\n\nSuffix.");
        let empty_base = HarnessProfile {
            base_system_prompt: Some(String::new()),
            ..suffix_only
        };
        assert_eq!(base_prompt(&empty_base, "Base."), "Suffix.");
        assert_eq!(base_prompt(&HarnessProfile::default(), "Base."), "Base.");
    }

    #[test]
    fn spec_profiles_lay_over_configured_ones() {
        let configured = BTreeMap::from([("openai".to_owned(), profile())]);
        let spec = BTreeMap::from([(
            "openai:gpt-5".to_owned(),
            HarnessProfile {
                system_prompt_suffix: Some("Spec suffix.".into()),
                ..HarnessProfile::default()
            },
        )]);
        let p = resolve(&configured, &spec, "openai:gpt-5");
        assert_eq!(p.base_system_prompt.as_deref(), Some("Replaced base."));
        assert_eq!(p.system_prompt_suffix.as_deref(), Some("Spec suffix."));
        assert_eq!(
            resolve(&configured, &spec, "replay:x"),
            HarnessProfile::default()
        );
    }

    #[tokio::test]
    async fn excluded_tools_are_hidden_and_refused() {
        let mut tools = ToolRegistry::default();
        tools.register(Arc::new(Ls));
        tools.register(Arc::new(ReadFile));
        apply_to_tools(&profile(), &mut tools);
        assert_eq!(tools.names(), ["ls"]);
        assert_eq!(tools.specs()[0].description, "List it.");

        let stack: Vec<Arc<dyn Middleware>> =
            vec![Arc::new(ToolExclusion::new(profile().excluded_tools))];
        let cx = crate::middleware::test_cx("");
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"file_path": "/a"}"#.into(),
        };
        let result = ToolNext::new(&stack, &tools)
            .run(&call, &cx.tool("c1"))
            .await;
        assert_eq!(
            result,
            Err(ToolError::Model(
                "Error: read_file is not available.".into()
            ))
        );
    }
}
