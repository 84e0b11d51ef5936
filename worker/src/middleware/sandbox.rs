//! The sandbox middleware: the `execute` tool and its guidance, for specs
//! that declare a sandbox.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_proto::SandboxSpec;

use crate::context::StepContext;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};
use crate::sandbox::SandboxHost;
use crate::tools::DynTool;
use crate::tools::execute::Execute;

const GUIDANCE: &str = include_str!("../prompts/execute.md");

/// Offers `execute` over `host`, under the spec's limits.
pub struct Sandbox {
    execute: Arc<Execute>,
}

impl Sandbox {
    /// The middleware of a spec's `sandbox` section; `tool_timeout` is the
    /// worker's limit of one tool call, `routed` the spec's route prefixes.
    pub fn new(
        limits: SandboxSpec,
        host: Arc<SandboxHost>,
        tool_timeout: Duration,
        routed: Vec<String>,
    ) -> Self {
        Sandbox {
            execute: Arc::new(Execute::new(host, limits, tool_timeout, routed)),
        }
    }
}

impl Middleware for Sandbox {
    fn name(&self) -> &'static str {
        "sandbox"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![Arc::clone(&self.execute) as Arc<dyn DynTool>]
    }

    /// Dropped by the agent when a subagent's allowlist leaves `execute`
    /// out (see [`crate::agent::Agent::system_prompt`]).
    fn prompt(&self, _cx: &StepContext) -> Option<PromptSection> {
        Some(PromptSection::new(Slot::Execute, GUIDANCE))
    }
}
