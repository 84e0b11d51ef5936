//! Running a turn's tool calls: concurrently, each through the middleware
//! with a view of the step context, under its own span, with its
//! `ToolCall` event. Calls the turn's guard refuses get their error
//! without running.

use std::time::Instant;

use deepfleet_proto::{ToolCall, ToolStatus};
use futures::future::join_all;
use tracing::Instrument;

use crate::agent::Agent;
use crate::context::StepContext;
use crate::events::Event;
use crate::middleware::ToolNext;
use crate::step::delegation::CallResult;
use crate::step::guard::turn_errors;
use crate::step::run_budget;
use crate::step::spans;
use crate::tools::ToolError;

/// Runs `calls` concurrently; their results in the same order.
pub async fn run_calls(agent: &Agent, cx: &StepContext, calls: &[ToolCall]) -> Vec<CallResult> {
    let runs_left = run_budget::left(&cx.run, &cx.spec);
    let refused = turn_errors(calls, &agent.tools, &cx.spec, runs_left);
    join_all(calls.iter().map(|call| {
        let refused = refused.get(&call.id).cloned();
        run_call(agent, cx, call, refused)
    }))
    .await
}

async fn run_call(
    agent: &Agent,
    cx: &StepContext,
    call: &ToolCall,
    refused: Option<String>,
) -> CallResult {
    let span = spans::tool_call(call);
    let started = Instant::now();
    let result = match refused {
        Some(error) => Err(ToolError::Model(error)),
        None => {
            ToolNext::new(&agent.stack, &agent.tools)
                .run(call, &cx.tool(&call.id))
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
    CallResult {
        result,
        // A delegated call's span is the parent of the child run.
        traceparent: crate::trace::traceparent_of(&span),
    }
}
