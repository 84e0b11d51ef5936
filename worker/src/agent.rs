//! An agent: a spec turned into a model client, a middleware stack and
//! tools, for one role (the main agent or one subagent type) at one depth.
//!
//! Building one resolves the model and derives tool schemas, so workers
//! cache agents ([`AgentCache`]) instead of rebuilding them per step.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use deepfleet_model::ModelClient;
use deepfleet_model::Providers;
use deepfleet_proto::{AgentSpec, RunRecord};

use crate::error::StepError;
use crate::middleware::filesystem::Filesystem;
use crate::middleware::patch_tool_calls::PatchToolCalls;
use crate::middleware::planning::Planning;
use crate::middleware::subagents::Subagents;
use crate::middleware::{Middleware, StepCx};
use crate::prompt::{self, PromptSection, Slot};
use crate::tools::ToolRegistry;

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
    /// The role's own instructions (the spec's or subagent's prompt).
    own_prompt: Option<String>,
}

impl Agent {
    /// Builds the agent that plays `run`'s role: the spec's main agent, or
    /// the subagent named in the run.
    ///
    /// The stack, outermost first: patch dangling tool calls, filesystem,
    /// planning (opt-in), subagents (while depth allows). Keep
    /// `docs/middleware.md` in step with this function.
    pub fn build(
        spec: &AgentSpec,
        run: &RunRecord,
        providers: &Providers,
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

        let mut stack: Vec<Arc<dyn Middleware>> =
            vec![Arc::new(PatchToolCalls), Arc::new(Filesystem::new(true))];
        if spec.planning {
            stack.push(Arc::new(Planning));
        }
        let subagents = spec.all_subagents();
        if run.depth < spec.limits.max_subagent_depth && !subagents.is_empty() {
            stack.push(Arc::new(Subagents::new(subagents)));
        }

        let mut tools = ToolRegistry::default();
        for layer in &stack {
            for tool in layer.tools() {
                tools.register(tool);
            }
        }
        if let Some(allow) = role.as_ref().and_then(|r| r.tools.as_ref()) {
            tools.retain(|name| allow.iter().any(|a| a == name));
        }

        Ok(Agent {
            name: role
                .as_ref()
                .map_or_else(|| spec.name.clone(), |r| r.name.clone()),
            model: resolved.client,
            model_name: resolved.model,
            stack,
            tools,
            own_prompt: match &role {
                Some(r) => r.system_prompt.clone(),
                None => spec.system_prompt.clone(),
            },
        })
    }

    /// The system prompt for a step, sections in DESIGN §7 order.
    pub fn system_prompt(&self, cx: &StepCx) -> String {
        let mut sections = vec![PromptSection::new(Slot::Base, prompt::BASE_PROMPT)];
        if let Some(own) = &self.own_prompt {
            sections.push(PromptSection::new(Slot::Agent, own.clone()));
        }
        sections.extend(self.stack.iter().filter_map(|m| m.prompt(cx)));
        prompt::assemble(sections)
    }
}

/// Built agents by (spec content, role, depth).
#[derive(Default)]
pub struct AgentCache {
    agents: Mutex<HashMap<u64, Arc<Agent>>>,
}

impl AgentCache {
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
        let agent = Arc::new(Agent::build(spec, run, providers)?);
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
    (run.depth < spec.limits.max_subagent_depth).hash(&mut h);
    h.finish()
}
