//! Async subagents: the background-task tools, for subagents declared with
//! `async: true`.

use std::sync::Arc;

use deepfleet_proto::SubagentSpec;

use crate::context::StepContext;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};
use crate::tools::DynTool;
use crate::tools::async_tasks::{CancelAsyncTask, CheckAsyncTask, ListAsyncTasks, StartAsyncTask};

/// Offers `start_async_task`, `check_async_task`, `cancel_async_task` and
/// `list_async_tasks` over the spec's async subagents.
pub struct AsyncSubagents {
    subagents: Vec<SubagentSpec>,
    prompt: String,
}

impl AsyncSubagents {
    /// The tools over these (async) subagents.
    pub fn new(subagents: Vec<SubagentSpec>) -> Self {
        let mut prompt = String::from(
            "## Async subagents\n\nSome subagents run in the background: start_async_task \
             returns a task id at once and you keep working. Do not wait idly: check a task \
             with check_async_task when you need its answer, cancel work you no longer need \
             with cancel_async_task, and see them all with list_async_tasks. Types:",
        );
        for sub in &subagents {
            prompt.push_str(&format!("\n- {}: {}", sub.name, sub.description));
        }
        AsyncSubagents { subagents, prompt }
    }
}

impl Middleware for AsyncSubagents {
    fn name(&self) -> &'static str {
        "async_subagents"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![
            Arc::new(StartAsyncTask::new(&self.subagents)),
            Arc::new(CheckAsyncTask),
            Arc::new(CancelAsyncTask),
            Arc::new(ListAsyncTasks),
        ]
    }

    fn prompt(&self, _cx: &StepContext) -> Option<PromptSection> {
        Some(PromptSection::new(Slot::Middleware, self.prompt.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_support::test_cx;

    #[test]
    fn offers_the_four_tools_and_lists_the_types() {
        let sub = SubagentSpec {
            name: "researcher".into(),
            description: "Digs.".into(),
            run_async: true,
            ..deepfleet_proto::spec::general_purpose()
        };
        let layer = AsyncSubagents::new(vec![sub]);
        let names: Vec<String> = layer.tools().iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(
            names,
            [
                "start_async_task",
                "check_async_task",
                "cancel_async_task",
                "list_async_tasks"
            ]
        );
        let prompt = layer.prompt(&test_cx("")).unwrap();
        assert!(
            prompt.text.contains("- researcher: Digs."),
            "{}",
            prompt.text
        );
    }
}
