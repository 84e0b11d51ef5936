//! Checks across the tool calls of one model turn, before any runs.

use std::collections::{HashMap, HashSet};

use deepfleet_proto::ToolCall;

use crate::tools::Tool;
use crate::tools::ToolRegistry;
use crate::tools::task::Task;
use crate::tools::write_todos::WriteTodos;

/// Error texts for calls of a turn that must not run, by call id:
/// - a second mutation of one path (the first one runs);
/// - every `write_todos` call when there are several;
/// - `task` calls beyond the fan-out limit.
pub fn turn_errors(
    calls: &[ToolCall],
    tools: &ToolRegistry,
    max_fanout: u32,
) -> HashMap<String, String> {
    let mut errors = HashMap::new();
    let mut mutated = HashSet::new();
    for call in calls {
        if let Some(path) = tools
            .get(&call.name)
            .and_then(|t| t.mutated_path(&call.arguments))
            && !mutated.insert(path)
        {
            errors.insert(
                call.id.clone(),
                "Error: parallel file mutations to the same path are not allowed.".to_owned(),
            );
        }
    }
    let todo_calls: Vec<&ToolCall> = calls
        .iter()
        .filter(|c| c.name == WriteTodos::NAME)
        .collect();
    if todo_calls.len() > 1 {
        for call in todo_calls {
            errors.insert(
                call.id.clone(),
                "Error: The `write_todos` tool should never be called multiple times in parallel. \
                 Call it once per turn with the complete list."
                    .to_owned(),
            );
        }
    }
    let tasks: Vec<&ToolCall> = calls
        .iter()
        .filter(|c| c.name == Task::NAME && !errors.contains_key(&c.id))
        .collect();
    for call in tasks.into_iter().skip(max_fanout as usize) {
        errors.insert(
            call.id.clone(),
            format!(
                "Error: at most {max_fanout} subagent tasks may start in one turn; run this one \
                 after the others finish."
            ),
        );
    }
    errors
}
