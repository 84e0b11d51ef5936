//! The spans of a step's model and tool calls, named and attributed after
//! the OpenTelemetry GenAI semantic conventions so trace backends show
//! them as LLM operations.

use deepfleet_model::ModelResponse;
use deepfleet_proto::ToolCall;
use tracing::field::Empty;
use tracing::{Span, info_span};

use crate::error::StepError;
use crate::tools::ToolResult;

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
