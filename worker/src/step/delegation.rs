//! Delegation: what a turn's tool results come to. Each call gets its
//! result message, except a `task` call, which becomes a subagent run
//! (its result arrives when the child ends) and `start_async_task`, whose
//! result is the background task's id. Pure: the child runs are described
//! here and created by the driver after the commit.

use deepfleet_proto::{ChildRun, ContentBlock, PendingCall, ToolCall, ToolMessage, ToolStatus};

use crate::background::spawned_child;
use crate::error::StepError;
use crate::tools::{ToolError, ToolOutput, ToolResult};

/// A tool call's result with the trace context of its span (the parent of
/// a child run it starts).
pub struct CallResult {
    /// What the call returned.
    pub result: ToolResult,
    /// The `traceparent` of the call's span.
    pub traceparent: Option<String>,
}

/// A turn's calls after they ran.
#[derive(Debug, Default, PartialEq)]
pub struct ToolRun {
    /// Each call with its result, in the model's order; `None` for a
    /// delegated call.
    pub calls: Vec<PendingCall>,
    /// The child runs the calls start: subagents the turn waits on, and
    /// detached background tasks.
    pub children: Vec<ChildRun>,
}

/// The turn of `calls` (of run `run_id`) given their `results`, in the
/// same order. A fatal tool error fails the step.
pub fn settle(
    run_id: &str,
    calls: &[ToolCall],
    results: Vec<CallResult>,
) -> Result<ToolRun, StepError> {
    let mut ran = ToolRun::default();
    for (call, done) in calls.iter().zip(results) {
        let (message, child) = settle_call(run_id, call, done)?;
        ran.children.extend(child);
        ran.calls.push(PendingCall {
            call: call.clone(),
            result: message,
        });
    }
    Ok(ran)
}

/// One call's result message (`None` when delegated) and the child run it
/// starts, if any.
fn settle_call(
    run_id: &str,
    call: &ToolCall,
    done: CallResult,
) -> Result<(Option<ToolMessage>, Option<ChildRun>), StepError> {
    let text = |text: String, status| tool_message(call, vec![ContentBlock::text(text)], status);
    Ok(match done.result {
        Ok(ToolOutput::Delegate {
            subagent,
            description,
        }) => {
            let child = ChildRun {
                run_id: uuid::Uuid::now_v7().to_string(),
                thread_id: uuid::Uuid::new_v4().to_string(),
                tool_call_id: call.id.clone(),
                subagent,
                description,
                traceparent: done.traceparent,
                detached: false,
                // Set when the turn's budget is spent (`run_budget::spend`).
                run_budget: 0,
            };
            (None, Some(child))
        }
        Ok(ToolOutput::Spawn {
            subagent,
            description,
        }) => {
            let child = spawned_child(run_id, &call.id, subagent, description, done.traceparent);
            let message = text(child.run_id.clone(), ToolStatus::Success);
            (Some(message), Some(child))
        }
        Ok(ToolOutput::Text(output)) => (Some(text(output, ToolStatus::Success)), None),
        Ok(ToolOutput::Content(content)) => {
            (Some(tool_message(call, content, ToolStatus::Success)), None)
        }
        Err(ToolError::Model(error)) => (Some(text(error, ToolStatus::Error)), None),
        Err(ToolError::Fatal(message)) => {
            return Err(StepError::Tool {
                tool: call.name.clone(),
                message,
            });
        }
    })
}

/// The result message of `call`.
pub fn tool_message(
    call: &ToolCall,
    content: Vec<ContentBlock>,
    status: ToolStatus,
) -> ToolMessage {
    ToolMessage {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        status,
    }
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

    fn done(result: ToolResult) -> CallResult {
        CallResult {
            result,
            traceparent: Some("00-trace-span-01".into()),
        }
    }

    #[test]
    fn delegated_calls_become_children_and_others_results() {
        let calls = [
            call("c1", "ls"),
            call("c2", "task"),
            call("c3", "start_async_task"),
            call("c4", "read_file"),
        ];
        let sub = |kind: &str| (kind.to_owned(), "do it".to_owned());
        let (s1, d1) = sub("general-purpose");
        let (s2, d2) = sub("worker");
        let ran = settle(
            "run-1",
            &calls,
            vec![
                done(Ok(ToolOutput::Text("a".into()))),
                done(Ok(ToolOutput::Delegate {
                    subagent: s1,
                    description: d1,
                })),
                done(Ok(ToolOutput::Spawn {
                    subagent: s2,
                    description: d2,
                })),
                done(Err(ToolError::Model("no such file".into()))),
            ],
        )
        .unwrap();
        let results: Vec<Option<(String, ToolStatus)>> = ran
            .calls
            .iter()
            .map(|p| {
                p.result
                    .as_ref()
                    .map(|m| (deepfleet_proto::message::joined_text(&m.content), m.status))
            })
            .collect();
        let background = spawned_child(
            "run-1",
            "c3",
            "worker".into(),
            "do it".into(),
            Some("00-trace-span-01".into()),
        );
        assert_eq!(
            results,
            [
                Some(("a".to_owned(), ToolStatus::Success)),
                None,
                Some((background.run_id.clone(), ToolStatus::Success)),
                Some(("no such file".to_owned(), ToolStatus::Error)),
            ]
        );
        assert_eq!(ran.children.len(), 2);
        assert_eq!(ran.children[0].tool_call_id, "c2");
        assert!(!ran.children[0].detached);
        assert_eq!(
            ran.children[0].traceparent.as_deref(),
            Some("00-trace-span-01")
        );
        assert_eq!(ran.children[1], background);
    }

    #[test]
    fn a_fatal_tool_error_fails_the_step() {
        let result = settle(
            "run-1",
            &[call("c1", "ls")],
            vec![done(Err(ToolError::Fatal("disk on fire".into())))],
        );
        assert!(matches!(
            result,
            Err(StepError::Tool { tool, message }) if tool == "ls" && message == "disk on fire"
        ));
    }
}
