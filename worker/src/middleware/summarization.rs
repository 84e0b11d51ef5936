//! The summarization middleware: keeps each request inside the model's
//! window, and recovers once from a context-overflow error.
//!
//! It is the outermost layer, so the request it gets is exactly
//! `log[cursor..] ++ added` and its indices are log indices. Per request:
//!
//! 1. evict the newest message to a file if it is an oversized user
//!    message;
//! 2. size the view from running totals (no pass over the log);
//! 3. past the trigger: truncate old `write_file`/`edit_file` arguments
//!    (request only), and if still past it, summarize everything before
//!    the keep window;
//! 4. send `[summary, log[cutoff..]]` (evicted messages as stubs);
//! 5. on a context-overflow error: summarize and retry exactly once; a
//!    request that still does not fit fails the run (`context_overflow`).
//!
//! Changes to the cursor go to the step's [`StepCompaction`] and are
//! committed with the step.

use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_model::{ErrorKind, ModelError, ModelRequest, ModelResponse};
use deepfleet_proto::{ContextCursor, Message};

use crate::compress::compact_conversation::CompactConversation;
use crate::compress::engine::Compressor;
use crate::compress::history::View;
use crate::context::StepContext;
use crate::context::ThreadView;
use crate::context::compaction::StepCompaction;
use crate::error::StepError;
use crate::events::{CompactionKind, Event};
use crate::middleware::{Middleware, ModelNext};
use crate::tools::DynTool;

/// Summarizes, truncates and evicts so that requests fit the window.
pub struct Summarization {
    compressor: Arc<Compressor>,
}

impl Summarization {
    /// The middleware over the agent's compressor.
    pub fn new(compressor: Arc<Compressor>) -> Self {
        Summarization { compressor }
    }
}

/// Offers `compact_conversation` (opt-in, `compact_tool: true`). A layer
/// of its own so the tool comes last in the tool list, after the
/// built-in ones.
pub struct CompactionTool {
    compressor: Arc<Compressor>,
}

impl CompactionTool {
    /// The tool over the agent's compressor.
    pub fn new(compressor: Arc<Compressor>) -> Self {
        CompactionTool { compressor }
    }
}

impl Middleware for CompactionTool {
    fn name(&self) -> &'static str {
        "compact_conversation"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        vec![Arc::new(CompactConversation::new(Arc::clone(
            &self.compressor,
        )))]
    }
}

#[async_trait]
impl Middleware for Summarization {
    fn name(&self) -> &'static str {
        "summarization"
    }

    async fn wrap_model(
        &self,
        mut request: ModelRequest,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        let compaction: &StepCompaction = &cx.compaction;
        let start = compaction.view_start();
        let expected = (cx.history.len() + cx.added.len()).saturating_sub(start);
        if request.messages.len() != expected {
            // Not the request the step assembles from the cursor (another
            // layer rebuilt it): nothing here would line up with the log.
            tracing::warn!(
                got = request.messages.len(),
                expected,
                "summarization skipped: the request does not match the log"
            );
            return next.run(request, cx).await;
        }
        let thread = cx.thread();
        self.compressor
            .fixed_tokens(&request.system, &request.tools);
        let mut cursor = compaction.cursor();
        if self
            .compressor
            .evict_last_user_message(&thread, &mut cursor)
            .await
        {
            compaction.set_cursor(cursor.clone());
        }

        let raw = std::mem::take(&mut request.messages);
        let size = self.compressor.size(&thread, &cursor);
        let messages = if self.compressor.policy().fires(&size) {
            self.compress(&thread, cursor, size.effective_tokens())
                .await?
        } else {
            apply_cursor(raw, &cursor, start)
        };
        let template = request;
        let first = ModelRequest {
            messages,
            ..template.clone()
        };
        match next.run(first, cx).await {
            Err(StepError::Model(error)) if error.kind == ErrorKind::ContextOverflow => {
                self.recover(&thread, template, error, cx, next).await
            }
            other => other,
        }
    }
}

impl Summarization {
    /// Past the trigger: truncate old arguments, then summarize if that
    /// was not enough. Returns the messages to send.
    async fn compress(
        &self,
        thread: &ThreadView<'_>,
        cursor: ContextCursor,
        tokens: u64,
    ) -> Result<Vec<Message>, StepError> {
        let mut view = View::build(&cursor, thread.history(), thread.added());
        let saved = self.compressor.truncate(&mut view);
        let mut size = self.compressor.size(thread, &cursor);
        if saved > 0 {
            thread.emit(Event::Compaction {
                kind: CompactionKind::ArgumentTruncation,
                tokens_before: tokens,
                tokens_after: tokens.saturating_sub(saved),
            });
            size.tokens = size.tokens.saturating_sub(saved);
            // The report measured the untruncated request.
            size.reported = None;
        }
        if !self.compressor.policy().fires(&size) {
            return Ok(into_messages(view));
        }
        match self
            .compressor
            .summarize(thread, &cursor, CompactionKind::Summarization, tokens)
            .await?
        {
            Some((next, _)) => Ok(into_messages(View::build(
                &next,
                thread.history(),
                thread.added(),
            ))),
            // Everything is in the keep window: send it (truncated) and
            // let the provider judge.
            None => Ok(into_messages(view)),
        }
    }

    /// After a context-overflow error: summarize and retry once.
    async fn recover(
        &self,
        thread: &ThreadView<'_>,
        template: ModelRequest,
        error: ModelError,
        cx: &StepContext,
        next: ModelNext<'_>,
    ) -> Result<ModelResponse, StepError> {
        let cursor = thread.compaction().cursor();
        let before = self.compressor.size(thread, &cursor).tokens;
        let Some((cursor, _)) = self
            .compressor
            .summarize(thread, &cursor, CompactionKind::OverflowRetry, before)
            .await?
        else {
            return Err(still_too_large(
                error,
                "nothing older than the newest messages is left to summarize",
            ));
        };
        let retry = ModelRequest {
            messages: into_messages(View::build(&cursor, thread.history(), thread.added())),
            ..template
        };
        match next.run(retry, cx).await {
            Err(StepError::Model(e)) if e.kind == ErrorKind::ContextOverflow => Err(
                still_too_large(e, "the request still does not fit after summarizing"),
            ),
            other => other,
        }
    }
}

/// The request under `cursor`, from the messages the step assembled
/// (`log[start..] ++ added`): the summary first, evicted messages as
/// stubs. Costs nothing when the thread was never compressed.
fn apply_cursor(mut messages: Vec<Message>, cursor: &ContextCursor, start: usize) -> Vec<Message> {
    for evicted in &cursor.evicted {
        if let Some(slot) = usize::try_from(evicted.index)
            .ok()
            .and_then(|i| i.checked_sub(start))
            .and_then(|i| messages.get_mut(i))
        {
            *slot = evicted.stub.message.clone();
        }
    }
    if let Some(summary) = &cursor.summary {
        messages.insert(0, summary.message.message.clone());
    }
    messages
}

fn into_messages(view: View) -> Vec<Message> {
    view.messages.into_iter().map(|m| m.message).collect()
}

/// The run's failure when compression cannot make the request fit.
fn still_too_large(error: ModelError, why: &str) -> StepError {
    StepError::Model(ModelError {
        kind: ErrorKind::ContextOverflow,
        status: error.status,
        retry_after: None,
        message: format!(
            "the request exceeds the model's context window and {why} (provider: {})",
            error.message
        ),
    })
}

#[cfg(test)]
#[path = "summarization_tests.rs"]
mod tests;
