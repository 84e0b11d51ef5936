//! `write_todos`: the agent's plan, kept in custom state.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::ToolView;
use crate::tools::{Tool, ToolError, ToolOutput, ToolResult};

/// The state key holding the list.
pub const TODOS_KEY: &str = "todos";

/// The `write_todos` tool.
pub struct WriteTodos;

/// One item of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// Progress of a todo item.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// Arguments of `write_todos`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteTodosArgs {
    /// The complete new list; it replaces the old one.
    pub todos: Vec<Todo>,
}

#[async_trait]
impl Tool for WriteTodos {
    const NAME: &'static str = "write_todos";
    type Args = WriteTodosArgs;

    fn description(&self) -> String {
        "Replace your todo list for the current task. Use it for work with several distinct \
         steps; update statuses (pending, in_progress, completed) as you go. Call it at most \
         once per turn."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: WriteTodosArgs) -> ToolResult {
        let value = serde_json::to_value(&args.todos)
            .map_err(|e| ToolError::Fatal(format!("serialising todos: {e}")))?;
        ctx.state()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(TODOS_KEY.to_owned(), value);
        let items = args
            .todos
            .iter()
            .map(|t| {
                let status = match t.status {
                    TodoStatus::Pending => "pending",
                    TodoStatus::InProgress => "in_progress",
                    TodoStatus::Completed => "completed",
                };
                format!(
                    "{{'content': {}, 'status': '{status}'}}",
                    py_str(&t.content)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        Ok(ToolOutput::Text(format!("Updated todo list to [{items}]")))
    }
}

/// A Python string literal, as deepagents' repr-based outputs show them.
fn py_str(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::DynTool;
    use crate::tools::tests::ctx;
    use pretty_assertions::assert_eq;

    #[tokio::test]
    async fn replaces_the_list_in_state() {
        let ctx = ctx();
        let out = WriteTodos
            .call_json(
                &ctx.tool("call_1"),
                r#"{"todos": [{"content": "read", "status": "completed"}, {"content": "it's", "status": "pending"}]}"#,
            )
            .await;
        assert_eq!(
            out,
            Ok(ToolOutput::Text(
                "Updated todo list to [{'content': 'read', 'status': 'completed'}, {'content': \"it's\", 'status': 'pending'}]".into()
            ))
        );
        let state = ctx.state.lock().unwrap();
        assert_eq!(state[TODOS_KEY][1]["status"], "pending");
    }
}
