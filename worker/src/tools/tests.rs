//! Helpers shared by the tool tests: a [`ToolCtx`] over a [`StateBackend`]
//! and calls through the type-erased [`DynTool`] path the step uses.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use deepfleet_proto::FileData;
use serde_json::Value;

use super::{DynTool, ToolCtx, ToolError, ToolOutput, ToolResult};
use crate::backend::StateBackend;

/// A context over an empty state backend.
pub fn ctx() -> ToolCtx {
    ctx_with(&[]).0
}

/// A context whose state backend holds `files`, and that backend.
pub fn ctx_with(files: &[(&str, &str)]) -> (ToolCtx, StateBackend) {
    let now = Utc::now();
    let files: BTreeMap<String, FileData> = files
        .iter()
        .map(|(path, content)| ((*path).to_owned(), FileData::text(*content, now)))
        .collect();
    let backend = StateBackend::new(files);
    let ctx = ToolCtx {
        call_id: "call_1".to_owned(),
        backend: Arc::new(backend.clone()),
        context: None,
        state: Default::default(),
        step: None,
        store: None,
    };
    (ctx, backend)
}

/// Calls `tool` with `args` serialised as the model would send them.
pub async fn call(tool: &dyn DynTool, ctx: &ToolCtx, args: Value) -> ToolResult {
    tool.call_json(ctx, &args.to_string()).await
}

/// The text of a successful call; panics on anything else.
pub async fn ok_text(tool: &dyn DynTool, ctx: &ToolCtx, args: Value) -> String {
    match call(tool, ctx, args).await {
        Ok(ToolOutput::Text(text)) => text,
        other => panic!("expected a text result, got {other:?}"),
    }
}

/// The text of a model error; panics on anything else.
pub async fn err_text(tool: &dyn DynTool, ctx: &ToolCtx, args: Value) -> String {
    match call(tool, ctx, args).await {
        Err(ToolError::Model(text)) => text,
        other => panic!("expected a model error, got {other:?}"),
    }
}
