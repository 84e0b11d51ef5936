//! Executing one step: the thin driver of the [`Turn`] machine. It builds
//! the step's one [`StepContext`], performs the I/O each state asks for
//! (completing a parked turn, the model call, the tool calls), applies
//! each transition's result, and assembles the commit. Nothing here
//! writes to the store or the queue.

use std::sync::{Arc, Mutex};

use chrono::Utc;
use deepfleet_proto::{AgentSpec, ChildResult, PendingTools, RunRecord, ToolCall};
use deepfleet_store::{Checkpoint, Store};

use crate::agent::Agent;
use crate::backend::{StateBackend, routes};
use crate::context::StepContext;
use crate::context::compaction::StepCompaction;
use crate::error::StepError;
use crate::events::EventSink;
use crate::step::commit::{self, Executed, Loaded};
use crate::step::delegation::{self, ToolRun};
use crate::step::model_call::call_model;
use crate::step::tool_calls::run_calls;
use crate::step::turn::{self, Budget, Next, Turn};
use crate::step::{hitl, resume, run_budget};

/// What one step starts from.
pub struct StepInput {
    /// The run being stepped.
    pub run: RunRecord,
    /// Its thread's checkpoint.
    pub checkpoint: Checkpoint,
    /// The results of the subagents the run waited on, if it did.
    pub children: Vec<ChildResult>,
    /// The run's runtime context, opened for this step.
    pub context: Option<serde_json::Value>,
    /// Whether someone streamed the run when the step loaded it.
    pub followed: bool,
}

/// Runs one step of `input.run` of `agent` (from `spec`). `store` serves
/// the spec's store routes (long-term memory) and the tools that read the
/// fleet (async tasks); the thread's own files are committed with the
/// step.
pub async fn execute(
    agent: &Agent,
    spec: Arc<AgentSpec>,
    input: Box<StepInput>,
    events: Arc<dyn EventSink>,
    store: &Arc<dyn Store>,
) -> Result<Executed, StepError> {
    // Boxed, as every await of this future that is not the model call's:
    // a step holds this future's largest state while it waits on its model.
    if let Some(host) = &agent.sandbox {
        Box::pin(host.available())
            .await
            .map_err(StepError::SandboxUnavailable)?;
    }
    let Opened {
        mut cx,
        pending,
        loaded,
        mut children,
    } = open(spec, input, agent, events, store)?;
    let budget = Budget {
        steps: cx.run.steps,
        max_steps: cx.spec.limits.max_steps,
    };
    let mut turn = Turn::start(pending, budget);
    let mut spawned = Vec::new();
    let end = loop {
        let next = match turn {
            Turn::ResumeChildren(pending) => {
                let children = std::mem::take(&mut children);
                let completed = Box::pin(resume::complete(&mut cx, pending, children)).await?;
                turn::resumed(completed, budget)
            }
            Turn::RunDecided(pending) => {
                let mut ran = run_decided(agent, &cx, pending).await?;
                run_budget::spend(&mut cx.run, &cx.spec, &mut ran.children);
                turn::decided(ran, budget)
            }
            Turn::CallModel => {
                let reply = call_model(agent, &mut cx, store, loaded.step).await?;
                turn::replied(reply, &Box::pin(agent.gates(&cx)).await)
            }
            Turn::RunTools(calls) => {
                let mut ran = run_tools(agent, &cx, &calls).await?;
                run_budget::spend(&mut cx.run, &cx.spec, &mut ran.children);
                turn::ran_tools(ran)
            }
            Turn::Done(end) => break end,
        };
        let Next {
            append,
            spawned: started,
            turn: then,
        } = next;
        cx.added.extend(append);
        spawned.extend(started);
        turn = then;
    };
    Ok(commit::assemble(
        cx,
        end,
        spawned,
        loaded,
        commit::Pricing {
            model: &agent.model_name,
            price: agent.price,
        },
        Utc::now(),
    ))
}

/// The step opened: its context over what was loaded, its parked turn,
/// what the commit compares against, and its subagents' results.
struct Opened {
    cx: StepContext,
    pending: Option<PendingTools>,
    loaded: Loaded,
    children: Vec<ChildResult>,
}

/// Opens the step of `input` (taken apart here, so no copy of it stays in
/// the step's future).
fn open(
    spec: Arc<AgentSpec>,
    input: Box<StepInput>,
    agent: &Agent,
    events: Arc<dyn EventSink>,
    store: &Arc<dyn Store>,
) -> Result<Opened, StepError> {
    let StepInput {
        run,
        mut checkpoint,
        children,
        context,
        followed,
    } = *input;
    let files = StateBackend::with_limits(std::mem::take(&mut checkpoint.files), agent.file_limits);
    let configured = routes::build(&spec, &run.tenant, context.as_ref(), store, &files)?;
    let loaded = Loaded {
        step: checkpoint.step,
        state: checkpoint.state.clone(),
        files,
    };
    let mut cx = StepContext::new(run, spec, configured.backend, events);
    cx.thread_files = loaded.files.clone();
    cx.history = checkpoint.messages;
    cx.state = Mutex::new(checkpoint.state);
    cx.context = context;
    cx.followed = followed;
    cx.store = configured.store;
    cx.compaction = StepCompaction::new(checkpoint.context, checkpoint.tokens);
    cx.fleet_store = Some(Arc::clone(store));
    Ok(Opened {
        cx,
        pending: checkpoint.pending,
        loaded,
        children,
    })
}

/// Runs `calls` through the middleware and settles what they come to.
async fn run_tools(
    agent: &Agent,
    cx: &StepContext,
    calls: &[ToolCall],
) -> Result<ToolRun, StepError> {
    let results = run_calls(agent, cx, calls).await;
    delegation::settle(&cx.run.run_id, calls, results)
}

/// Runs a reviewed turn under its decisions: the calls to run
/// concurrently through the middleware, the answered ones not at all.
async fn run_decided(
    agent: &Agent,
    cx: &StepContext,
    pending: PendingTools,
) -> Result<ToolRun, StepError> {
    let plans = hitl::plan(&pending, &Box::pin(agent.gates(cx)).await)?;
    let ran = run_tools(agent, cx, &hitl::runnable(&plans)).await?;
    hitl::decided(pending.calls, plans, ran)
}
