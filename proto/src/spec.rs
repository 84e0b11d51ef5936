//! Agent specs: the YAML document that defines an agent.
//!
//! Parsing is two-stage, as with ripgrep's low/high args: serde reads the
//! document (unknown fields are errors, so a typo never silently drops a
//! setting), then [`AgentSpec::validate`] checks what serde cannot. Every
//! error names the field and, found by [`crate::spec_lines`] for
//! validation errors, its line.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hitl::InterruptOn;
use crate::http_tool::HttpToolSpec;
use crate::mcp::McpServer;
use crate::model_params::ModelParams;
pub use crate::spec_error::SpecError;
use crate::spec_name::check_name;

/// The name of the subagent every agent gets unless it opts out.
pub const GENERAL_PURPOSE: &str = "general-purpose";

/// An agent definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Unique name; the `graph_id` the API serves it under.
    pub name: String,
    /// `provider:model`, e.g. `openai:gpt-4.1` or `replay:script.yaml`.
    pub model: String,
    /// The agent's own instructions, first in the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Adds the `write_todos` planning tool.
    #[serde(default)]
    pub planning: bool,
    /// Whether the built-in `general-purpose` subagent is offered.
    #[serde(default = "default_true")]
    pub general_purpose_subagent: bool,
    /// Subagents reachable through the `task` tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentSpec>,
    /// Step, depth, fan-out and run-count limits.
    #[serde(default)]
    pub limits: Limits,
    /// Overrides the built-in profile of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_profile: Option<ModelProfile>,
    /// Sampling settings of the agent's model calls (temperature, top_p,
    /// max_output_tokens, reasoning_effort); subagents inherit them.
    #[serde(default, skip_serializing_if = "ModelParams::is_empty")]
    pub model_params: ModelParams,
    /// Offers the `compact_conversation` tool, so the model can summarize
    /// older messages on demand.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compact_tool: bool,
    /// Runtime-context keys whose values are secrets: redacted wherever the
    /// context could reach logs or traces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_secrets: Vec<String>,
    /// JSON Schema (an object) of the custom state fields a run may be
    /// seeded with; tools read and write them, subagents inherit them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_schema: Option<serde_json::Value>,
    /// JSON Schema (an object) every run's runtime context must match;
    /// a run whose context does not is refused at intake, naming the
    /// field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_schema: Option<serde_json::Value>,
    /// Tools that are HTTP endpoints of other services (see
    /// `docs/http-tools.md`); subagents have them too, within their
    /// `tools` allowlist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_tools: Vec<HttpToolSpec>,
    /// Tools whose calls wait for a human decision, by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interrupt_on: BTreeMap<String, InterruptOn>,
    /// Where file paths live: routes to the long-term store or a local
    /// directory (see `docs/backends.md`).
    #[serde(
        default,
        skip_serializing_if = "crate::harness::BackendSpec::is_default"
    )]
    pub backend: crate::harness::BackendSpec,
    /// AGENTS.md files loaded into the prompt once per thread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<String>,
    /// Skill directories (`{source}/{name}/SKILL.md`); later ones win.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// Harness profiles by `provider:model` or `provider`, on top of the
    /// worker's configured ones.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, crate::harness::HarnessProfile>,
    /// A system prompt rendered per run from `{{context.KEY}}` and
    /// `{{store.KEY}}` values; instead of `system_prompt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt_template: Option<String>,
    /// MCP servers whose tools the agent (and its subagents) may call, by
    /// server name (see `docs/mcp.md`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// Offers the `execute` tool, running shell commands in a sandbox
    /// with these limits (see `docs/sandbox.md`); no `execute` without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxSpec>,
}

fn default_true() -> bool {
    true
}

/// A subagent the `task` tool can start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentSpec {
    /// The `subagent_type` the model passes to `task`.
    pub name: String,
    /// When to use it; shown to the model in the `task` tool description.
    pub description: String,
    /// The subagent's own instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Model override; the parent's model when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Tool allowlist; the parent's tools when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Its own sampling settings; each field it leaves unset is the
    /// parent's.
    #[serde(default, skip_serializing_if = "ModelParams::is_empty")]
    pub model_params: ModelParams,
    /// Its own `interrupt_on`; the parent's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt_on: Option<BTreeMap<String, InterruptOn>>,
    /// Runs in the background: offered through `start_async_task` and its
    /// companions instead of `task`, so the parent goes on meanwhile.
    #[serde(default, rename = "async", skip_serializing_if = "std::ops::Not::not")]
    pub run_async: bool,
    /// MCP servers of its own, on top of the parent's (one of the same
    /// name replaces the parent's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// HTTP tools of its own, besides the parent's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_tools: Vec<HttpToolSpec>,
}

/// Limits that end a run or refuse a delegation. The delegation limits
/// have absolute caps a spec cannot exceed ([`MAX_SUBAGENT_DEPTH`],
/// [`MAX_FANOUT`], [`MAX_TOTAL_RUNS`]), so no spec makes a run tree grow
/// without bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Model calls one run may make before it fails.
    pub max_steps: u32,
    /// How deep subagents may nest (1 = subagents cannot delegate); at
    /// most [`MAX_SUBAGENT_DEPTH`].
    pub max_subagent_depth: u32,
    /// How many `task` calls one model turn may make; at most
    /// [`MAX_FANOUT`].
    pub max_fanout: u32,
    /// How many runs one top-level run may make in all: itself and every
    /// subagent run below it, background ones included; at most
    /// [`MAX_TOTAL_RUNS`]. A delegation past it is a tool error the model
    /// reads.
    pub max_total_runs: u32,
    /// Seconds a run may take from its first step on, its subagents
    /// included; past it the run ends `timeout` and its subagents are
    /// cancelled. Unset: the fleet's `[limits] run_timeout_secs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_timeout_secs: Option<u64>,
    /// Seconds one step (its model call and tool calls) may take, within
    /// the worker's `worker.step_timeout_secs`; a step past it is
    /// abandoned and retried, as a crashed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_timeout_secs: Option<u64>,
    /// How many runs of this agent one tenant may have in flight at
    /// once across the fleet (its subagents run under their parent's
    /// place); past it a run's steps wait for a place. Unset: no limit
    /// beyond the tenant's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_runs: Option<u32>,
}

/// The deepest `limits.max_subagent_depth` a spec may set.
pub const MAX_SUBAGENT_DEPTH: u32 = 8;
/// The largest `limits.max_fanout` a spec may set.
pub const MAX_FANOUT: u32 = 64;
/// The largest `limits.max_total_runs` a spec may set.
pub const MAX_TOTAL_RUNS: u32 = 10_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 100,
            max_subagent_depth: 1,
            max_fanout: 16,
            max_total_runs: 100,
            run_timeout_secs: None,
            step_timeout_secs: None,
            max_concurrent_runs: None,
        }
    }
}

impl Limits {
    /// `max_subagent_depth`, capped (a spec stored before the cap, or
    /// never validated, gets no more).
    pub fn subagent_depth(&self) -> u32 {
        self.max_subagent_depth.min(MAX_SUBAGENT_DEPTH)
    }

    /// `max_fanout`, capped.
    pub fn fanout(&self) -> u32 {
        self.max_fanout.min(MAX_FANOUT)
    }

    /// `max_total_runs`, capped.
    pub fn total_runs(&self) -> u32 {
        self.max_total_runs.min(MAX_TOTAL_RUNS)
    }

    fn validate(&self) -> Result<(), SpecError> {
        for (field, value, cap) in [
            ("limits.max_steps", self.max_steps, u32::MAX),
            (
                "limits.max_subagent_depth",
                self.max_subagent_depth,
                MAX_SUBAGENT_DEPTH,
            ),
            ("limits.max_fanout", self.max_fanout, MAX_FANOUT),
            ("limits.max_total_runs", self.max_total_runs, MAX_TOTAL_RUNS),
        ] {
            if value == 0 && field != "limits.max_subagent_depth" {
                return Err(SpecError::field(field, "must be at least 1"));
            }
            if value > cap {
                return Err(SpecError::field(
                    field,
                    format!("must be at most {cap} (got {value})"),
                ));
            }
        }
        for (field, secs) in [
            ("limits.run_timeout_secs", self.run_timeout_secs),
            ("limits.step_timeout_secs", self.step_timeout_secs),
        ] {
            if secs == Some(0) {
                return Err(SpecError::field(field, "must be at least 1 second"));
            }
        }
        if self.max_concurrent_runs == Some(0) {
            return Err(SpecError::field(
                "limits.max_concurrent_runs",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// What the harness needs to know about a model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelProfile {
    /// Largest prompt the model accepts, in tokens.
    pub max_input_tokens: u64,
    /// Largest completion the model produces, in tokens.
    pub max_output_tokens: u64,
}

impl AgentSpec {
    /// Parses and validates a YAML spec.
    pub fn from_yaml(source: &str) -> Result<Self, SpecError> {
        let de = serde_norway::Deserializer::from_str(source);
        let spec: AgentSpec = serde_path_to_error::deserialize(de).map_err(|err| {
            let field = err.path().to_string();
            let inner = err.into_inner();
            SpecError {
                field: if field == "." { String::new() } else { field },
                line: inner.location().map(|l| l.line()),
                message: strip_location(&inner.to_string()),
            }
        })?;
        spec.validate().map_err(|e| e.located(source))?;
        Ok(spec)
    }

    /// Checks what serde cannot: names, model strings, limits.
    pub fn validate(&self) -> Result<(), SpecError> {
        check_name("name", &self.name)?;
        check_model("model", &self.model)?;
        let mut seen = BTreeSet::new();
        for (i, sub) in self.subagents.iter().enumerate() {
            let at = |f: &str| format!("subagents[{i}].{f}");
            check_name(&at("name"), &sub.name)?;
            if !seen.insert(sub.name.as_str()) {
                return Err(SpecError::field(
                    at("name"),
                    format!("duplicate subagent name '{}'", sub.name),
                ));
            }
            if sub.description.trim().is_empty() {
                return Err(SpecError::field(at("description"), "must not be empty"));
            }
            if let Some(model) = &sub.model {
                check_model(&at("model"), model)?;
            }
            if let Some(gates) = &sub.interrupt_on {
                check_interrupt_on(&at("interrupt_on"), gates)?;
            }
            sub.model_params.validate(&at("model_params"))?;
            crate::mcp::validate(&at("mcp_servers"), &sub.mcp_servers)?;
            self.check_http_tools(&at("http_tools"), &sub.http_tools)?;
        }
        check_interrupt_on("interrupt_on", &self.interrupt_on)?;
        self.check_http_tools("http_tools", &self.http_tools)?;
        self.model_params.validate("model_params")?;
        crate::mcp::validate("mcp_servers", &self.mcp_servers)?;
        self.check_harness()?;
        for (field, schema) in [
            ("state_schema", &self.state_schema),
            ("context_schema", &self.context_schema),
        ] {
            if schema.as_ref().is_some_and(|s| !s.is_object()) {
                return Err(SpecError::field(field, "must be a JSON Schema object"));
            }
        }
        self.limits.validate()?;
        if let Some(profile) = self.model_profile
            && profile.max_input_tokens == 0
        {
            return Err(SpecError::field(
                "model_profile.max_input_tokens",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// Checks the HTTP tools at `field`: each valid, names unique, state
    /// updates only to fields `state_schema` declares.
    fn check_http_tools(&self, field: &str, tools: &[HttpToolSpec]) -> Result<(), SpecError> {
        let mut seen = BTreeSet::new();
        for (i, tool) in tools.iter().enumerate() {
            let at = format!("{field}[{i}]");
            tool.validate(&at)?;
            if !seen.insert(tool.name.as_str()) {
                return Err(SpecError::field(
                    format!("{at}.name"),
                    format!("duplicate tool name '{}'", tool.name),
                ));
            }
            let declared = self.state_schema.as_ref().and_then(|s| s.get("properties"));
            if let Some(undeclared) = tool
                .updates_state
                .iter()
                .find(|f| declared.and_then(|p| p.get(f.as_str())).is_none())
            {
                return Err(SpecError::field(
                    format!("{at}.updates_state"),
                    format!("'{undeclared}' is not a property of state_schema"),
                ));
            }
        }
        Ok(())
    }

    /// Checks the backend routes, memory paths, skill sources and the
    /// prompt template choice.
    fn check_harness(&self) -> Result<(), SpecError> {
        self.backend.validate()?;
        if let Some(sandbox) = &self.sandbox {
            sandbox.validate()?;
        }
        for (field, paths) in [("memory", &self.memory), ("skills", &self.skills)] {
            for (i, path) in paths.iter().enumerate() {
                crate::path::validate(path)
                    .map_err(|m| SpecError::field(format!("{field}[{i}]"), m))?;
            }
        }
        if self.system_prompt.is_some() && self.system_prompt_template.is_some() {
            return Err(SpecError::field(
                "system_prompt_template",
                "set either system_prompt or system_prompt_template, not both",
            ));
        }
        Ok(())
    }

    /// The subagent the model may call by `name`, the built-in
    /// general-purpose one included.
    pub fn subagent(&self, name: &str) -> Option<SubagentSpec> {
        if let Some(sub) = self.subagents.iter().find(|s| s.name == name) {
            return Some(sub.clone());
        }
        (name == GENERAL_PURPOSE && self.general_purpose_subagent).then(general_purpose)
    }

    /// The sampling settings of a role: a subagent's own, each unset
    /// field the spec's.
    pub fn model_params_for(&self, subagent: Option<&SubagentSpec>) -> ModelParams {
        subagent.map_or(self.model_params, |s| {
            s.model_params.over(&self.model_params)
        })
    }

    /// The `interrupt_on` of a role: a subagent's own, else the parent's
    /// (deepagents: declarative and general-purpose subagents inherit it).
    pub fn interrupt_on_for(&self, subagent: Option<&str>) -> BTreeMap<String, InterruptOn> {
        subagent
            .and_then(|name| self.subagents.iter().find(|s| s.name == name))
            .and_then(|s| s.interrupt_on.clone())
            .unwrap_or_else(|| self.interrupt_on.clone())
    }

    /// The MCP servers of a role: the spec's, with a subagent's own on
    /// top (by name).
    pub fn mcp_servers_for(&self, subagent: Option<&str>) -> BTreeMap<String, McpServer> {
        let mut servers = self.mcp_servers.clone();
        if let Some(sub) = subagent.and_then(|name| self.subagents.iter().find(|s| s.name == name))
        {
            servers.extend(sub.mcp_servers.clone());
        }
        servers
    }

    /// Every subagent offered to the model, general-purpose first.
    pub fn all_subagents(&self) -> Vec<SubagentSpec> {
        let mut out = Vec::new();
        if self.general_purpose_subagent
            && !self.subagents.iter().any(|s| s.name == GENERAL_PURPOSE)
        {
            out.push(general_purpose());
        }
        out.extend(self.subagents.iter().cloned());
        out
    }
}

/// The built-in subagent: the parent's tools, a fresh context.
pub fn general_purpose() -> SubagentSpec {
    SubagentSpec {
        name: GENERAL_PURPOSE.to_owned(),
        description: "General-purpose agent for researching complex questions, searching files \
                      and content, and carrying out multi-step tasks. Use it when a search may \
                      take several tries, or to keep a large piece of work out of your own \
                      context. It has the same tools you have."
            .to_owned(),
        system_prompt: None,
        model: None,
        tools: None,
        model_params: ModelParams::default(),
        interrupt_on: None,
        run_async: false,
        mcp_servers: BTreeMap::new(),
        http_tools: Vec::new(),
    }
}

fn check_interrupt_on(field: &str, gates: &BTreeMap<String, InterruptOn>) -> Result<(), SpecError> {
    for (tool, gate) in gates {
        if gate.allowed().is_some_and(|a| a.is_empty()) {
            return Err(SpecError::field(
                format!("{field}.{tool}.allowed_decisions"),
                "must list at least one decision",
            ));
        }
    }
    Ok(())
}

fn check_model(field: &str, model: &str) -> Result<(), SpecError> {
    match model.split_once(':') {
        Some((provider, name)) if !provider.is_empty() && !name.is_empty() => Ok(()),
        _ => Err(SpecError::field(
            field,
            format!("'{model}' must be 'provider:model', e.g. 'openai:gpt-4.1'"),
        )),
    }
}

/// serde_norway appends " at line L column C"; we report the line apart.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn minimal_spec_gets_defaults() {
        let spec = AgentSpec::from_yaml("name: a\nmodel: openai:gpt-4.1\n").unwrap();
        assert_eq!(spec.limits, Limits::default());
        assert!(spec.general_purpose_subagent);
        assert_eq!(spec.all_subagents()[0].name, GENERAL_PURPOSE);
    }

    #[test]
    fn type_errors_name_field_and_line() {
        let err = AgentSpec::from_yaml("name: a\nmodel: openai:x\nlimits:\n  max_steps: lots\n")
            .unwrap_err();
        assert_eq!(err.field, "limits.max_steps");
        assert_eq!(err.line, Some(4));
    }

    #[test]
    fn unknown_fields_are_errors() {
        let err = AgentSpec::from_yaml("name: a\nmodel: openai:x\nplaning: true\n").unwrap_err();
        assert!(err.message.contains("unknown field `planing`"), "{err}");
        assert_eq!(err.line, Some(3));
    }

    #[test]
    fn validation_names_the_field() {
        let src = "name: a\nmodel: openai:x\nsubagents:\n  - {name: r, description: d}\n  - {name: r, description: e}\n";
        let err = AgentSpec::from_yaml(src).unwrap_err();
        assert_eq!(err.field, "subagents[1].name");
        let err = AgentSpec::from_yaml("name: a\nmodel: gpt\n").unwrap_err();
        assert_eq!(err.field, "model");
    }

    #[test]
    fn interrupt_on_is_checked_and_inherited() {
        let src =
            "name: a\nmodel: openai:x\ninterrupt_on:\n  write_file: {allowed_decisions: []}\n";
        let err = AgentSpec::from_yaml(src).unwrap_err();
        assert_eq!(err.field, "interrupt_on.write_file.allowed_decisions");
        let src = "name: a\nmodel: openai:x\ninterrupt_on: {write_file: true}\nsubagents:\n  - {name: r, description: d}\n  - {name: q, description: d, interrupt_on: {}}\n";
        let spec = AgentSpec::from_yaml(src).unwrap();
        assert!(spec.interrupt_on_for(Some("r")).contains_key("write_file"));
        assert!(
            spec.interrupt_on_for(Some("general-purpose"))
                .contains_key("write_file")
        );
        assert!(spec.interrupt_on_for(Some("q")).is_empty());
        let err = AgentSpec::from_yaml("name: a\nmodel: openai:x\nstate_schema: 3\n").unwrap_err();
        assert_eq!(err.field, "state_schema");
    }

    #[test]
    fn validation_errors_name_the_line_too() {
        let src = "name: a\nmodel: openai:x\nsubagents:\n  - name: r\n    description: d\n  - name: r\n    description: e\n";
        let err = AgentSpec::from_yaml(src).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.line),
            ("subagents[1].name", Some(6))
        );
        let err = AgentSpec::from_yaml("name: a\nmodel: gpt\n").unwrap_err();
        assert_eq!((err.field.as_str(), err.line), ("model", Some(2)));
        let src = "name: a\nmodel: openai:x\ninterrupt_on:\n  ls: true\n  write_file: {allowed_decisions: []}\n";
        let err = AgentSpec::from_yaml(src).unwrap_err();
        assert_eq!(err.line, Some(5), "{err}");
        let src = "name: a\nmodel: openai:x\nlimits: {max_steps: 0}\n";
        let err = AgentSpec::from_yaml(src).unwrap_err();
        assert_eq!(
            err.to_string(),
            "limits.max_steps (line 3): must be at least 1"
        );
    }

    #[test]
    fn limits_have_absolute_caps() {
        let spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        assert_eq!(spec.limits.max_total_runs, 100);
        for (field, value) in [
            ("max_subagent_depth", 1_000_000),
            ("max_fanout", 1_000),
            ("max_total_runs", 1_000_000),
        ] {
            let src = format!("name: a\nmodel: openai:x\nlimits:\n  {field}: {value}\n");
            let err = AgentSpec::from_yaml(&src).unwrap_err();
            assert_eq!(err.field, format!("limits.{field}"));
            assert_eq!(err.line, Some(4));
            assert!(err.message.starts_with("must be at most "), "{err}");
        }
        let src = "name: a\nmodel: openai:x\nlimits: {max_total_runs: 0}\n";
        assert_eq!(
            AgentSpec::from_yaml(src).unwrap_err().field,
            "limits.max_total_runs"
        );
        for field in ["run_timeout_secs", "step_timeout_secs"] {
            let src = format!("name: a\nmodel: openai:x\nlimits: {{{field}: 0}}\n");
            assert_eq!(
                AgentSpec::from_yaml(&src).unwrap_err().field,
                format!("limits.{field}")
            );
            let src = format!("name: a\nmodel: openai:x\nlimits: {{{field}: 30}}\n");
            assert!(AgentSpec::from_yaml(&src).is_ok());
        }
        let src = "name: a\nmodel: openai:x\nlimits: {max_concurrent_runs: 0}\n";
        assert_eq!(
            AgentSpec::from_yaml(src).unwrap_err().field,
            "limits.max_concurrent_runs"
        );
        let src = "name: a\nmodel: openai:x\nlimits: {max_concurrent_runs: 4}\n";
        assert_eq!(
            AgentSpec::from_yaml(src)
                .unwrap()
                .limits
                .max_concurrent_runs,
            Some(4)
        );
    }

    #[test]
    fn declared_general_purpose_replaces_builtin() {
        let src = "name: a\nmodel: openai:x\nsubagents:\n  - {name: general-purpose, description: mine}\n";
        let spec = AgentSpec::from_yaml(src).unwrap();
        let subs = spec.all_subagents();
        assert_eq!(subs.len(), 1);
        assert_eq!(subs[0].description, "mine");
    }
}
