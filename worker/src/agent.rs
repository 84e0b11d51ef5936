//! An agent: a spec turned into a model client, a middleware stack and
//! tools, for one role (the main agent or one subagent type) at one depth.
//!
//! Building one resolves the model and derives tool schemas, so workers
//! cache agents ([`AgentCache`]) instead of rebuilding them per step.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deepfleet_fleet::tokens::count_recurring;
use deepfleet_model::ModelClient;
use deepfleet_model::Providers;
use deepfleet_proto::harness::HarnessProfile;
use deepfleet_proto::hitl::InterruptOn;
use deepfleet_proto::{
    AgentSpec, InputLimits, ModelParams, ModelProfile, Price, Prices, RunRecord, SubagentSpec,
};

use crate::compress::budget::Policy;
use crate::compress::engine::Compressor;
use crate::compress::summarize::Summarizer;
use crate::context::StepContext;
use crate::error::StepError;
use crate::gates::Gates;
use crate::mcp::McpPool;
use crate::middleware::Middleware;
use crate::middleware::async_subagents::AsyncSubagents;
use crate::middleware::filesystem::Filesystem;
use crate::middleware::mcp_tools::McpTools;
use crate::middleware::memory::Memory;
use crate::middleware::patch_tool_calls::PatchToolCalls;
use crate::middleware::planning::Planning;
use crate::middleware::profile::{self, ToolExclusion};
use crate::middleware::prompt_template::{DynamicPrompt, PromptTemplate};
use crate::middleware::sandbox::Sandbox;
use crate::middleware::skills::Skills;
use crate::middleware::subagents::Subagents;
use crate::middleware::summarization::{CompactionTool, Summarization};
use crate::prompt::{self, PromptSection, Slot};
use crate::sandbox::SandboxHost;
use crate::time_limits::DEFAULT_TOOL_TIMEOUT;
use crate::tool_names::ToolNames;
use crate::tools::execute::Execute;
use crate::tools::http_tool::HttpTool;
use crate::tools::{Tool, ToolRegistry};

/// A runnable agent.
pub struct Agent {
    /// The agent's or subagent's name.
    pub name: String,
    /// The model client.
    pub model: Arc<dyn ModelClient>,
    /// The model name sent to the provider.
    pub model_name: String,
    /// Middleware, outermost first.
    pub stack: Vec<Arc<dyn Middleware>>,
    /// Tools offered to the model.
    pub tools: ToolRegistry,
    /// Tokens the tools' names, descriptions and schemas add to every
    /// request, counted once when the agent is built: part of what the
    /// rate limiter is told a call will use.
    pub tool_tokens: u64,
    /// The model's window, when known (the spec's `model_profile`, for
    /// roles on the spec's model, else the resolved model's profile);
    /// compression sizes itself by it.
    pub profile: Option<ModelProfile>,
    /// How long one of its tool calls may take.
    pub tool_timeout: Duration,
    /// How large a file its tools may write and how many a thread holds.
    pub file_limits: InputLimits,
    /// The role's sampling settings (a subagent's own over the spec's).
    pub params: ModelParams,
    /// What its model's calls cost (summaries run on the same model);
    /// `None` for a model the worker's prices do not list.
    pub price: Option<Price>,
    /// Where its `execute` runs commands, when it has the tool: a step of
    /// a worker that cannot sandbox refuses the run.
    pub sandbox: Option<Arc<SandboxHost>>,
    /// The role's own instructions (the spec's or subagent's prompt).
    own_prompt: Option<String>,
    /// The base section: the harness's base prompt, or its harness
    /// profile's replacement, plus the profile's suffix.
    base_prompt: String,
    /// The role's MCP layer (also in `stack`), whose routes gates are
    /// resolved against.
    mcp: Option<Arc<McpTools>>,
    /// The role's `interrupt_on`.
    interrupt_on: BTreeMap<String, InterruptOn>,
    /// The human-in-the-loop notes, when the role's `interrupt_on` gates
    /// any tool.
    review_prompt: Option<String>,
    /// The last system prompt it assembled, handed out again while the
    /// text stays the same, with its tokens once counted.
    last_prompt: Mutex<Option<(Arc<str>, Option<u32>)>>,
}

impl Agent {
    /// Builds the agent that plays `run`'s role: the spec's main agent, or
    /// the subagent named in the run.
    ///
    /// The stack, outermost first: summarization, patch dangling tool
    /// calls, filesystem, sandbox (when the spec declares one), planning
    /// (opt-in), subagents (while depth allows), the
    /// `compact_conversation` tool (opt-in). Keep
    /// `docs/middleware.md` in step with this function.
    pub fn build(
        spec: &AgentSpec,
        run: &RunRecord,
        providers: &Providers,
    ) -> Result<Self, StepError> {
        Self::build_with(spec, run, providers, &AgentOptions::default())
    }

    /// [`Agent::build`] with the worker's options: its harness profiles (by
    /// `provider:model` or `provider`; the spec's `profiles` lie on top) and
    /// its own middleware. Memory, skills and a prompt template join the
    /// stack after the filesystem when the spec asks for them (memory and
    /// the template for the main agent only); the worker's middleware comes
    /// after the built-in layers, and a profile's tool exclusion last.
    pub fn build_with(
        spec: &AgentSpec,
        run: &RunRecord,
        providers: &Providers,
        options: &AgentOptions,
    ) -> Result<Self, StepError> {
        let invalid = |message: String| StepError::Agent {
            agent: spec.name.clone(),
            message,
        };
        let role = match &run.subagent {
            Some(name) => Some(
                spec.subagent(name)
                    .ok_or_else(|| invalid(format!("no subagent named '{name}'")))?,
            ),
            None => None,
        };
        let model_spec = role
            .as_ref()
            .and_then(|r| r.model.clone())
            .unwrap_or_else(|| spec.model.clone());
        let resolved = providers
            .resolve(&model_spec)
            .map_err(|e| invalid(format!("model '{model_spec}': {e}")))?;

        // A subagent on a model of its own does not share the spec's window;
        // the provider's profile (config, then the built-in table) fills in.
        let profile = spec
            .model_profile
            .filter(|_| role.as_ref().is_none_or(|r| r.model.is_none()))
            .or(resolved.profile);
        let compressor = Arc::new(Compressor::new(
            Summarizer::new(
                Arc::clone(&resolved.client),
                resolved.model.clone(),
                profile.map(|p| p.max_output_tokens),
            ),
            Policy::for_profile(profile),
        ));
        let mut stack = built_in_stack(spec, run, role.as_ref(), compressor, options)
            .map_err(|m| invalid(format!("system_prompt_template: {m}")))?;
        let mcp = McpTools::for_role(spec, role.as_ref(), &options.mcp).map(Arc::new);
        if let Some(mcp) = &mcp {
            stack.push(Arc::clone(mcp) as Arc<dyn Middleware>);
        }
        stack.extend(options.middleware.iter().cloned());
        let harness = profile::resolve(&options.profiles, &spec.profiles, &model_spec);

        let mut tools = ToolRegistry::default();
        for layer in &stack {
            for tool in layer.tools() {
                tools.register(tool);
            }
        }
        register_http_tools(spec, role.as_ref(), &mut tools).map_err(invalid)?;
        if let Some(allow) = role.as_ref().and_then(|r| r.tools.as_ref()) {
            tools.retain(|name| allow.iter().any(|a| a == name));
        }
        profile::apply_to_tools(&harness, &mut tools);
        if !harness.excluded_tools.is_empty() {
            // Innermost, so other layers' wrapping never reaches an
            // excluded tool.
            stack.push(Arc::new(ToolExclusion::new(harness.excluded_tools.clone())));
        }

        let tool_tokens = tools
            .specs()
            .iter()
            .map(|tool| {
                let text = [
                    tool.name.as_str(),
                    tool.description.as_str(),
                    &tool.parameters.to_string(),
                ]
                .concat();
                u64::from(count_recurring(&text))
            })
            .sum();
        let price = price(&options.prices, &model_spec, &resolved.model);
        let interrupt_on = spec.interrupt_on_for(run.subagent.as_deref());
        let sandbox = tools
            .get(Execute::NAME)
            .map(|_| Arc::clone(&options.sandbox));
        Ok(Agent {
            name: role
                .as_ref()
                .map_or_else(|| spec.name.clone(), |r| r.name.clone()),
            model: resolved.client,
            model_name: resolved.model,
            stack,
            tools,
            tool_tokens,
            profile,
            tool_timeout: options.tool_timeout,
            file_limits: options.file_limits,
            params: spec.model_params_for(role.as_ref()),
            price,
            sandbox,
            mcp,
            review_prompt: review_prompt(&interrupt_on),
            interrupt_on,
            own_prompt: match &role {
                Some(r) => r.system_prompt.clone(),
                None => spec.system_prompt.clone(),
            },
            base_prompt: profile::base_prompt(&harness, prompt::BASE_PROMPT),
            last_prompt: Mutex::new(None),
        })
    }

    /// The role's `interrupt_on`, resolved to the tools its keys name
    /// over the names its calls may use now: its own tools, and the MCP
    /// tools as the next call would be routed (cached listings only, no
    /// server is started). Without any gate on, MCP names are not read.
    pub async fn gates(&self, cx: &StepContext) -> Gates<'_> {
        let builtins = self.tools.names();
        let gated = self.interrupt_on.values().any(|g| g.allowed().is_some());
        let mcp = match &self.mcp {
            Some(mcp) if gated => Some(mcp.routes(&cx.tool(""), builtins, false).await),
            _ => None,
        };
        Gates::new(&self.interrupt_on, ToolNames::new(builtins, mcp))
    }

    /// The system prompt for a step, sections in DESIGN §7 order.
    ///
    /// An agent's runs mostly share their prompt, and every call in flight
    /// holds it: a text the same as the last one comes back as that one,
    /// so that they hold one copy (and their bodies share its bytes).
    pub fn system_prompt(&self, cx: &StepContext) -> Arc<str> {
        let text = self.assemble_prompt(cx);
        let mut last = self.last_prompt.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((kept, _)) = last.as_ref().filter(|(kept, _)| **kept == *text) {
            return Arc::clone(kept);
        }
        let fresh: Arc<str> = text.into();
        *last = Some((Arc::clone(&fresh), None));
        fresh
    }

    /// Tokens of `prompt`, a prompt [`Agent::system_prompt`] handed out:
    /// counted once while it stays the agent's prompt, rather than hashed
    /// per call to find its count.
    pub fn prompt_tokens(&self, prompt: &Arc<str>) -> u32 {
        let mut last = self.last_prompt.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_mut() {
            Some((kept, tokens)) if Arc::ptr_eq(kept, prompt) => {
                *tokens.get_or_insert_with(|| count_recurring(prompt))
            }
            _ => count_recurring(prompt),
        }
    }

    fn assemble_prompt(&self, cx: &StepContext) -> String {
        let mut sections = vec![PromptSection::new(Slot::Base, self.base_prompt.clone())];
        if let Some(own) = &self.own_prompt {
            sections.push(PromptSection::new(Slot::Agent, own.clone()));
        }
        // The execute guidance goes with the tool, which a subagent's
        // allowlist may leave out.
        let execute = self.sandbox.is_some();
        sections.extend(
            self.stack
                .iter()
                .filter_map(|m| m.prompt(cx))
                .filter(|s| execute || s.slot != Slot::Execute),
        );
        if let Some(review) = &self.review_prompt {
            sections.push(PromptSection::new(Slot::HumanInTheLoop, review.clone()));
        }
        prompt::assemble(sections)
    }
}

/// The human-in-the-loop section: what reviewers do, and which tools they
/// gate with which decisions.
/// The price of `model` (the provider's name for it) reached through
/// `model_spec` (`provider:model`).
fn price(prices: &Prices, model_spec: &str, model: &str) -> Option<Price> {
    let provider = model_spec.split_once(':').map_or("", |(p, _)| p);
    prices.price(provider, model).copied()
}

fn review_prompt(gates: &BTreeMap<String, InterruptOn>) -> Option<String> {
    let gated: Vec<String> = gates
        .iter()
        .filter_map(|(tool, gate)| {
            let allowed = gate.allowed()?;
            let names: Vec<&str> = allowed.iter().map(|d| d.as_str()).collect();
            Some(format!("- `{tool}` ({})", names.join(", ")))
        })
        .collect();
    if gated.is_empty() {
        return None;
    }
    Some(format!(
        "{}\n{}",
        REVIEW_PROMPT.trim_end(),
        gated.join("\n")
    ))
}

const REVIEW_PROMPT: &str = include_str!("prompts/hitl.md");

/// Adds the spec's HTTP tools (a subagent's own after its parent's) to
/// `tools`; one may not take the name of another tool of the agent.
fn register_http_tools(
    spec: &AgentSpec,
    role: Option<&SubagentSpec>,
    tools: &mut ToolRegistry,
) -> Result<(), String> {
    let own = role.map(|r| r.http_tools.as_slice()).unwrap_or_default();
    for declared in spec.http_tools.iter().chain(own) {
        if tools.contains(&declared.name) {
            return Err(format!(
                "http tool '{}' has the name of another tool of the agent",
                declared.name
            ));
        }
        tools.register(HttpTool::new(declared.clone(), spec.state_schema.as_ref())?);
    }
    Ok(())
}

/// Built agents by (spec content, role, depth).
#[derive(Default)]
pub struct AgentCache {
    agents: Mutex<HashMap<u64, Arc<Agent>>>,
    options: AgentOptions,
}

/// What a worker adds to every agent it builds.
#[derive(Clone)]
pub struct AgentOptions {
    /// Harness profiles by `provider:model` or `provider` (from the
    /// worker's configuration).
    pub profiles: BTreeMap<String, HarnessProfile>,
    /// The worker's own middleware (a team's extensions), in stack order,
    /// after the built-in layers.
    pub middleware: Vec<Arc<dyn Middleware>>,
    /// How long one tool call may take (`worker.tool_timeout_secs`).
    pub tool_timeout: Duration,
    /// What the thread's file tools may write (`[limits]`).
    pub file_limits: InputLimits,
    /// The worker's MCP connections, shared by all its runs.
    pub mcp: Arc<McpPool>,
    /// Where `execute` runs commands: the process's host unless a test
    /// says otherwise.
    pub sandbox: Arc<SandboxHost>,
    /// Model prices (`[prices]` over the built-in table).
    pub prices: Prices,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            profiles: BTreeMap::new(),
            middleware: Vec::new(),
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            file_limits: InputLimits::default(),
            mcp: Arc::default(),
            sandbox: SandboxHost::system(),
            prices: Prices::default(),
        }
    }
}

impl AgentCache {
    /// A cache whose agents are built with `options`.
    pub fn new(options: AgentOptions) -> Self {
        AgentCache {
            agents: Mutex::default(),
            options,
        }
    }

    /// The options agents are built with.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// The agent for `run`, built on first use.
    pub fn get(
        &self,
        spec: &AgentSpec,
        run: &RunRecord,
        providers: &Providers,
    ) -> Result<Arc<Agent>, StepError> {
        let key = cache_key(spec, run);
        if let Some(agent) = self.lock().get(&key) {
            return Ok(Arc::clone(agent));
        }
        let agent = Arc::new(Agent::build_with(spec, run, providers, &self.options)?);
        self.lock().insert(key, Arc::clone(&agent));
        Ok(agent)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Agent>>> {
        self.agents.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn cache_key(spec: &AgentSpec, run: &RunRecord) -> u64 {
    let mut h = DefaultHasher::new();
    // The serialised spec, so an updated spec with the same name rebuilds.
    serde_json::to_string(spec).unwrap_or_default().hash(&mut h);
    run.subagent.hash(&mut h);
    (run.depth < spec.limits.subagent_depth()).hash(&mut h);
    h.finish()
}

/// The built-in layers for a run of `spec` (as subagent `role`, if any),
/// outermost first; the order is written up in `docs/middleware.md`. A
/// system prompt template that does not parse is the error.
fn built_in_stack(
    spec: &AgentSpec,
    run: &RunRecord,
    role: Option<&SubagentSpec>,
    compressor: Arc<Compressor>,
    options: &AgentOptions,
) -> Result<Vec<Arc<dyn Middleware>>, String> {
    let mut stack: Vec<Arc<dyn Middleware>> = vec![
        Arc::new(Summarization::new(Arc::clone(&compressor))),
        Arc::new(PatchToolCalls),
        Arc::new(Filesystem::new(true)),
    ];
    if let Some(limits) = spec.sandbox {
        let routed = spec.backend.effective_routes().into_keys().collect();
        stack.push(Arc::new(Sandbox::new(
            limits,
            Arc::clone(&options.sandbox),
            options.tool_timeout,
            routed,
        )));
    }
    if role.is_none() {
        if let Some(template) = &spec.system_prompt_template {
            stack.push(Arc::new(DynamicPrompt::new(PromptTemplate::parse(
                template,
            )?)));
        }
        if !spec.memory.is_empty() {
            stack.push(Arc::new(Memory::new(spec.memory.clone())));
        }
    }
    let general_purpose = role.is_some_and(|r| r.name == deepfleet_proto::spec::GENERAL_PURPOSE);
    if !spec.skills.is_empty() && (role.is_none() || general_purpose) {
        stack.push(Arc::new(Skills::new(spec.skills.clone())));
    }
    if spec.planning {
        stack.push(Arc::new(Planning));
    }
    // Async subagents run in the background through their own tools.
    let (background, subagents): (Vec<_>, Vec<_>) =
        spec.all_subagents().into_iter().partition(|s| s.run_async);
    let nests = run.depth < spec.limits.subagent_depth();
    if nests && !subagents.is_empty() {
        stack.push(Arc::new(Subagents::new(subagents)));
    }
    if nests && !background.is_empty() {
        stack.push(Arc::new(AsyncSubagents::new(background)));
    }
    if spec.compact_tool {
        stack.push(Arc::new(CompactionTool::new(compressor)));
    }
    Ok(stack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use deepfleet_proto::RunStatus;

    fn run(subagent: Option<&str>, depth: u32) -> RunRecord {
        RunRecord {
            subagent: subagent.map(str::to_owned),
            status: RunStatus::Running,
            depth,
            ..RunRecord::new("r", "t", "researcher", Utc::now())
        }
    }

    fn agent(spec: &AgentSpec, run: &RunRecord) -> Agent {
        let dir = std::env::temp_dir().join(format!("df-agent-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("s.yaml");
        std::fs::write(&script, "rules: []\n").unwrap();
        let mut spec = spec.clone();
        spec.model = format!("replay:{}", script.display());
        let providers =
            deepfleet_replay::register(Providers::with_env(Default::default(), |_| None));
        Agent::build(&spec, run, &providers).unwrap()
    }

    fn spec() -> AgentSpec {
        AgentSpec::from_yaml(
            "name: researcher\nmodel: replay:x\nsystem_prompt: You research things.\nplanning: true\n\
             subagents:\n  - {name: critic, description: Reviews drafts., system_prompt: You critique., tools: [read_file]}\n",
        )
        .unwrap()
    }

    fn cx() -> StepContext {
        StepContext::test(spec(), run(None, 0))
    }

    // DESIGN §7: agent prompt, base, ..., filesystem, task, middleware.
    #[test]
    fn main_agent_prompt_layout() {
        let agent = agent(&spec(), &run(None, 0));
        insta::assert_snapshot!(agent.system_prompt(&cx()));
        assert_eq!(
            agent.tools.names(),
            [
                "ls",
                "read_file",
                "write_file",
                "edit_file",
                "delete",
                "glob",
                "grep",
                "write_todos",
                "task"
            ]
        );
    }

    /// The rate limiter is told of the tools' schemas too: a subagent
    /// offered one tool counts far fewer than the main agent's nine.
    #[test]
    fn tool_schemas_are_counted_once_per_agent() {
        let main = agent(&spec(), &run(None, 0));
        let critic = agent(&spec(), &run(Some("critic"), 1));
        assert_eq!(critic.tools.names(), ["read_file"]);
        assert!(critic.tool_tokens > 20, "{}", critic.tool_tokens);
        assert!(
            main.tool_tokens > 5 * critic.tool_tokens,
            "{} against {}",
            main.tool_tokens,
            critic.tool_tokens
        );
    }

    /// A sandbox adds `execute` after the file tools and its section after
    /// the file guidance; a subagent whose allowlist leaves it out gets
    /// neither, nor a sandbox to refuse over.
    #[test]
    fn a_sandbox_offers_execute_and_its_prompt_section() {
        let mut spec = spec();
        spec.sandbox = Some(deepfleet_proto::SandboxSpec::default());
        let main = agent(&spec, &run(None, 0));
        insta::assert_snapshot!(main.system_prompt(&cx()));
        assert_eq!(
            main.tools.names(),
            [
                "ls",
                "read_file",
                "write_file",
                "edit_file",
                "delete",
                "glob",
                "grep",
                "execute",
                "write_todos",
                "task"
            ]
        );
        assert!(main.sandbox.is_some());
        let critic = agent(&spec, &run(Some("critic"), 1));
        assert_eq!(critic.tools.names(), ["read_file"]);
        assert!(critic.sandbox.is_none());
        assert!(!critic.system_prompt(&cx()).contains("## Running commands"));
        let general = agent(&spec, &run(Some("general-purpose"), 1));
        assert!(general.tools.names().iter().any(|n| n == "execute"));
        assert!(general.system_prompt(&cx()).contains("## Running commands"));
    }

    /// Steps of one agent whose prompt reads the same hold one copy of it.
    #[test]
    fn the_same_prompt_is_handed_out_once() {
        let agent = agent(&spec(), &run(None, 0));
        let first = agent.system_prompt(&cx());
        let second = agent.system_prompt(&cx());
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(*first, agent.assemble_prompt(&cx()));
        let tokens = count_recurring(&first);
        assert_eq!(agent.prompt_tokens(&first), tokens);
        assert_eq!(agent.prompt_tokens(&second), tokens);
        // A text it no longer holds is counted all the same.
        let other: Arc<str> = Arc::from(format!("{first} and more"));
        assert_eq!(agent.prompt_tokens(&other), count_recurring(&other));
    }

    #[test]
    fn subagents_get_their_own_prompt_and_tool_allowlist_and_no_task_at_the_depth_limit() {
        let agent = agent(&spec(), &run(Some("critic"), 1));
        let prompt = agent.system_prompt(&cx());
        assert!(prompt.starts_with("You critique.\n\n"), "{prompt}");
        assert!(!prompt.contains("## Subagents"), "{prompt}");
        assert_eq!(agent.tools.names(), ["read_file"]);
    }

    // DESIGN §7 item 8: the human-in-the-loop notes come last, naming each
    // gated tool and its decisions.
    #[test]
    fn gated_tools_get_review_notes_last() {
        let mut spec = spec();
        spec.interrupt_on = AgentSpec::from_yaml(
            "name: x\nmodel: replay:x\ninterrupt_on:\n  write_file: true\n  delete: {allowed_decisions: [approve, reject]}\n  ls: false\n",
        )
        .unwrap()
        .interrupt_on;
        let prompt = agent(&spec, &run(None, 0)).system_prompt(&cx());
        let notes = prompt.rsplit("## Approvals").next().unwrap();
        assert!(
            notes.ends_with(
                "- `delete` (approve, reject)\n- `write_file` (approve, edit, reject, respond)"
            ),
            "{notes}"
        );
        assert!(!notes.contains("`ls`"));
        assert!(prompt.find("## Planning").unwrap() < prompt.find("## Approvals").unwrap());
    }

    /// A subagent's `model_params` win per field; the rest, and the
    /// general-purpose subagent's, are the spec's; the step's request
    /// carries them.
    #[test]
    fn model_params_of_each_role_reach_its_requests() {
        let mut spec = spec();
        let with = |yaml: &str| AgentSpec::from_yaml(&format!("name: x\nmodel: replay:x\n{yaml}"));
        spec.model_params = with("model_params: {temperature: 0.2, reasoning_effort: high}")
            .unwrap()
            .model_params;
        spec.subagents[0].model_params = with("model_params: {temperature: 0.9, top_p: 0.5}")
            .unwrap()
            .model_params;
        let request = |subagent: Option<&str>| {
            let run = run(subagent, u32::from(subagent.is_some()));
            let cx = StepContext::test(spec.clone(), run.clone());
            crate::step::model_call::request(&agent(&spec, &run), &cx).sampling
        };
        let sampling = |temperature, top_p| deepfleet_model::Sampling {
            temperature: Some(temperature),
            top_p,
            reasoning_effort: Some(deepfleet_proto::ReasoningEffort::High),
        };
        assert_eq!(request(None), sampling(0.2, None));
        assert_eq!(request(Some("critic")), sampling(0.9, Some(0.5)));
        assert_eq!(request(Some("general-purpose")), sampling(0.2, None));
    }
}
