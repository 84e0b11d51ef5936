//! The compression engine one agent shares between its summarization
//! middleware and its `compact_conversation` tool: sizing from totals,
//! user-message eviction, argument truncation and summaries.

use std::sync::{Mutex, OnceLock};

use deepfleet_fleet::tokens::{count_text, logged};
use deepfleet_model::{ModelError, ToolSpec};
use deepfleet_proto::{ContentBlock, ContextCursor, EvictedMessage, Message, UserMessage};

use crate::compress::budget::{Policy, Size, Totals, USER_MESSAGE_TOKEN_LIMIT};
use crate::compress::cutoff::{cut_point, keep_start};
use crate::compress::history::View;
use crate::compress::offload::{eviction_path, user_message_stub};
use crate::compress::summarize::{Summarizer, SummaryInput, stored_tokens};
use crate::compress::truncate::truncate_old_arguments;
use crate::context::ThreadView;
use crate::events::{CompactionKind, Event};

/// One agent's compression settings and summarizer.
pub struct Compressor {
    summarizer: Summarizer,
    policy: Policy,
    /// Tokens of the tool schemas.
    schemas: OnceLock<u64>,
    /// Length and tokens of the last system prompt seen.
    prompt: Mutex<Option<(usize, u64)>>,
}

impl Compressor {
    /// Compression by `policy`, summaries by `summarizer`.
    pub fn new(summarizer: Summarizer, policy: Policy) -> Self {
        Compressor {
            summarizer,
            policy,
            schemas: OnceLock::new(),
            prompt: Mutex::new(None),
        }
    }

    /// The agent's policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Tokens of the system prompt and tool schemas. The schemas are
    /// counted on the first request only (fixed per agent); the prompt is
    /// recounted only when its length changes (it is byte-stable across a
    /// thread's steps so provider caches hit, but per-thread sections such
    /// as memory differ between threads of one agent).
    pub fn fixed_tokens(&self, system: &str, tools: &[ToolSpec]) -> u64 {
        let schemas = *self.schemas.get_or_init(|| {
            tools
                .iter()
                .map(|t| {
                    let json = serde_json::json!({
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    });
                    u64::from(count_text(&json.to_string()))
                })
                .sum()
        });
        let mut prompt = self.prompt.lock().unwrap_or_else(|e| e.into_inner());
        let tokens = match *prompt {
            Some((len, tokens)) if len == system.len() => tokens,
            _ => {
                let tokens = u64::from(count_text(system));
                *prompt = Some((system.len(), tokens));
                tokens
            }
        };
        schemas + tokens
    }

    /// The last [`Compressor::fixed_tokens`] result.
    fn fixed(&self) -> u64 {
        let prompt = self.prompt.lock().unwrap_or_else(|e| e.into_inner());
        self.schemas.get().copied().unwrap_or_default() + prompt.map_or(0, |(_, t)| t)
    }

    /// The size of the model's view under `cursor`, from running totals;
    /// the provider's report for the newest turn made under the current
    /// summary corrects the estimate upwards.
    pub fn size(&self, thread: &ThreadView<'_>, cursor: &ContextCursor) -> Size {
        let start = view_start(cursor);
        let evicted_savings = cursor
            .evicted
            .iter()
            .filter_map(|e| {
                let index = usize::try_from(e.index).ok().filter(|i| *i >= start)?;
                let original = thread.get(index)?;
                Some(u64::from(original.tokens.saturating_sub(e.stub.tokens)))
            })
            .sum();
        let totals = Totals {
            fixed: self.fixed(),
            log_tokens: thread.compaction().log_tokens(),
            log_len: thread.history().len(),
            added_tokens: thread.added().iter().map(|m| u64::from(m.tokens)).sum(),
            added_len: thread.added().len(),
            evicted_savings,
        };
        let mut size = Size::of_view(cursor, &totals);
        size.reported = reported_usage(thread, cursor);
        size
    }

    /// Evicts the newest message to a file when it is a user message over
    /// the limit (using its stored count: no tokenizing). Returns whether
    /// the cursor changed.
    pub async fn evict_last_user_message(
        &self,
        thread: &ThreadView<'_>,
        cursor: &mut ContextCursor,
    ) -> bool {
        let Some(index) = thread.len().checked_sub(1) else {
            return false;
        };
        let Some(entry) = thread.get(index) else {
            return false;
        };
        let Message::User(user) = &entry.message else {
            return false;
        };
        let index_u64 = u64::try_from(index).unwrap_or(u64::MAX);
        if user.source.is_some()
            || u64::from(entry.tokens) <= USER_MESSAGE_TOKEN_LIMIT
            || cursor.evicted.iter().any(|e| e.index == index_u64)
        {
            return false;
        }
        let text = deepfleet_proto::message::joined_text(&user.content);
        let path = eviction_path();
        if let Err(error) = thread.backend().write(&path, &text).await {
            tracing::warn!(%path, %error, "could not evict a large user message; sending it whole");
            return false;
        }
        let mut content = vec![ContentBlock::text(user_message_stub(&path, &text))];
        content.extend(
            user.content
                .iter()
                .filter(|b| !matches!(b, ContentBlock::Text { .. }))
                .cloned(),
        );
        let stub = logged(Message::User(UserMessage {
            content,
            source: None,
        }));
        thread.emit(Event::Compaction {
            kind: CompactionKind::UserMessageEviction,
            tokens_before: u64::from(entry.tokens),
            tokens_after: u64::from(stub.tokens),
        });
        cursor.evicted.push(EvictedMessage {
            index: index_u64,
            path,
            stub,
        });
        true
    }

    /// Truncates old `write_file`/`edit_file` arguments before the keep
    /// window of `view`; returns the tokens saved.
    pub fn truncate(&self, view: &mut View) -> u64 {
        let end = keep_start(&view.messages, self.policy.keep);
        truncate_old_arguments(&mut view.messages, end)
    }

    /// Summarizes the view under `cursor` up to the keep window. Returns
    /// the new cursor and how many messages were summarized, or `None`
    /// when nothing older than the keep window is left to summarize.
    /// Emits the summary call and a compaction event of `kind`.
    pub async fn summarize(
        &self,
        thread: &ThreadView<'_>,
        cursor: &ContextCursor,
        kind: CompactionKind,
        tokens_before: u64,
    ) -> Result<Option<(ContextCursor, usize)>, ModelError> {
        let view = View::build(cursor, thread.history(), thread.added());
        let cutoff = cut_point(&view.messages, self.policy.keep);
        if cutoff <= view.lead {
            return Ok(None);
        }
        let new_tokens = stored_tokens(
            thread.history(),
            thread.added(),
            view.start,
            view.log_index(cutoff),
        );
        let made = self
            .summarizer
            .summarize(
                SummaryInput {
                    view: &view,
                    cutoff,
                    new_tokens,
                    previous: cursor.summary.as_ref(),
                    log_len: thread.len(),
                },
                thread.backend(),
                &|event| thread.emit(event),
                thread.deltas(),
            )
            .await?;
        thread.compaction().add_summary_call(&made.usage);
        let new_cutoff = made.event.cutoff;
        let next = ContextCursor {
            summary: Some(made.event),
            evicted: cursor
                .evicted
                .iter()
                .filter(|e| e.index >= new_cutoff)
                .cloned()
                .collect(),
        };
        let after = self.size(thread, &next);
        thread.emit(Event::Compaction {
            kind,
            tokens_before,
            tokens_after: after.tokens,
        });
        thread.compaction().set_cursor(next.clone());
        Ok(Some((next, made.summarized)))
    }
}

fn view_start(cursor: &ContextCursor) -> usize {
    cursor
        .summary
        .as_ref()
        .map_or(0, |s| usize::try_from(s.cutoff).unwrap_or(usize::MAX))
}

/// Input plus output tokens the provider reported for the newest model
/// turn, when that turn was made with the current summary in place (an
/// older report measured a request that no longer exists). Looks back
/// only past the newest turn's tool results.
fn reported_usage(thread: &ThreadView<'_>, cursor: &ContextCursor) -> Option<u64> {
    let since = cursor.summary.as_ref().map_or(0, |s| {
        usize::try_from(s.created_at_index).unwrap_or(usize::MAX)
    });
    let mut index = thread.len().checked_sub(1)?;
    while let Message::Tool(_) = thread.get(index)?.message {
        index = index.checked_sub(1)?;
    }
    let Message::Assistant(turn) = &thread.get(index)?.message else {
        return None;
    };
    if index < since {
        return None;
    }
    turn.usage.map(|u| u.input_tokens + u.output_tokens)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
