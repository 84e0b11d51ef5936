//! Moving oversized content out of the conversation into files.
//!
//! A tool result over [`TOOL_RESULT_TOKEN_LIMIT`] tokens is written to
//! `/large_tool_results/{id}` and the model gets a stub naming the file
//! with a head/tail preview; a user message over
//! [`USER_MESSAGE_TOKEN_LIMIT`] goes to `/conversation_history/{uuid}.md`
//! the same way. Thresholds are tiktoken counts (this project's unit);
//! deepagents compares characters against four times the token limit,
//! which a real tokenizer makes unnecessary. A byte-length check runs
//! first: a text has at least one byte per token, so short texts are
//! never tokenized.

use deepfleet_fleet::tokens::count_text;
use deepfleet_proto::ContentBlock;
use sha2::{Digest, Sha256};

use crate::backend::Backend;
use crate::compress::budget::{TOOL_RESULT_TOKEN_LIMIT, USER_MESSAGE_TOKEN_LIMIT};
use crate::tools::{
    Tool, ToolOutput, delete::Delete, edit_file::EditFile, glob::Glob, grep::Grep, ls::Ls,
    read_file::ReadFile, write_file::WriteFile,
};

/// Tools whose output is never offloaded: they cap their own output, or
/// answer in a line.
pub const EXEMPT_TOOLS: &[&str] = &[
    Ls::NAME,
    Glob::NAME,
    Grep::NAME,
    ReadFile::NAME,
    EditFile::NAME,
    WriteFile::NAME,
    Delete::NAME,
];

/// Where offloaded tool results go.
pub const LARGE_RESULTS_DIR: &str = "/large_tool_results";
/// Where evicted user messages and summarized history go.
pub const HISTORY_DIR: &str = "/conversation_history";

const PREVIEW_EDGE_LINES: usize = 5;
const PREVIEW_LINE_CHARS: usize = 1_000;
const MAX_ID_BYTES: usize = 128;
const SHOWN_ID_CHARS: usize = 32;

/// A call id made safe as a file name: `.`, `/` and `\` become `_`; an id
/// over 128 bytes becomes `call-{sha256}`; a missing one `unknown-{hex}`.
pub fn sanitize_id(id: &str) -> String {
    if id.is_empty() {
        let random = uuid::Uuid::new_v4().simple().to_string();
        return format!("unknown-{}", &random[..8]);
    }
    if id.len() > MAX_ID_BYTES {
        return format!("call-{}", hex(&Sha256::digest(id.as_bytes())));
    }
    id.replace(['.', '/', '\\'], "_")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file a large result of call `id` is written to.
pub fn result_path(id: &str) -> String {
    format!("{LARGE_RESULTS_DIR}/{}", sanitize_id(id))
}

/// A preview of `text`: every line when there are at most ten, else the
/// first and last five around a marker; lines numbered from 1 (head and
/// tail aligned separately) and clipped to 1,000 characters. Also says
/// whether lines were omitted and whether any was clipped.
pub fn preview(text: &str) -> (String, bool, bool) {
    let lines: Vec<&str> = text.lines().collect();
    let mut clipped = false;
    let mut render = |numbered: &[(usize, &str)]| -> Vec<String> {
        let width = numbered
            .last()
            .map(|(n, _)| n.to_string().len())
            .unwrap_or(1);
        numbered
            .iter()
            .map(|(n, line)| {
                let shown: String = line.chars().take(PREVIEW_LINE_CHARS).collect();
                clipped |= shown.len() < line.len();
                format!("{n:>width$}  {shown}")
            })
            .collect()
    };
    let numbered: Vec<(usize, &str)> = lines.iter().enumerate().map(|(i, l)| (i + 1, *l)).collect();
    if numbered.len() <= 2 * PREVIEW_EDGE_LINES {
        return (render(&numbered).join("\n"), false, clipped);
    }
    let tail_from = numbered.len() - PREVIEW_EDGE_LINES;
    let mut out = render(&numbered[..PREVIEW_EDGE_LINES]);
    out.push(format!(
        "... [{} lines truncated] ...",
        tail_from - PREVIEW_EDGE_LINES
    ));
    out.extend(render(&numbered[tail_from..]));
    (out.join("\n"), true, clipped)
}

/// The sentence that introduces a preview.
fn preview_intro(omitted: bool, clipped: bool) -> String {
    let mut caveats = Vec::new();
    if omitted {
        caveats.push("the lines between head and tail are left out");
    }
    if clipped {
        caveats.push("lines over 1,000 characters are cut short");
    }
    if caveats.is_empty() {
        "Here is a preview of the result:".to_owned()
    } else {
        format!(
            "Here is a preview showing the head and tail of the result ({}):",
            caveats.join("; ")
        )
    }
}

/// What the model reads instead of a large tool result.
pub fn tool_result_stub(id: &str, path: &str, text: &str) -> String {
    let shown_id = if id.chars().count() > SHOWN_ID_CHARS {
        format!("{}...", id.chars().take(SHOWN_ID_CHARS).collect::<String>())
    } else {
        id.to_owned()
    };
    let (lines, omitted, clipped) = preview(text);
    format!(
        "Tool result too large, the result of this tool call {shown_id} was saved in the filesystem at this path: {path}\n\n\
         It is too big to include here. Read it piece by piece with `read_file` and a window \
         (for example offset=0, limit=100, then move the offset on), or look for what you need \
         with `grep`.\n\n\
         Avoid reading the whole file at once: that would bring the same volume back into the \
         conversation.\n\n\
         {}\n{lines}",
        preview_intro(omitted, clipped)
    )
}

/// What the model reads instead of an oversized user message.
pub fn user_message_stub(path: &str, text: &str) -> String {
    let (lines, omitted, clipped) = preview(text);
    format!(
        "Message content too large and was saved to the filesystem at: {path}\n\n\
         Read it in windows with `read_file` (offset and limit) when you need its details.\n\n\
         {}\n{lines}",
        preview_intro(omitted, clipped)
    )
}

/// Whether a text is over `limit` tokens; tokenizes only texts long
/// enough to be.
fn over_limit(text: &str, limit: u64) -> bool {
    u64::try_from(text.len()).is_ok_and(|bytes| bytes > limit)
        && u64::from(count_text(text)) > limit
}

/// Whether a user message's text should be evicted.
pub fn user_message_too_large(text: &str) -> bool {
    over_limit(text, USER_MESSAGE_TOKEN_LIMIT)
}

/// A file for an evicted user message.
pub fn eviction_path() -> String {
    format!("{HISTORY_DIR}/{}.md", uuid::Uuid::new_v4())
}

/// An offloaded result: what the model gets, with token counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Offloaded {
    /// The stub text.
    pub stub: String,
    /// Media blocks of the original, kept.
    pub media: Vec<ContentBlock>,
    /// Tokens of the original text.
    pub tokens_before: u64,
    /// Tokens of the stub.
    pub tokens_after: u64,
}

impl Offloaded {
    /// The stub as a tool's output.
    pub fn output(&self) -> ToolOutput {
        if self.media.is_empty() {
            ToolOutput::Text(self.stub.clone())
        } else {
            ToolOutput::Content(self.content())
        }
    }

    /// The stub as message content.
    pub fn content(&self) -> Vec<ContentBlock> {
        let mut blocks = vec![ContentBlock::text(self.stub.clone())];
        blocks.extend(self.media.iter().cloned());
        blocks
    }
}

/// Writes `output` of call `id` of `tool` to a file and returns the stub,
/// when the tool is not exempt and the text is over the limit. A failed
/// write keeps the original (the model still gets its answer).
pub async fn offload_tool_result(
    backend: &dyn Backend,
    tool: &str,
    id: &str,
    output: &ToolOutput,
) -> Option<Offloaded> {
    if EXEMPT_TOOLS.contains(&tool) {
        return None;
    }
    let (text, media) = match output {
        ToolOutput::Text(text) => (text.clone(), Vec::new()),
        ToolOutput::Content(blocks) => {
            let media = blocks
                .iter()
                .filter(|b| !matches!(b, ContentBlock::Text { .. }))
                .cloned()
                .collect();
            (deepfleet_proto::message::joined_text(blocks), media)
        }
        ToolOutput::Delegate { .. } | ToolOutput::Spawn { .. } => return None,
    };
    if !over_limit(&text, TOOL_RESULT_TOKEN_LIMIT) {
        return None;
    }
    let path = result_path(id);
    if let Err(error) = backend.write(&path, &text).await {
        tracing::warn!(%path, %error, "could not offload a large tool result; keeping it inline");
        return None;
    }
    let stub = tool_result_stub(id, &path, &text);
    Some(Offloaded {
        tokens_before: u64::from(count_text(&text)),
        tokens_after: u64::from(count_text(&stub)),
        stub,
        media,
    })
}

#[cfg(test)]
#[path = "offload_tests.rs"]
mod tests;
