//! Executing one step: resume a parked turn, call the model through the
//! middleware, run the tools it asked for, and describe the result as a
//! [`StepCommit`]. Nothing here writes to the store or the queue.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::Utc;
use deepfleet_fleet::tokens::logged;
use deepfleet_model::{CallPurpose, ModelRequest};
use deepfleet_proto::{
    AgentSpec, ChildResult, ChildRun, ContentBlock, ErrorCode, FileData, LoggedMessage, Message,
    PendingCall, PendingTools, RunError, RunRecord, RunStatus, ToolCall, ToolMessage, ToolStatus,
};
use deepfleet_store::{Checkpoint, StepCommit, Store};
use futures::future::join_all;
use tracing::Instrument;

use crate::agent::Agent;
use crate::backend::{Backend, BackendError, StateBackend, routes};
use crate::compress::history::{StepCompaction, ToolStep};
use crate::compress::offload::offload_tool_result;
use crate::error::StepError;
use crate::events::{CompactionKind, Event, EventScope, EventSink};
use crate::middleware::{ModelNext, StepCx, ToolNext};
use crate::step::deltas::{self, DeltaForwarder};
use crate::step::guard::turn_errors;
use crate::step::hitl;
use crate::step::spans;
use crate::tools::{ToolCtx, ToolError, ToolOutput};

/// A step's result: what to commit, and the files after it (the seed of
/// any subagent it starts).
pub struct Executed {
    /// What to commit.
    pub commit: StepCommit,
    /// The thread's files after the step.
    pub files: BTreeMap<String, FileData>,
    /// The custom state subagents started by the step inherit.
    pub child_state: serde_json::Map<String, serde_json::Value>,
    /// Background subagent runs the step started (`start_async_task`):
    /// created after the commit, and never waited on.
    pub spawned: Vec<ChildRun>,
}

/// Runs one step of `run` on top of `checkpoint`. `children` holds the
/// results of the subagents the run waited on, if it did. `store` serves
/// the spec's store routes (long-term memory); the thread's own files are
/// committed with the step.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site, the driver, which has each piece at hand"
)]
pub async fn execute(
    agent: &Agent,
    spec: Arc<AgentSpec>,
    mut run: RunRecord,
    checkpoint: Checkpoint,
    children: Vec<ChildResult>,
    events: Arc<dyn EventSink>,
    context: Option<serde_json::Value>,
    store: &Arc<dyn Store>,
) -> Result<Executed, StepError> {
    let state_before = checkpoint.state.clone();
    let state = Arc::new(Mutex::new(checkpoint.state));
    let files = StateBackend::new(checkpoint.files);
    let configured = routes::build(&spec, context.as_ref(), store, &files)?;
    let backend: Arc<dyn Backend> = configured.backend;
    let mut added = Vec::new();
    // A turn parked for a reviewer runs its calls with the decisions below,
    // once the step context exists.
    let mut decided = None;
    if let Some(pending) = checkpoint.pending {
        if pending.interrupt.is_some() {
            decided = Some(pending);
        } else {
            added = resume(
                pending,
                children,
                backend.as_ref(),
                &mut run,
                events.as_ref(),
            )
            .await?;
        }
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
        context,
        store: configured.store,
        compaction: Arc::new(StepCompaction::new(checkpoint.context, checkpoint.tokens)),
        deltas: None,
        fleet_store: Some(Arc::clone(store)),
    };
    let mut outcome = Outcome::default();
    let mut spawned = Vec::new();
    let mut call_model = true;
    if let Some(pending) = decided {
        let mut done = hitl::run_decided(agent, &cx, pending, &backend, &state).await?;
        spawned.append(&mut done.spawned);
        // Decided calls that delegate park the run on its subagents first.
        call_model = done.pending.is_none();
        if call_model {
            cx.added.extend(done.messages);
        } else {
            outcome = done;
        }
    }

    if !call_model {
        debug_assert!(outcome.pending.is_some());
    } else if cx.run.steps >= spec.limits.max_steps {
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
            // From the compression cursor on: older messages reach the
            // model as the summary the summarization layer puts first.
            messages: cx
                .history
                .iter()
                .skip(cx.compaction.view_start())
                .chain(cx.added.iter())
                .map(|m| m.message.clone())
                .collect(),
            tools: agent.tools.specs().to_vec(),
            max_output_tokens: None,
            cache_key: Some(cx.run.thread_id.clone()),
            cache_breakpoints: Vec::new(),
            purpose: CallPurpose::Agent,
        };
        // A followed run streams this call's tokens (and a summary's) to
        // its delta stream; all are appended before the step commits.
        let forwarder = if deltas::followed(store.as_ref(), &cx.run.run_id).await {
            let index = u64::try_from(cx.history.len() + cx.added.len()).unwrap_or(u64::MAX);
            let forwarder = DeltaForwarder::start(
                Arc::clone(store),
                cx.run.run_id.clone(),
                checkpoint.step,
                index,
            );
            cx.deltas = Some(Arc::clone(&forwarder) as Arc<dyn deepfleet_model::DeltaSink>);
            Some(forwarder)
        } else {
            None
        };
        let started = Instant::now();
        let span = spans::model_call(&agent.model_name);
        let response = ModelNext::new(&agent.stack, agent.model.as_ref())
            .run(request, &cx)
            .instrument(span.clone())
            .await;
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        spans::record_model_call(&span, &response);
        if let Err(StepError::Model(e)) = &response {
            cx.emit(Event::ProviderError {
                model: agent.model_name.clone(),
                kind: e.kind,
            });
        }
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
        } else if let Some(interrupt) =
            hitl::gate(&spec.interrupt_on_for(cx.run.subagent.as_deref()), &calls)
        {
            outcome = hitl::parked(&calls, interrupt);
        } else {
            outcome = run_tools(agent, &cx, &calls, &backend, &state).await?;
        }
    }

    let StepCx {
        mut run,
        mut added,
        compaction,
        ..
    } = cx;
    // What compression changed: the cursor to commit, and its own model
    // calls' tokens, which the run pays for.
    let (context_cursor, compression_usage) = compaction.take();
    run.usage.add(&compression_usage);
    added.extend(outcome.messages);
    spawned.append(&mut outcome.spawned);
    let interrupted = outcome
        .pending
        .as_ref()
        .is_some_and(|p| p.interrupt.is_some());
    let fan_in_expected = outcome
        .pending
        .as_ref()
        .filter(|p| p.interrupt.is_none())
        .map(|p| u32::try_from(p.children.len()).unwrap_or(u32::MAX));
    if interrupted {
        run.status = RunStatus::Interrupted;
    } else if fan_in_expected.is_some() {
        run.status = RunStatus::Waiting;
    } else if !run.status.is_terminal() {
        run.status = RunStatus::Running;
    }
    if run.status.is_terminal() {
        // A finished run needs its runtime context no more: drop it.
        run.context = None;
    }
    run.updated_at = Utc::now();
    // Recorded with the step, so a redelivery can start them again.
    crate::tools::async_tasks::record_started(&state, &spawned, checkpoint.step, run.updated_at);
    let state_after = state.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let child_state = crate::step::follow_up::inherited_state(&spec, &state_after);
    let commit = StepCommit {
        thread_id: run.thread_id.clone(),
        step: checkpoint.step,
        messages: added,
        files: files.changes(),
        state: (state_after != state_before).then_some(state_after),
        pending: outcome.pending,
        run,
        fan_in_expected,
        context: context_cursor,
    };
    Ok(Executed {
        commit,
        files: files.snapshot(),
        child_state,
        spawned,
    })
}

/// The tool calls' part of a step.
#[derive(Default)]
pub(crate) struct Outcome {
    /// Tool results to append (when no call was delegated).
    pub(crate) messages: Vec<LoggedMessage>,
    /// The parked turn (when some call was delegated or gated).
    pub(crate) pending: Option<PendingTools>,
    /// Background subagent runs started by `start_async_task` calls.
    pub(crate) spawned: Vec<ChildRun>,
}

/// Runs a turn's tool calls concurrently through the middleware.
async fn run_tools(
    agent: &Agent,
    cx: &StepCx,
    calls: &[ToolCall],
    backend: &Arc<dyn Backend>,
    state: &Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
) -> Result<Outcome, StepError> {
    let (pending_calls, children) = call_tools(agent, cx, calls, backend, state).await?;
    Ok(outcome_of(pending_calls, children))
}

/// Runs `calls` concurrently through the middleware: each call with its
/// result, in order (`None` for delegated calls), and the subagent runs
/// the delegated calls start.
pub(crate) async fn call_tools(
    agent: &Agent,
    cx: &StepCx,
    calls: &[ToolCall],
    backend: &Arc<dyn Backend>,
    state: &Arc<Mutex<serde_json::Map<String, serde_json::Value>>>,
) -> Result<(Vec<PendingCall>, Vec<ChildRun>), StepError> {
    let refused = turn_errors(calls, &agent.tools, cx.spec.limits.max_fanout);
    let step = Arc::new(ToolStep {
        scope: cx.scope.clone(),
        events: Arc::clone(&cx.events),
        compaction: Arc::clone(&cx.compaction),
        history: Arc::clone(&cx.history),
        added: cx.added.clone(),
    });
    let results = join_all(calls.iter().map(|call| {
        let ctx = ToolCtx {
            call_id: call.id.clone(),
            backend: Arc::clone(backend),
            context: cx.context.clone(),
            state: Arc::clone(state),
            step: Some(Arc::clone(&step)),
            store: cx.fleet_store.clone(),
        };
        let refused = refused.get(&call.id).cloned();
        let span = spans::tool_call(call);
        async move {
            let started = Instant::now();
            let result = match refused {
                Some(error) => Err(ToolError::Model(error)),
                None => {
                    ToolNext::new(&agent.stack, &agent.tools)
                        .run(call, &ctx)
                        .instrument(span.clone())
                        .await
                }
            };
            spans::record_tool_call(&span, &result);
            cx.emit(Event::ToolCall {
                tool: call.name.clone(),
                status: match result {
                    Ok(_) => ToolStatus::Success,
                    Err(_) => ToolStatus::Error,
                },
                latency: started.elapsed(),
            });
            // A delegated call's span is the parent of the child run.
            (result, crate::trace::traceparent_of(&span))
        }
    }))
    .await;

    let mut pending_calls = Vec::with_capacity(calls.len());
    let mut children = Vec::new();
    for (call, (result, traceparent)) in calls.iter().zip(results) {
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
                    traceparent,
                    detached: false,
                });
                None
            }
            Ok(ToolOutput::Spawn {
                subagent,
                description,
            }) => {
                let child = crate::tools::async_tasks::spawned_child(
                    &cx.run.run_id,
                    &call.id,
                    subagent,
                    description,
                    traceparent,
                );
                let text = child.run_id.clone();
                children.push(child);
                Some(tool_message(
                    call,
                    vec![ContentBlock::text(text)],
                    ToolStatus::Success,
                ))
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
    Ok((pending_calls, children))
}

/// A turn's results as a step outcome: appended messages, or the turn
/// parked on its subagents.
pub(crate) fn outcome_of(pending_calls: Vec<PendingCall>, children: Vec<ChildRun>) -> Outcome {
    let (spawned, children): (Vec<_>, Vec<_>) = children.into_iter().partition(|c| c.detached);
    if children.is_empty() {
        let messages = pending_calls
            .into_iter()
            .filter_map(|p| p.result)
            .map(|m| logged(Message::Tool(m)))
            .collect();
        return Outcome {
            messages,
            spawned,
            ..Outcome::default()
        };
    }
    Outcome {
        messages: Vec::new(),
        pending: Some(PendingTools {
            calls: pending_calls,
            children,
            interrupt: None,
        }),
        spawned,
    }
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
    events: &dyn EventSink,
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
                // The subagent's answer arrives here, not through the
                // tool layers: offload it as the filesystem layer would.
                let output = ToolOutput::Text(child.output.clone());
                let content =
                    match offload_tool_result(backend, &call.name, &call.id, &output).await {
                        Some(done) => {
                            events.emit(
                                &EventScope::of(run),
                                &Event::Compaction {
                                    kind: CompactionKind::Offload,
                                    tokens_before: done.tokens_before,
                                    tokens_after: done.tokens_after,
                                },
                            );
                            done.content()
                        }
                        None => vec![ContentBlock::text(child.output)],
                    };
                tool_message(&call, content, status)
            }
        };
        messages.push(logged(Message::Tool(message)));
    }
    Ok(messages)
}
