//! Running a turn's tool calls: concurrently, each through the middleware
//! with a view of the step context, under its own span, with its
//! `ToolCall` event, within the agent's tool timeout (past it the call is
//! an error the model reads). Calls the turn's guard refuses get their
//! error without running.

use std::time::{Duration, Instant};

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
            let view = cx.tool(&call.id);
            let run = ToolNext::new(&agent.stack, &agent.tools)
                .run(call, &view)
                .instrument(span.clone());
            tokio::time::timeout(agent.tool_timeout, run)
                .await
                .unwrap_or_else(|_| Err(timed_out(call, agent.tool_timeout)))
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

/// The answer to a call dropped at its time limit.
fn timed_out(call: &ToolCall, limit: Duration) -> ToolError {
    ToolError::Model(format!(
        "Error: the call of `{}` took longer than {} s and was stopped \
         (worker.tool_timeout_secs). Try a narrower call, or another way.",
        call.name,
        limit.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use deepfleet_model::Providers;
    use deepfleet_proto::ToolCall;

    use super::*;
    use crate::agent::AgentOptions;
    use crate::context::ToolView;
    use crate::middleware::{Middleware, test_cx};
    use crate::tools::ToolResult;

    /// A layer under which `ls` blocks forever, as a read of a FIFO or a
    /// hung remote tool did.
    struct Hangs;

    #[async_trait]
    impl Middleware for Hangs {
        fn name(&self) -> &'static str {
            "hangs"
        }

        async fn wrap_tool(
            &self,
            call: &ToolCall,
            ctx: &ToolView<'_>,
            next: ToolNext<'_>,
        ) -> ToolResult {
            if call.name == "ls" {
                std::future::pending::<()>().await;
            }
            next.run(call, ctx).await
        }
    }

    /// Issue #14: a tool call that never returns hung its step forever.
    /// Past its time limit it is an error the model reads, and the turn's
    /// other results are kept.
    #[tokio::test]
    async fn a_call_past_its_time_limit_is_an_error_the_model_reads() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s.yaml");
        std::fs::write(&script, "rules: []\n").unwrap();
        let mut cx = test_cx("");
        let mut spec = (*cx.spec).clone();
        spec.model = format!("replay:{}", script.display());
        cx.spec = Arc::new(spec.clone());
        let options = AgentOptions {
            middleware: vec![Arc::new(Hangs)],
            tool_timeout: Duration::from_millis(50),
            ..AgentOptions::default()
        };
        let providers =
            deepfleet_replay::register(Providers::with_env(Default::default(), |_| None));
        let agent = Agent::build_with(&spec, &cx.run, &providers, &options).unwrap();
        let calls = [
            ToolCall {
                id: "call_1".into(),
                name: "ls".into(),
                arguments: r#"{"path": "/"}"#.into(),
            },
            ToolCall {
                id: "call_2".into(),
                name: "no_such_tool".into(),
                arguments: "{}".into(),
            },
        ];
        let results = tokio::time::timeout(Duration::from_secs(10), run_calls(&agent, &cx, &calls))
            .await
            .expect("the calls are bounded");
        let errors: Vec<String> = results
            .into_iter()
            .map(|r| match r.result {
                Err(ToolError::Model(text)) => text,
                other => panic!("expected a model error, got {other:?}"),
            })
            .collect();
        assert_eq!(
            errors,
            [
                "Error: the call of `ls` took longer than 0.05 s and was stopped \
                 (worker.tool_timeout_secs). Try a narrower call, or another way."
                    .to_owned(),
                "Error: no_such_tool is not a valid tool, try one of [`ls`, `read_file`, \
                 `write_file`, `edit_file`, `delete`, `glob`, `grep`, `task`]."
                    .to_owned(),
            ]
        );
    }
}
