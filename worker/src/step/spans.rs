//! The spans of a step and of its model and tool calls, named and
//! attributed after the OpenTelemetry GenAI semantic conventions so trace
//! backends show them as LLM operations.

use deepfleet_model::ModelResponse;
use deepfleet_proto::{RunRecord, ToolCall};
use deepfleet_store::Checkpoint;
use tracing::field::Empty;
use tracing::{Span, info_span};

use crate::error::StepError;
use crate::tools::ToolResult;

/// The span of one executed step, under the run's span. A run's first
/// step opens the run's own span (`invoke_agent`) under whatever the run
/// was created under (a `task` call, or nothing) and records it in the run,
/// so the run's later steps, on any worker, join it.
pub(super) fn step(
    run: &mut RunRecord,
    checkpoint: &Checkpoint,
    traceparent: Option<&str>,
) -> Span {
    let mut parent = traceparent
        .or(run.traceparent.as_deref())
        .map(str::to_owned);
    if run.steps == 0 && checkpoint.pending.is_none() {
        let run_span = info_span!(
            parent: None,
            "invoke_agent",
            otel.name = format!("invoke_agent {}", run.subagent.as_deref().unwrap_or(&run.agent)),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = run.subagent.as_deref().unwrap_or(&run.agent),
            gen_ai.conversation.id = run.thread_id.as_str(),
            deepfleet.run.id = run.run_id.as_str(),
        );
        crate::trace::set_parent(&run_span, parent.as_deref());
        if let Some(own) = crate::trace::traceparent_of(&run_span) {
            run.traceparent = Some(own.clone());
            parent = Some(own);
        }
    }
    let span = info_span!(
        parent: None,
        "step",
        run = run.run_id.as_str(),
        thread = run.thread_id.as_str(),
        step = checkpoint.step,
        trace_id = Empty,
    );
    crate::trace::set_parent(&span, parent.as_deref());
    if let Some(id) = crate::trace::trace_id_of(&span) {
        span.record("trace_id", id.as_str());
    }
    span
}

/// The span of one model call (`chat {model}`).
pub fn model_call(model: &str) -> Span {
    info_span!(
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// Records a model call's token use or failure on its span.
pub fn record_model_call(span: &Span, result: &Result<ModelResponse, StepError>) {
    match result {
        Ok(response) => {
            span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
        }
        Err(error) => {
            span.record("error.type", error.code().as_str());
        }
    }
}

/// The span of one tool call (`execute_tool {name}`).
pub fn tool_call(call: &ToolCall) -> Span {
    info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        error.type = Empty,
    )
}

/// Marks a failed tool call on its span. Errors the model reads are
/// `tool_error`; failures that fail the step are `tool_fatal`.
pub fn record_tool_call(span: &Span, result: &ToolResult) {
    let kind = match result {
        Ok(_) => return,
        Err(crate::tools::ToolError::Model(_)) => "tool_error",
        Err(crate::tools::ToolError::Fatal(_)) => "tool_fatal",
    };
    span.record("error.type", kind);
}
