//! Helpers shared by the tool tests: a step context over a
//! [`StateBackend`] and calls through the type-erased [`DynTool`] path the
//! step uses, each with the view of call `call_1`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use deepfleet_proto::{AgentSpec, FileData, RunRecord};
use serde_json::Value;

use super::{DynTool, ToolError, ToolOutput, ToolResult};
use crate::backend::StateBackend;
use crate::context::StepContext;

/// The call id the helpers' views carry.
pub const CALL_ID: &str = "call_1";

/// A context over an empty state backend.
pub fn ctx() -> StepContext {
    ctx_with(&[]).0
}

/// A context whose state backend holds `files`, and that backend.
pub fn ctx_with(files: &[(&str, &str)]) -> (StepContext, StateBackend) {
    let now = Utc::now();
    let files: BTreeMap<String, FileData> = files
        .iter()
        .map(|(path, content)| ((*path).to_owned(), FileData::text(*content, now)))
        .collect();
    let backend = StateBackend::new(files);
    let spec = AgentSpec::from_yaml("name: agent\nmodel: replay:x\n")
        .unwrap_or_else(|e| panic!("test spec: {e}"));
    let mut ctx = StepContext::test(spec, RunRecord::new("run-1", "thread-1", "agent", now));
    ctx.backend = Arc::new(backend.clone());
    ctx.thread_files = backend.clone();
    (ctx, backend)
}

/// Calls `tool` with `args` serialised as the model would send them.
pub async fn call(tool: &dyn DynTool, ctx: &StepContext, args: Value) -> ToolResult {
    tool.call_json(&ctx.tool(CALL_ID), &args.to_string()).await
}

/// The text of a successful call; panics on anything else.
pub async fn ok_text(tool: &dyn DynTool, ctx: &StepContext, args: Value) -> String {
    match call(tool, ctx, args).await {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected a text result, got {other:?}"),
    }
}

/// The text of a model error; panics on anything else.
pub async fn err_text(tool: &dyn DynTool, ctx: &StepContext, args: Value) -> String {
    match call(tool, ctx, args).await {
        Err(ToolError::Model(text)) => text,
        other => panic!("expected a model error, got {other:?}"),
    }
}
