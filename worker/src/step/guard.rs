//! Checks across the tool calls of one model turn, before any runs.

use std::collections::{HashMap, HashSet};

use deepfleet_proto::{AgentSpec, ToolCall};

use crate::step::run_budget;
use crate::tools::Tool;
use crate::tools::ToolRegistry;
use crate::tools::async_tasks::StartAsyncTask;
use crate::tools::task::Task;
use crate::tools::write_todos::WriteTodos;

/// Error texts for calls of a turn that must not run, by call id:
/// - a second mutation of one path (the first one runs);
/// - every `write_todos` call when there are several;
/// - `task` calls beyond the fan-out limit (`limits.max_fanout`);
/// - `task` and `start_async_task` calls beyond the `runs_left` the run
///   budget allows.
pub fn turn_errors(
    calls: &[ToolCall],
    tools: &ToolRegistry,
    spec: &AgentSpec,
    runs_left: u32,
) -> HashMap<String, String> {
    let max_fanout = spec.limits.fanout();
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
    let delegations: Vec<&ToolCall> = calls
        .iter()
        .filter(|c| [Task::NAME, StartAsyncTask::NAME].contains(&c.name.as_str()))
        .filter(|c| !errors.contains_key(&c.id))
        .collect();
    for call in delegations.into_iter().skip(runs_left as usize) {
        errors.insert(call.id.clone(), run_budget::refusal(spec));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    fn refused(calls: &[ToolCall], fanout: u32, runs_left: u32) -> Vec<&str> {
        let mut spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        spec.limits.max_fanout = fanout;
        let errors = turn_errors(calls, &ToolRegistry::default(), &spec, runs_left);
        let mut ids: Vec<&str> = calls
            .iter()
            .map(|c| c.id.as_str())
            .filter(|id| errors.contains_key(*id))
            .collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn delegations_past_the_fanout_or_the_run_budget_are_refused() {
        let calls = [
            call("t1", "task"),
            call("ls", "ls"),
            call("t2", "task"),
            call("a1", "start_async_task"),
            call("t3", "task"),
        ];
        assert_eq!(refused(&calls, 16, 99), Vec::<&str>::new());
        assert_eq!(refused(&calls, 2, 99), ["t3"]);
        // Two runs left: the first two delegations in the model's order.
        assert_eq!(refused(&calls, 16, 2), ["a1", "t3"]);
        assert_eq!(refused(&calls, 16, 0), ["a1", "t1", "t2", "t3"]);
        let spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        let errors = turn_errors(&calls, &ToolRegistry::default(), &spec, 0);
        assert!(
            errors["t1"].contains("limits.max_total_runs (100 runs"),
            "{errors:?}"
        );
    }
}
