//! `task`: delegate a self-contained piece of work to a subagent.
//!
//! The tool does not run the subagent itself: it returns
//! [`ToolOutput::Delegate`], the step parks the run, and the subagent runs
//! as a child run anywhere on the fleet. Its final message becomes this
//! call's result when the parent resumes.

use async_trait::async_trait;
use deepfleet_proto::SubagentSpec;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::ToolView;
use crate::tools::{Tool, ToolOutput, ToolResult};

/// The `task` tool over a fixed set of subagent types.
pub struct Task {
    names: Vec<String>,
    description: String,
}

/// Arguments of `task`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// Everything the subagent needs to do the work, and what its final
    /// answer should contain. It sees nothing else of this conversation.
    pub description: String,
    /// Which subagent type to use; one of those listed in the tool's
    /// description.
    pub subagent_type: String,
}

impl Task {
    /// `task` offering `subagents`.
    pub fn new(subagents: &[SubagentSpec]) -> Self {
        let mut description = String::from(
            "Start a subagent with a fresh context to carry out one self-contained task, and \
             get its final answer back as this tool's result. The subagent is stateless: put \
             all instructions in `description`. Several calls in one turn run in parallel. \
             The result is not shown to the user; summarize what matters.\n\nAvailable agent types:",
        );
        for sub in subagents {
            description.push_str(&format!("\n- {}: {}", sub.name, sub.description));
        }
        Task {
            names: subagents.iter().map(|s| s.name.clone()).collect(),
            description,
        }
    }
}

#[async_trait]
impl Tool for Task {
    const NAME: &'static str = "task";
    type Args = TaskArgs;

    fn description(&self) -> String {
        self.description.clone()
    }

    async fn call(&self, _ctx: &ToolView<'_>, args: TaskArgs) -> ToolResult {
        if !self.names.contains(&args.subagent_type) {
            let allowed = self
                .names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            // A success result, as deepagents does: the model picks again.
            return Ok(ToolOutput::Text(format!(
                "We cannot invoke subagent {} because it does not exist, the only allowed types are {allowed}",
                args.subagent_type
            )));
        }
        Ok(ToolOutput::Delegate {
            subagent: args.subagent_type,
            description: args.description,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use crate::tools::tests::ctx;
    use pretty_assertions::assert_eq;

    fn task() -> Task {
        Task::new(&[deepfleet_proto::spec::general_purpose()])
    }

    #[tokio::test]
    async fn known_type_delegates() {
        let out = task()
            .call_json(
                &ctx().tool("call_1"),
                r#"{"description": "find x", "subagent_type": "general-purpose"}"#,
            )
            .await;
        assert_eq!(
            out,
            Ok(ToolOutput::Delegate {
                subagent: "general-purpose".into(),
                description: "find x".into()
            })
        );
    }

    // deepagents conformance §13.2 item 20 (unknown type).
    #[tokio::test]
    async fn unknown_type_names_the_allowed_ones() {
        let out = task()
            .call_json(
                &ctx().tool("call_1"),
                r#"{"description": "d", "subagent_type": "nope"}"#,
            )
            .await;
        assert_eq!(
            out,
            Ok(ToolOutput::Text(
                "We cannot invoke subagent nope because it does not exist, the only allowed types are `general-purpose`".into()
            ))
        );
    }

    #[tokio::test]
    async fn extra_arguments_are_rejected() {
        let out = task()
            .call_json(
                &ctx().tool("call_1"),
                r#"{"description": "d", "subagent_type": "general-purpose", "x": 1}"#,
            )
            .await;
        assert!(
            matches!(out, Err(crate::tools::ToolError::Model(m)) if m.contains("unknown field `x`"))
        );
    }
}
