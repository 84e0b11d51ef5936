//! Subagents: the `task` tool and the list of subagent types.

use std::sync::Arc;

use deepfleet_proto::SubagentSpec;

use crate::context::StepContext;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};
use crate::tools::DynTool;
use crate::tools::task::Task;

const GUIDANCE: &str = include_str!("../prompts/task.md");

/// Offers `task`, which delegates to a subagent run on the fleet.
pub struct Subagents {
    subagents: Vec<SubagentSpec>,
    prompt: String,
}

impl Subagents {
    /// The `task` tool over these subagents.
    pub fn new(subagents: Vec<SubagentSpec>) -> Self {
        let mut prompt = GUIDANCE.trim_end().to_owned();
        for sub in &subagents {
            prompt.push_str(&format!("\n- {}: {}", sub.name, sub.description));
        }
        Subagents { subagents, prompt }
    }
}

impl Middleware for Subagents {
    fn name(&self) -> &'static str {
        "subagents"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![Arc::new(Task::new(&self.subagents))]
    }

    fn prompt(&self, _cx: &StepContext) -> Option<PromptSection> {
        Some(PromptSection::new(Slot::Task, self.prompt.clone()))
    }
}
