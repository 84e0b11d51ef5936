//! `compact_conversation`: the model asks for older messages to be
//! summarized now (deepagents' opt-in summarization tool).
//!
//! A tool that drives the [`Compressor`], so it lives with compression
//! rather than in `crate::tools`, which compression builds on.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::compress::engine::Compressor;
use crate::context::ToolView;
use crate::events::CompactionKind;
use crate::tools::{Tool, ToolError, ToolOutput, ToolResult};

/// The answer below half the trigger, or when nothing is old enough.
pub const NOTHING_TO_COMPACT: &str =
    "Nothing to compact yet — conversation is within the token budget.";

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactArgs {}

/// Summarizes the conversation up to its keep window, on request.
pub struct CompactConversation {
    compressor: Arc<Compressor>,
}

impl CompactConversation {
    /// The tool over the agent's compressor.
    pub fn new(compressor: Arc<Compressor>) -> Self {
        CompactConversation { compressor }
    }
}

#[async_trait]
impl Tool for CompactConversation {
    const NAME: &'static str = "compact_conversation";
    type Args = CompactArgs;

    fn description(&self) -> String {
        "Summarize the older part of this conversation to free room in your context window. \
         The full messages stay available in a history file. Use it when the conversation has \
         grown long, or before moving on to an unrelated task."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, _args: CompactArgs) -> ToolResult {
        let thread = ctx.thread();
        let cursor = thread.compaction().cursor();
        let size = self.compressor.size(&thread, &cursor);
        if !self.compressor.policy().compact_eligible(&size) {
            return Ok(ToolOutput::Text(NOTHING_TO_COMPACT.to_owned()));
        }
        match self
            .compressor
            .summarize(
                &thread,
                &cursor,
                CompactionKind::ManualCompaction,
                size.tokens,
            )
            .await
        {
            Ok(Some((_, n))) => Ok(ToolOutput::Text(format!(
                "Conversation compacted. Summarized {n} messages into a concise summary."
            ))),
            Ok(None) => Ok(ToolOutput::Text(NOTHING_TO_COMPACT.to_owned())),
            Err(error) => Err(ToolError::Model(format!(
                "Compaction failed: an error occurred while generating the summary ({error})"
            ))),
        }
    }
}
