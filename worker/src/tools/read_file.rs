//! `read_file`: a window of a file's lines under an `@@ lines A-B of T @@`
//! header, capped at [`OUTPUT_LIMIT`] characters.

use async_trait::async_trait;
use deepfleet_proto::{ContentBlock, Encoding, ImageSource};
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{OUTPUT_LIMIT, backend_error, file_not_found, validate_path};
use super::{Tool, ToolError, ToolOutput, ToolResult};
use crate::backend::BackendError;
use crate::context::ToolView;

/// Reads a window of a file.
pub struct ReadFile;

/// Arguments of [`ReadFile`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// Absolute path of the file to read, e.g. `/notes.md`.
    pub file_path: String,
    /// 0-based index of the first line to return (default 0).
    #[serde(default)]
    pub offset: i64,
    /// How many lines to return at most (default 100).
    #[serde(default = "default_limit")]
    pub limit: i64,
}

fn default_limit() -> i64 {
    100
}

#[async_trait]
impl Tool for ReadFile {
    const NAME: &'static str = "read_file";
    type Args = ReadFileArgs;

    fn description(&self) -> String {
        "Read a file from the filesystem. `file_path` is an absolute path such as `/notes.md`. \
         The result starts with a header like `@@ lines 1-100 of 250 | next offset 100 @@`, \
         followed by the lines exactly as stored, without line numbers; the header is not part \
         of the file. By default up to 100 lines are returned starting at `offset` 0 (0-based); \
         when the header shows `next offset N`, call again with `offset=N` to continue, and \
         raise `limit` to read more at once. Long output is cut to stay under 80,000 \
         characters, as the header then says. Images are returned as images. Read several \
         files in parallel when you need them all; large tool results saved under \
         `/large_tool_results/` are read the same way."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: ReadFileArgs) -> ToolResult {
        let path = validate_path(&args.file_path)?;
        let file = match ctx.backend().read(&path).await {
            Ok(file) => file,
            Err(BackendError::NotFound) => return Err(file_not_found(&path)),
            Err(other) => return Err(backend_error(other)),
        };
        if file.encoding == Encoding::Base64 {
            return binary(&path, file.content);
        }
        render(&path, &file.content, args.offset, args.limit).map(ToolOutput::Text)
    }
}

/// Binary files: images go to the model as images; other kinds cannot be
/// shown as text.
fn binary(path: &str, base64: String) -> ToolResult {
    let extension = path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let mime = match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("webp") => "image/webp",
        Some("gif") => "image/gif",
        Some("heic") => "image/heic",
        Some("heif") => "image/heif",
        _ => {
            return Err(ToolError::Model(format!(
                "Error: '{path}' is a binary file and cannot be read as text."
            )));
        }
    };
    Ok(ToolOutput::Content(vec![ContentBlock::Image {
        mime_type: mime.to_owned(),
        source: ImageSource::Base64(base64),
    }]))
}

/// The model-facing text for a window of `content`.
fn render(path: &str, content: &str, offset: i64, limit: i64) -> Result<String, ToolError> {
    if content.trim().is_empty() {
        return Ok("System reminder: File exists but has empty contents".to_owned());
    }
    if limit <= 0 {
        return Ok(format!(
            "System reminder: no lines were read because `limit` was {limit}. Call read_file \
             again with a positive `limit` to read lines."
        ));
    }
    let lines = split_lines(content);
    let total = lines.len();
    let mut notices = Vec::new();
    if offset < 0 {
        notices.push(format!(
            "[Requested offset {offset} is before the start of the file; read from line 1 instead.]"
        ));
    }
    let start = usize::try_from(offset).unwrap_or(0);
    if start >= total {
        return Err(ToolError::Model(format!(
            "Error: Line offset {offset} exceeds file length ({total} lines)"
        )));
    }
    let end = start
        .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
        .min(total);
    let window = &lines[start..end];
    let mut header = format!("@@ lines {}-{end} of {total}", start + 1);
    if end < total {
        header.push_str(&format!(" | next offset {end}"));
    }
    let mut parts = notices.clone();
    parts.push(format!("{header} @@"));
    parts.extend(window.iter().map(|line| (*line).to_owned()));
    let text = parts.join("\n");
    if text.chars().count() < OUTPUT_LIMIT {
        return Ok(text);
    }
    Ok(truncated(path, &notices, window, start, total))
}

/// A window that does not fit [`OUTPUT_LIMIT`]: as many whole lines as fit,
/// or the start of the first line when not even one does. Whole lines keep
/// the `next offset` resumable; a cut line cannot be resumed mid-way.
fn truncated(
    path: &str,
    notices: &[String],
    window: &[&str],
    start: usize,
    total: usize,
) -> String {
    let budget = OUTPUT_LIMIT - 1;
    let notice_len: usize = notices.iter().map(|n| n.chars().count() + 1).sum();
    let size_notice = format!(
        "[Output cut to stay under {OUTPUT_LIMIT} characters. Continue from the next offset \
         in the header. If '{path}' has very long lines (minified JSON, for example), \
         reformat it into shorter lines first, e.g. with `jq`.]"
    );
    let fixed = notice_len + size_notice.chars().count() + 1;
    let header = |shown: usize| {
        let end = start + shown;
        format!(
            "@@ lines {}-{end} of {total} | next offset {end} | truncated due to size @@",
            start + 1
        )
    };
    let mut shown = 0;
    let mut body = 0;
    for line in window {
        let next = body + 1 + line.chars().count();
        if fixed + header(shown + 1).chars().count() + next > budget {
            break;
        }
        body = next;
        shown += 1;
    }
    let mut parts = notices.to_vec();
    if shown > 0 {
        parts.push(size_notice);
        parts.push(header(shown));
        parts.extend(window[..shown].iter().map(|line| (*line).to_owned()));
        return parts.join("\n");
    }
    let line = window.first().copied().unwrap_or_default();
    let line_len = line.chars().count();
    let line_no = start + 1;
    let mid_notice = format!(
        "[Line {line_no} of '{path}' alone exceeds {OUTPUT_LIMIT} characters, so only its \
         beginning is shown. Reformat the file into shorter lines (e.g. with `jq` for JSON) \
         or search it with `grep` to see the rest.]"
    );
    let fixed = notice_len + mid_notice.chars().count() + 1 + 1;
    let mid_header = |shown: usize| {
        format!(
            "@@ lines {line_no}-{line_no} of {total} | truncated mid-line | {shown} of {line_len} chars @@"
        )
    };
    let fits = |shown: usize| fixed + mid_header(shown).chars().count() + shown <= budget;
    // The header with the longest count is a lower bound that fits; then
    // grow by the digits the shorter count frees.
    let mut shown = budget.saturating_sub(fixed + mid_header(line_len).chars().count());
    while shown < line_len && fits(shown + 1) {
        shown += 1;
    }
    parts.push(mid_notice);
    parts.push(mid_header(shown));
    parts.push(line.chars().take(shown).collect());
    parts.join("\n")
}

/// Lines without their terminators, split at `\n`, `\r\n` and `\r` like
/// Python's `splitlines`; a final terminator does not start a new line.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['\n', '\r']) {
        lines.push(&rest[..at]);
        let skip = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[at + skip..];
    }
    if !rest.is_empty() {
        lines.push(rest);
    }
    lines
}

#[cfg(test)]
#[path = "read_file_tests.rs"]
mod tests;
