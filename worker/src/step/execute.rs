//! Executing one step: resume a parked turn, call the model through the
//! middleware, run the tools it asked for, and describe the result as a
//! [`StepCommit`]. Nothing here writes to the store or the queue.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::Utc;
use deepfleet_model::{CallPurpose, ModelRequest};
use deepfleet_proto::{
    AgentSpec, ChildResult, ChildRun, ContentBlock, ErrorCode, FileData, LoggedMessage, Message,
    PendingCall, PendingTools, RunError, RunRecord, RunStatus, ToolCall, ToolMessage, ToolStatus,
};
use deepfleet_store::{Checkpoint, StepCommit};
use futures::future::join_all;

use crate::agent::Agent;
use crate::backend::{Backend, BackendError, StateBackend};
use crate::error::StepError;
use crate::events::{Event, EventScope, EventSink};
use crate::middleware::{ModelNext, StepCx, ToolNext};
use crate::step::guard::turn_errors;
use crate::tokens::logged;
use crate::tools::{ToolCtx, ToolError, ToolOutput};

/// A step's result: what to commit, and the files after it (the seed of
/// any subagent it starts).
pub struct Executed {
    /// What to commit.
    pub commit: StepCommit,
    /// The thread's files after the step.
    pub files: BTreeMap<String, FileData>,
}

/// Runs one step of `run` on top of `checkpoint`. `children` holds the
/// results of the subagents the run waited on, if it did.
pub async fn execute(
    agent: &Agent,
    spec: Arc<AgentSpec>,
    mut run: RunRecord,
    checkpoint: Checkpoint,
    children: Vec<ChildResult>,
    events: Arc<dyn EventSink>,
) -> Result<Executed, StepError> {
    let state_before = checkpoint.state.clone();
    let state = Arc::new(Mutex::new(checkpoint.state));
    let files = StateBackend::new(checkpoint.files);
    let backend: Arc<dyn Backend> = Arc::new(files.clone());
    let mut added = Vec::new();
    if let Some(pending) = checkpoint.pending {
        added = resume(pending, children, backend.as_ref(), &mut run).await?;
    }
    let scope = EventScope::of(&run);
    let mut cx = StepCx {
        scope,
        events,
        run,
        spec: Arc::clone(&spec),
        history: Arc::new(checkpoint.messages),
        added,
        backend: Arc::clone(&backend),
        state: Arc::clone(&state),
    };
    let mut outcome = Outcome::default();

    if cx.run.steps >= spec.limits.max_steps {
        cx.run.status = RunStatus::Error;
        cx.run.error = Some(RunError {
            code: ErrorCode::MaxSteps,
            message: format!(
                "the run reached its limit of {} model calls (limits.max_steps)",
                spec.limits.max_steps
            ),
        });
    } else {
        for layer in &agent.stack {
            layer.before_model(&mut cx).await?;
        }
        let request = ModelRequest {
            model: agent.model_name.clone(),
            system: agent.system_prompt(&cx),
            messages: cx
                .history
                .iter()
                .chain(cx.added.iter())
                .map(|m| m.message.clone())
                .collect(),
            tools: agent.tools.specs().to_vec(),
            max_output_tokens: None,
            cache_key: Some(cx.run.thread_id.clone()),
            purpose: CallPurpose::Agent,
        };
        let started = Instant::now();
        let response = ModelNext::new(&agent.stack, agent.model.as_ref())
            .run(request, &cx)
            .await;
        cx.emit(Event::ModelCall {
            model: agent.model_name.clone(),
            purpose: CallPurpose::Agent,
            usage: response.as_ref().ok().map(|r| r.usage),
            latency: started.elapsed(),
        });
        let response = response?;
        cx.run.steps += 1;
        cx.run.usage.add(&response.usage);
        let mut turn = response.message;
        turn.usage = Some(response.usage);
        let calls = turn.tool_calls.clone();
        let text = deepfleet_proto::message::joined_text(&turn.content);
        cx.added.push(logged(Message::Assistant(turn)));
        if calls.is_empty() {
            cx.run.status = RunStatus::Success;
            cx.run.output = Some(text);
        } else {
            outcome = run_tools(agent, &cx, &calls, &backend, &state).await?;
        }
    }

    let StepCx {
        mut run, mut added, ..
    } = cx;
    added.extend(outcome.messages);
    let fan_in_expected = outcome
        .pending
        .as_ref()
        .map(|p| u32::try_from(p.children.len()).unwrap_or(u32::MAX));
    if fan_in_expected.is_some() {
        run.status = RunStatus::Waiting;
    } else if !run.status.is_terminal() {
        run.status = RunStatus::Running;
    }
    run.updated_at = Utc::now();
    let state_after = state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let commit = StepCommit {
        thread_id: run.thread_id.clone(),
        step: checkpoint.step,
        messages: added,
        files: files.changes(),
        state: (state_after != state_before).then_some(state_after),
        pending: outcome.pending,
        run,
        fan_in_expected,
    };
    Ok(Executed {
        commit,
        files: files.snapshot(),
    })
}

/// The tool calls' part of a step.
#[derive(Default)]
struct Outcome {
    /// Tool results to append (when no call was delegated).
    messages: Vec<LoggedMessage>,
    /// The parked turn (when some call was delegated).
    pending: Option<PendingTools>,
}

/// Runs a turn's tool calls concurrently through the middleware.
async fn run_tools(
    agent: &Agent,
    cx: &StepCx,
    calls: &[ToolCall],
    backend: &Arc<dyn Backend>,
    state: &Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
) -> Result<Outcome, StepError> {
    let refused = turn_errors(calls, &agent.tools, cx.spec.limits.max_fanout);
    let results = join_all(calls.iter().map(|call| {
        let ctx = ToolCtx {
            call_id: call.id.clone(),
            backend: Arc::clone(backend),
            context: cx.run.context.clone(),
            state: Arc::clone(state),
        };
        let refused = refused.get(&call.id).cloned();
        async move {
            match refused {
                Some(error) => Err(ToolError::Model(error)),
                None => {
                    ToolNext::new(&agent.stack, &agent.tools)
                        .run(call, &ctx)
                        .await
                }
            }
        }
    }))
    .await;

    let mut pending_calls = Vec::with_capacity(calls.len());
    let mut children = Vec::new();
    for (call, result) in calls.iter().zip(results) {
        let message = match result {
            Ok(ToolOutput::Delegate {
                subagent,
                description,
            }) => {
                children.push(ChildRun {
                    run_id: uuid::Uuid::now_v7().to_string(),
                    thread_id: uuid::Uuid::new_v4().to_string(),
                    tool_call_id: call.id.clone(),
                    subagent,
                    description,
                });
                None
            }
            Ok(ToolOutput::Text(text)) => Some(tool_message(
                call,
                vec![ContentBlock::text(text)],
                ToolStatus::Success,
            )),
            Ok(ToolOutput::Content(content)) => {
                Some(tool_message(call, content, ToolStatus::Success))
            }
            Err(ToolError::Model(text)) => Some(tool_message(
                call,
                vec![ContentBlock::text(text)],
                ToolStatus::Error,
            )),
            Err(ToolError::Fatal(message)) => {
                return Err(StepError::Tool {
                    tool: call.name.clone(),
                    message,
                });
            }
        };
        pending_calls.push(PendingCall {
            call: call.clone(),
            result: message,
        });
    }
    if children.is_empty() {
        let messages = pending_calls
            .into_iter()
            .filter_map(|p| p.result)
            .map(|m| logged(Message::Tool(m)))
            .collect();
        return Ok(Outcome {
            messages,
            ..Outcome::default()
        });
    }
    Ok(Outcome {
        messages: Vec::new(),
        pending: Some(PendingTools {
            calls: pending_calls,
            children,
        }),
    })
}

fn tool_message(call: &ToolCall, content: Vec<ContentBlock>, status: ToolStatus) -> ToolMessage {
    ToolMessage {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        status,
    }
}

/// Completes a parked turn with its subagents' results: their file
/// changes are merged in call order (a later call wins a conflict), their
/// usage is added to the run's, and every call's result is appended in the
/// model's order.
async fn resume(
    pending: PendingTools,
    children: Vec<ChildResult>,
    backend: &dyn Backend,
    run: &mut RunRecord,
) -> Result<Vec<LoggedMessage>, StepError> {
    let mut by_call: HashMap<String, ChildResult> = children
        .into_iter()
        .map(|c| (c.tool_call_id.clone(), c))
        .collect();
    let mut messages = Vec::with_capacity(pending.calls.len());
    for PendingCall { call, result } in pending.calls {
        let message = match result {
            Some(message) => message,
            None => {
                let child = by_call.remove(&call.id).ok_or_else(|| {
                    StepError::Inconsistent(format!("no subagent result for call {}", call.id))
                })?;
                for (path, file) in &child.files {
                    let applied = match file {
                        Some(file) => backend.write(path, &file.content).await,
                        // Already gone (a sibling deleted it too): fine.
                        None => match backend.delete(path).await {
                            Err(BackendError::NotFound) => Ok(()),
                            other => other,
                        },
                    };
                    applied.map_err(|e| {
                        StepError::Inconsistent(format!("merging subagent file {path}: {e}"))
                    })?;
                }
                run.usage.add(&child.usage);
                let status = if child.status == RunStatus::Success {
                    ToolStatus::Success
                } else {
                    ToolStatus::Error
                };
                tool_message(&call, vec![ContentBlock::text(child.output)], status)
            }
        };
        messages.push(logged(Message::Tool(message)));
    }
    Ok(messages)
}
