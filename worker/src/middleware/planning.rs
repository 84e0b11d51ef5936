//! Planning: the opt-in `write_todos` tool and its guidance.

use std::sync::Arc;

use crate::context::StepContext;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};
use crate::tools::DynTool;
use crate::tools::write_todos::WriteTodos;

const GUIDANCE: &str = include_str!("../prompts/planning.md");

/// Adds `write_todos`; the list lives in the thread's custom state under
/// `todos`.
pub struct Planning;

impl Middleware for Planning {
    fn name(&self) -> &'static str {
        "planning"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![Arc::new(WriteTodos)]
    }

    fn prompt(&self, _cx: &StepContext) -> Option<PromptSection> {
        Some(PromptSection::new(Slot::Middleware, GUIDANCE))
    }
}
