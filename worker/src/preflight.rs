//! Checking a spec against what a worker can run, before any task does:
//! what [`AgentSpec::validate`] cannot know because it needs the worker's
//! providers, tools and templates. A spec that passes validation but
//! names a provider no worker serves, a replay script that is not there,
//! a prompt template that does not parse, or an `interrupt_on` gate on a
//! tool the agent does not have (a typo would let the real tool run
//! without review) would fail or misbehave on every task; here it fails
//! once, naming the field.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Utc;
use deepfleet_model::Providers;
use deepfleet_proto::hitl::InterruptOn;
use deepfleet_proto::mcp::McpServer;
use deepfleet_proto::{AgentSpec, RunRecord, RunStatus, SpecError};

use crate::agent::{Agent, AgentOptions};
use crate::mcp::naming;
use crate::middleware::prompt_template::PromptTemplate;

/// Checks `spec` as a worker with `providers` and `options` would run it.
/// The error names the field; [`SpecError::located`] adds its line.
pub fn check(
    spec: &AgentSpec,
    providers: &Providers,
    options: &AgentOptions,
) -> Result<(), SpecError> {
    check_models(spec, providers)?;
    if let Some(template) = &spec.system_prompt_template {
        PromptTemplate::parse(template)
            .map_err(|m| SpecError::field("system_prompt_template", m))?;
    }
    check_gates(spec, providers, options)
}

/// Every model the spec names, with its field.
fn models(spec: &AgentSpec) -> impl Iterator<Item = (String, &String)> {
    let subagent_models = spec
        .subagents
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((format!("subagents[{i}].model"), s.model.as_ref()?)));
    std::iter::once(("model".to_owned(), &spec.model)).chain(subagent_models)
}

/// Every model the spec names resolves: a provider the worker serves
/// (with its key, where it needs one), a replay script that loads.
fn check_models(spec: &AgentSpec, providers: &Providers) -> Result<(), SpecError> {
    for (field, model) in models(spec) {
        providers
            .resolve(model)
            .map_err(|e| SpecError::field(field, format!("'{model}': {e}")))?;
    }
    Ok(())
}

/// Makes one cheap authenticated call (listing models) per provider the
/// spec's models use, so a key the provider refuses, or a host that does
/// not answer, fails once, naming the field, before any run. Run after
/// [`check`].
pub async fn check_access(spec: &AgentSpec, providers: &Providers) -> Result<(), SpecError> {
    let mut checked = BTreeSet::new();
    for (field, model) in models(spec) {
        let provider = model.split_once(':').map_or(model.as_str(), |(p, _)| p);
        if !checked.insert(provider) {
            continue;
        }
        let refused = |e: deepfleet_model::ModelError| {
            SpecError::field(
                field.clone(),
                format!("'{model}': provider {provider} refused the check: {e}"),
            )
        };
        let resolved = providers.resolve(model).map_err(refused)?;
        resolved.client.check_access().await.map_err(refused)?;
    }
    Ok(())
}

/// Every `interrupt_on` key names a tool of the roles it gates: the
/// spec's own keys a tool of the main agent or of a subagent that
/// inherits them, a subagent's keys one of its tools. MCP tools are named
/// only once their servers are listed, so a key names one of them when
/// [`naming::gate_accepted`] is sure it will.
fn check_gates(
    spec: &AgentSpec,
    providers: &Providers,
    options: &AgentOptions,
) -> Result<(), SpecError> {
    let tools_of = |subagent: Option<&str>| -> Result<Vec<String>, SpecError> {
        let run = RunRecord {
            subagent: subagent.map(str::to_owned),
            status: RunStatus::Running,
            depth: u32::from(subagent.is_some()),
            ..RunRecord::new("preflight", "preflight", spec.name.clone(), Utc::now())
        };
        let agent = Agent::build_with(spec, &run, providers, options)
            .map_err(|e| SpecError::field("", e.to_string()))?;
        Ok(agent.tools.names().to_vec())
    };
    let main = tools_of(None)?;
    let mut inherited = vec![Role {
        mcp: spec.mcp_servers_for(None),
        tools: main,
    }];
    let declared: BTreeMap<&str, usize> = spec
        .subagents
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    for sub in spec.all_subagents() {
        let role = Role {
            mcp: spec.mcp_servers_for(Some(&sub.name)),
            tools: tools_of(Some(&sub.name))?,
        };
        match (&sub.interrupt_on, declared.get(sub.name.as_str())) {
            (Some(gates), Some(i)) => {
                check_keys(&format!("subagents[{i}].interrupt_on"), gates, &[role])?;
            }
            _ => inherited.push(role),
        }
    }
    check_keys("interrupt_on", &spec.interrupt_on, &inherited)
}

/// A role's built-in tools and MCP servers.
struct Role {
    tools: Vec<String>,
    mcp: BTreeMap<String, McpServer>,
}

fn check_keys(
    field: &str,
    gates: &BTreeMap<String, InterruptOn>,
    roles: &[Role],
) -> Result<(), SpecError> {
    let gated = |key: &str| {
        roles.iter().any(|r| {
            r.tools.iter().any(|t| t == key) || naming::gate_accepted(key, &r.mcp, &r.tools)
        })
    };
    let Some(unknown) = gates.keys().find(|k| !gated(k)) else {
        return Ok(());
    };
    let mut names: Vec<&str> = roles
        .iter()
        .flat_map(|r| r.tools.iter().map(String::as_str))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mcp = if roles.iter().any(|r| !r.mcp.is_empty()) {
        "; gate an MCP tool as SERVER__TOOL"
    } else {
        ""
    };
    Err(SpecError::field(
        format!("{field}.{unknown}"),
        format!(
            "'{unknown}' names no tool of this agent, so nothing would be gated (tools: {}{mcp})",
            names.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A dir with a replay script, and providers serving it.
    fn setup() -> (tempfile::TempDir, String, Providers) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s.yaml");
        std::fs::write(&script, "rules: []\n").unwrap();
        let model = format!("replay:{}", script.display());
        let providers =
            deepfleet_replay::register(Providers::with_env(Default::default(), |_| None));
        (dir, model, providers)
    }

    fn checked(yaml: &str) -> Result<(), SpecError> {
        let (_dir, model, providers) = setup();
        let source = format!("name: a\nmodel: '{model}'\n{yaml}");
        let spec = AgentSpec::from_yaml(&source).unwrap();
        check(&spec, &providers, &AgentOptions::default()).map_err(|e| e.located(&source))
    }

    #[test]
    fn a_spec_that_can_run_passes() {
        checked(
            "planning: true\ninterrupt_on: {write_file: true, task: true, write_todos: false}\n\
             system_prompt_template: 'Hi {{context.user}}'\n",
        )
        .unwrap();
    }

    #[test]
    fn a_gate_on_no_tool_names_the_key_and_line() {
        let err = checked("interrupt_on:\n  write_fle: true\n").unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.line),
            ("interrupt_on.write_fle", Some(4))
        );
        assert!(err.message.contains("write_file"), "{err}");
        // `write_todos` exists only with planning.
        let err = checked("interrupt_on: {write_todos: true}\n").unwrap_err();
        assert_eq!(err.field, "interrupt_on.write_todos");
    }

    /// `execute` exists only with a sandbox, and the check never needs
    /// one: a scheduler without bubblewrap accepts the spec its workers
    /// will run.
    #[test]
    fn execute_can_be_gated_when_the_spec_declares_a_sandbox() {
        let options = AgentOptions {
            sandbox: std::sync::Arc::new(crate::sandbox::SandboxHost::searching("/nonexistent")),
            ..AgentOptions::default()
        };
        let (_dir, model, providers) = setup();
        let spec = |yaml: &str| AgentSpec::from_yaml(&format!("name: a\nmodel: '{model}'\n{yaml}"));
        let gated = spec("sandbox: {}\ninterrupt_on: {execute: true}\n").unwrap();
        check(&gated, &providers, &options).unwrap();
        let ungated = spec("interrupt_on: {execute: true}\n").unwrap();
        let err = check(&ungated, &providers, &options).unwrap_err();
        assert_eq!(err.field, "interrupt_on.execute");
    }

    #[test]
    fn gates_on_mcp_tools_are_accepted_where_their_names_are_certain() {
        let servers = "mcp_servers:\n  web: {url: 'http://h/mcp'}\n  fs: {command: x, tools: [read_text_file]}\n";
        checked(&format!(
            "{servers}interrupt_on: {{web__fetch: true, fs__read_text_file: true}}\n"
        ))
        .unwrap();
        // `web` may offer a `read_text_file` too, and then both are prefixed.
        let err = checked(&format!(
            "{servers}interrupt_on: {{read_text_file: true}}\n"
        ))
        .unwrap_err();
        assert_eq!(err.field, "interrupt_on.read_text_file");
        assert!(err.message.contains("SERVER__TOOL"), "{err}");
        let err = checked(&format!("{servers}interrupt_on: {{fs__write: true}}\n")).unwrap_err();
        assert_eq!(err.field, "interrupt_on.fs__write");
    }

    #[test]
    fn a_subagent_gate_is_checked_against_its_own_tools() {
        let sub = "subagents:\n  - name: r\n    description: d\n    tools: [ls]\n";
        checked(&format!("{sub}    interrupt_on: {{ls: true}}\n")).unwrap();
        let err = checked(&format!("{sub}    interrupt_on: {{read_file: true}}\n")).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.line),
            ("subagents[0].interrupt_on.read_file", Some(7))
        );
    }

    #[test]
    fn unknown_providers_missing_scripts_and_bad_templates_are_refused() {
        let (_dir, model, providers) = setup();
        let options = AgentOptions::default();
        for (yaml, field, says) in [
            (
                "model: nosuch:m\n".to_owned(),
                "model",
                "unknown model provider",
            ),
            (
                "model: replay:/no/such/script.yaml\n".to_owned(),
                "model",
                "cannot read",
            ),
            (
                format!(
                    "model: '{model}'\nsubagents:\n  - {{name: r, description: d, model: 'nope:x'}}\n"
                ),
                "subagents[0].model",
                "unknown model provider",
            ),
            (
                format!("model: '{model}'\nsystem_prompt_template: '{{{{contxt.a}}}}'\n"),
                "system_prompt_template",
                "unknown variable",
            ),
        ] {
            let spec = AgentSpec::from_yaml(&format!("name: a\n{yaml}")).unwrap();
            let err = check(&spec, &providers, &options).unwrap_err();
            assert_eq!(err.field, field, "{yaml}");
            assert!(err.message.contains(says), "{yaml}: {err}");
        }
    }
}
