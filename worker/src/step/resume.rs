//! Completing a turn parked on its subagents, once their results are in:
//! their file changes are merged in call order (a later call wins a
//! conflict), their usage is added to the run's, the run budget they did
//! not use returns to the run, and every call's result is appended in the
//! model's order.

use std::collections::HashMap;

use deepfleet_proto::{
    ChildResult, ContentBlock, LoggedMessage, Message, PendingCall, PendingTools, RunStatus,
    ToolCall, ToolMessage, ToolStatus,
};

use crate::backend::BackendError;
use crate::compress::offload::offload_tool_result;
use crate::context::StepContext;
use crate::error::StepError;
use crate::events::{CompactionKind, Event};
use crate::step::delegation::tool_message;
use crate::step::run_budget;
use crate::tools::ToolOutput;
use deepfleet_fleet::tokens::logged;

/// What one call of a parked turn resumes with.
#[derive(Debug, PartialEq)]
pub enum Resumed {
    /// An ordinary call: its result, kept when the turn parked.
    Ran(ToolMessage),
    /// A delegated call: its subagent's result.
    Child(ToolCall, ChildResult),
}

/// Pairs each call of `pending` with its result: the kept one, or its
/// subagent's from `children`. A delegated call without one is
/// inconsistent (the driver waits until all are in).
pub fn pair(pending: PendingTools, children: Vec<ChildResult>) -> Result<Vec<Resumed>, StepError> {
    let mut by_call: HashMap<String, ChildResult> = children
        .into_iter()
        .map(|c| (c.tool_call_id.clone(), c))
        .collect();
    pending
        .calls
        .into_iter()
        .map(|PendingCall { call, result }| match result {
            Some(message) => Ok(Resumed::Ran(message)),
            None => {
                let child = by_call.remove(&call.id).ok_or_else(|| {
                    StepError::Inconsistent(format!("no subagent result for call {}", call.id))
                })?;
                Ok(Resumed::Child(call, child))
            }
        })
        .collect()
}

/// Completes `pending` with `children`: the turn's result messages.
pub async fn complete(
    cx: &mut StepContext,
    pending: PendingTools,
    children: Vec<ChildResult>,
) -> Result<Vec<LoggedMessage>, StepError> {
    let mut messages = Vec::with_capacity(pending.calls.len());
    for resumed in pair(pending, children)? {
        let message = match resumed {
            Resumed::Ran(message) => message,
            Resumed::Child(call, child) => {
                merge_files(cx, &child).await?;
                cx.run.count_child(&child);
                run_budget::refund(&mut cx.run, &cx.spec, child.runs_left);
                child_message(cx, &call, child).await
            }
        };
        messages.push(logged(Message::Tool(message)));
    }
    Ok(messages)
}

/// Applies a subagent's file changes to the thread's files.
async fn merge_files(cx: &StepContext, child: &ChildResult) -> Result<(), StepError> {
    for (path, file) in &child.files {
        let applied = match file {
            Some(file) => cx.backend.write(path, &file.content).await,
            // Already gone (a sibling deleted it too): fine.
            None => match cx.backend.delete(path).await {
                Err(BackendError::NotFound) => Ok(()),
                other => other,
            },
        };
        applied
            .map_err(|e| StepError::Inconsistent(format!("merging subagent file {path}: {e}")))?;
    }
    Ok(())
}

/// The result message of a delegated call. The subagent's answer arrives
/// here, not through the tool layers: it is offloaded as the filesystem
/// layer would.
async fn child_message(cx: &StepContext, call: &ToolCall, child: ChildResult) -> ToolMessage {
    let status = if child.status == RunStatus::Success {
        ToolStatus::Success
    } else {
        ToolStatus::Error
    };
    let output = ToolOutput::Text(child.output.clone());
    let content =
        match offload_tool_result(cx.backend.as_ref(), &call.name, &call.id, &output).await {
            Some(done) => {
                cx.emit(Event::Compaction {
                    kind: CompactionKind::Offload,
                    tokens_before: done.tokens_before,
                    tokens_after: done.tokens_after,
                });
                done.content()
            }
            None => vec![ContentBlock::text(child.output)],
        };
    tool_message(call, content, status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "task".into(),
            arguments: "{}".into(),
        }
    }

    fn child(id: &str) -> ChildResult {
        ChildResult {
            tool_call_id: id.into(),
            status: RunStatus::Success,
            output: format!("answer of {id}"),
            files: Default::default(),
            usage: Default::default(),
            by_caller: Default::default(),
            runs_left: 0,
            cost_nano_usd: 0,
        }
    }

    #[test]
    fn calls_pair_with_their_kept_results_or_their_children() {
        let kept = tool_message(
            &call("c1"),
            vec![ContentBlock::text("ls output")],
            ToolStatus::Success,
        );
        let pending = PendingTools {
            calls: vec![
                PendingCall {
                    call: call("c1"),
                    result: Some(kept.clone()),
                },
                PendingCall {
                    call: call("c2"),
                    result: None,
                },
            ],
            children: Vec::new(),
            interrupt: None,
        };
        let paired = pair(pending.clone(), vec![child("c9"), child("c2")]).unwrap();
        assert_eq!(
            paired,
            [Resumed::Ran(kept), Resumed::Child(call("c2"), child("c2"))]
        );
        assert!(matches!(
            pair(pending, vec![child("c9")]),
            Err(StepError::Inconsistent(m)) if m == "no subagent result for call c2"
        ));
    }

    /// A subagent's calls count as the run's subagents' calls, its
    /// summaries as summaries, and its tokens join the run's total.
    #[tokio::test]
    async fn a_childs_usage_joins_the_run_split_by_caller() {
        use deepfleet_proto::{AgentSpec, CallUsage, RunRecord, Usage, UsageByCaller};
        let spec = AgentSpec::from_yaml("name: a\nmodel: replay:x\n").unwrap();
        let mut cx = StepContext::test(spec, RunRecord::new("r", "t", "a", chrono::Utc::now()));
        let own = Usage {
            input_tokens: 10,
            output_tokens: 1,
            cached_input_tokens: 0,
        };
        cx.run.count_model_call(&own, 0);
        let calls = |model_calls, input_tokens| CallUsage {
            model_calls,
            input_tokens,
            output_tokens: model_calls,
            cached_input_tokens: 0,
        };
        let reported = UsageByCaller {
            main: calls(2, 20),
            subagents: calls(1, 7),
            summarization: calls(1, 5),
        };
        let finished = ChildResult {
            usage: reported.total().tokens(),
            by_caller: reported,
            ..child("c1")
        };
        let pending = PendingTools {
            calls: vec![PendingCall {
                call: call("c1"),
                result: None,
            }],
            children: Vec::new(),
            interrupt: None,
        };
        complete(&mut cx, pending, vec![finished]).await.unwrap();
        assert_eq!(
            cx.run.by_caller,
            UsageByCaller {
                main: calls(1, 10),
                subagents: calls(3, 27),
                summarization: calls(1, 5),
            }
        );
        assert_eq!(cx.run.usage, cx.run.by_caller.total().tokens());
        assert_eq!(cx.run.steps, 1);
    }
}
