//! Summarizing older messages: the history file, the model call and the
//! summary message.
//!
//! The summarized messages are appended as text to
//! `/conversation_history/{session}.md` in the thread's files, so nothing
//! is lost to the agent; the model writes the summary from a prompt with
//! four sections (`prompts/summary.md`); the summary reaches the model as
//! a user message marked `source: summarization` that points at the file.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use deepfleet_fleet::tokens::logged;
use deepfleet_model::{CallPurpose, ModelClient, ModelError, ModelRequest};
use deepfleet_proto::{
    ContentBlock, LoggedMessage, Message, SummaryEvent, ToolStatus, Usage, UserMessage,
};

use crate::backend::{Backend, BackendError};
use crate::compress::history::View;
use crate::compress::offload::HISTORY_DIR;
use crate::events::Event;

const PROMPT: &str = include_str!("../prompts/summary.md");
/// `UserMessage::source` of summary messages.
pub const SUMMARY_SOURCE: &str = "summarization";

/// Renders messages as tagged text, for the summary prompt and the
/// history file. The file leaves summary messages out (`with_summaries`
/// false): what they condense is in the file already.
pub fn render(messages: &[LoggedMessage], with_summaries: bool) -> String {
    let mut out = String::new();
    for entry in messages {
        match &entry.message {
            Message::User(m) if !with_summaries && m.source.as_deref() == Some(SUMMARY_SOURCE) => {
                continue;
            }
            Message::System(m) => element(&mut out, "system", "", &m.content),
            Message::User(m) => element(&mut out, "user", "", &m.content),
            Message::Assistant(m) => {
                let mut body = m.content.clone();
                for call in &m.tool_calls {
                    body.push(ContentBlock::text(format!(
                        "<tool_call id=\"{}\" name=\"{}\">{}</tool_call>",
                        call.id, call.name, call.arguments
                    )));
                }
                element(&mut out, "assistant", "", &body);
            }
            Message::Tool(m) => {
                let status = match m.status {
                    ToolStatus::Success => "success",
                    ToolStatus::Error => "error",
                };
                let attrs = format!(
                    " name=\"{}\" tool_call_id=\"{}\" status=\"{status}\"",
                    m.name, m.tool_call_id
                );
                element(&mut out, "tool", &attrs, &m.content);
            }
        }
    }
    out
}

fn element(out: &mut String, role: &str, attrs: &str, content: &[ContentBlock]) {
    let body: Vec<String> = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Image { mime_type, .. } => format!("<image mime_type=\"{mime_type}\"/>"),
        })
        .collect();
    out.push_str(&format!(
        "<message role=\"{role}\"{attrs}>{}</message>\n",
        body.join("\n")
    ));
}

/// The message the model sees in place of what was summarized.
pub fn summary_message(summary: &str, file_path: Option<&str>) -> Message {
    let text = match file_path {
        Some(path) => format!(
            "You are in the middle of a conversation that has been summarized.\n\n\
             The full conversation history has been saved to {path} should you need to refer \
             back to it for details.\n\n\
             A condensed summary follows:\n\n<summary>\n{summary}\n</summary>"
        ),
        None => format!("Here is a summary of the conversation to date:\n\n{summary}"),
    };
    Message::User(UserMessage {
        content: vec![ContentBlock::text(text)],
        source: Some(SUMMARY_SOURCE.to_owned()),
    })
}

/// Appends a section with `rendered` to the history file at `path`.
async fn append_history(
    backend: &dyn Backend,
    path: &str,
    rendered: &str,
) -> Result<(), BackendError> {
    let existing = match backend.read(path).await {
        Ok(file) => file.content,
        Err(BackendError::NotFound) => String::new(),
        Err(e) => return Err(e),
    };
    let section = format!(
        "## Summarized at {}\n\n{rendered}\n\n",
        Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    backend.write(path, &(existing + &section)).await
}

/// A summary made, with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The event to record in the thread's cursor.
    pub event: SummaryEvent,
    /// Tokens of the summary call.
    pub usage: Usage,
    /// How many log messages it covers that no earlier summary did.
    pub summarized: usize,
}

/// What a summary is made from.
pub struct SummaryInput<'a> {
    /// The model's view.
    pub view: &'a View,
    /// Index in the view of the first message kept (greater than
    /// `view.lead`).
    pub cutoff: usize,
    /// Stored tokens of the log messages being summarized for the first
    /// time, for the cursor's running total.
    pub new_tokens: u64,
    /// The summary in force, if any (its session and totals carry over).
    pub previous: Option<&'a SummaryEvent>,
    /// Messages in the log now (stored and added).
    pub log_len: usize,
}

/// Makes summaries with one model.
pub struct Summarizer {
    model: Arc<dyn ModelClient>,
    model_name: String,
    max_output_tokens: Option<u64>,
}

impl Summarizer {
    /// Summaries by `model_name` on `model`, capped at `max_output_tokens`.
    pub fn new(
        model: Arc<dyn ModelClient>,
        model_name: String,
        max_output_tokens: Option<u64>,
    ) -> Self {
        Summarizer {
            model,
            model_name,
            max_output_tokens,
        }
    }

    /// Summarizes `input.view.messages[..cutoff]`: appends them to the
    /// history file, asks the model for the summary and returns the new
    /// event. A failed history write is logged and the summary goes on
    /// without a file (as deepagents does); a failed model call is the
    /// error. `emit` receives the model call's event; with `deltas` (a
    /// followed run) the call streams its tokens there, tagged
    /// [`CallPurpose::Summarization`].
    pub async fn summarize(
        &self,
        input: SummaryInput<'_>,
        backend: &dyn Backend,
        emit: &(dyn Fn(Event) + Send + Sync),
        deltas: Option<&dyn deepfleet_model::DeltaSink>,
    ) -> Result<Summary, ModelError> {
        let SummaryInput {
            view,
            cutoff,
            new_tokens,
            previous,
            log_len,
        } = input;
        let session = previous.map_or_else(
            || format!("session_{}", uuid::Uuid::new_v4().simple()),
            |p| p.session.clone(),
        );
        let path = format!("{HISTORY_DIR}/{session}.md");
        let fresh = &view.messages[view.lead..cutoff];
        let file_path = match append_history(backend, &path, &render(fresh, false)).await {
            Ok(()) => Some(path),
            Err(error) => {
                tracing::warn!(%path, %error, "could not append the summarized history");
                None
            }
        };
        let prompt = PROMPT.replace("{messages}", &render(&view.messages[..cutoff], true));
        let request = ModelRequest {
            model: self.model_name.clone(),
            system: "".into(),
            messages: vec![Message::user(prompt)],
            tools: Vec::new().into(),
            max_output_tokens: self.max_output_tokens,
            cache_key: None,
            cache_breakpoints: Vec::new(),
            purpose: CallPurpose::Summarization,
            sampling: Default::default(),
            rate: Default::default(),
        };
        let started = Instant::now();
        let response = match deltas {
            Some(sink) => self.model.stream(&request, sink).await,
            None => self.model.complete(&request).await,
        };
        emit(Event::ModelCall {
            model: self.model_name.clone(),
            purpose: CallPurpose::Summarization,
            usage: response.as_ref().ok().map(|r| r.usage),
            latency: started.elapsed(),
        });
        let response = response?;
        let text = deepfleet_proto::message::joined_text(&response.message.content);
        let message = logged(summary_message(text.trim(), file_path.as_deref()));
        let event = SummaryEvent {
            cutoff: u64::try_from(view.log_index(cutoff)).unwrap_or(u64::MAX),
            message,
            file_path,
            session,
            created_at_index: u64::try_from(log_len).unwrap_or(u64::MAX),
            summarized_tokens: previous.map_or(0, |p| p.summarized_tokens) + new_tokens,
            created_at: Utc::now(),
        };
        Ok(Summary {
            event,
            usage: response.usage,
            summarized: cutoff - view.lead,
        })
    }
}

/// Stored tokens of log messages `from..to` (stored log, then the step's
/// added messages).
pub fn stored_tokens(
    history: &[LoggedMessage],
    added: &[LoggedMessage],
    from: usize,
    to: usize,
) -> u64 {
    history
        .iter()
        .chain(added)
        .skip(from)
        .take(to.saturating_sub(from))
        .map(|m| u64::from(m.tokens))
        .sum()
}

#[cfg(test)]
#[path = "summarize_tests.rs"]
mod tests;
