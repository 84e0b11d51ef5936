//! `grep`: literal text search across files.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::format::{backend_error, truncate_text, validate_path};
use super::{Tool, ToolError, ToolOutput, ToolResult};
use crate::backend::GrepMatch;
use crate::context::ToolView;

/// Searches file contents for a literal string.
pub struct Grep;

/// The cap on matches when the call sets none.
const DEFAULT_MAX_COUNT: usize = 1000;

/// How [`Grep`] reports its matches. (`Serialize` lets the schema show the
/// default.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    // Plain comments, not doc comments: variant docs would turn the schema's
    // simple `enum` of strings into a verbose `oneOf`.
    // The paths of files with at least one match.
    #[default]
    FilesWithMatches,
    // Every matching line with its path and line number.
    Content,
    // The number of matching lines per file.
    Count,
}

/// Arguments of [`Grep`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// The exact text to search for (a literal string, not a regular expression).
    pub pattern: String,
    /// Absolute file or directory to search; the whole filesystem when omitted.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files whose names match this glob, e.g. `*.py`.
    #[serde(default)]
    pub glob: Option<String>,
    /// `files_with_matches` (default): matching file paths; `content`: matching lines with
    /// line numbers; `count`: matches per file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Stop after this many matching lines (default 1000).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_count: Option<usize>,
}

#[async_trait]
impl Tool for Grep {
    const NAME: &'static str = "grep";
    type Args = GrepArgs;

    fn description(&self) -> String {
        "Search file contents for `pattern`. Matching is literal: the pattern is plain text, \
         not a regular expression, so `a|b` or `.*` only match those exact characters. \
         Narrow the search with `path` (a file or directory) and `glob` (a file-name \
         pattern such as `*.py`). `output_mode` picks the result: `files_with_matches` \
         (default) lists matching files, `content` shows each matching line with its line \
         number, `count` gives matches per file. At most `max_count` (default 1000) matches \
         are returned. Large tool results saved under `/large_tool_results/` can be searched \
         too."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: GrepArgs) -> ToolResult {
        let path = args.path.as_deref().map(validate_path).transpose()?;
        let max_count = match args.max_count {
            Some(0) => {
                return Err(ToolError::Model(
                    "Error: max_count must be a positive integer.".to_owned(),
                ));
            }
            Some(n) => n,
            None => DEFAULT_MAX_COUNT,
        };
        let result = ctx
            .backend()
            .grep(
                &args.pattern,
                path.as_deref(),
                args.glob.as_deref(),
                max_count,
            )
            .await
            .map_err(backend_error)?;
        if result.matches.is_empty() {
            let mut text = "No matches found".to_owned();
            if looks_like_regex(&args.pattern) {
                text.push_str(&format!(
                    "\n\nNote: grep matches `pattern` as literal text, not as a regular \
                     expression, and '{}' looks like a regex. Search for one plain substring \
                     at a time instead.",
                    args.pattern
                ));
            }
            return Ok(ToolOutput::Text(text));
        }
        let mut text = truncate_text(render(&result.matches, args.output_mode));
        if result.truncated {
            text.push_str(&format!(
                "\n\n[Search stopped early after {max_count} matches, so results are \
                 incomplete. Narrow it with `path`, `glob` or a more specific pattern, or \
                 raise `max_count`.]"
            ));
        }
        Ok(ToolOutput::Text(text))
    }
}

/// Formats matches (in path order, then line order) for `mode`.
fn render(matches: &[GrepMatch], mode: OutputMode) -> String {
    let mut files: Vec<(&str, Vec<&GrepMatch>)> = Vec::new();
    for m in matches {
        match files.last_mut() {
            Some((path, hits)) if *path == m.path => hits.push(m),
            _ => files.push((&m.path, vec![m])),
        }
    }
    let lines: Vec<String> = match mode {
        OutputMode::FilesWithMatches => files.iter().map(|(path, _)| (*path).to_owned()).collect(),
        OutputMode::Count => files
            .iter()
            .map(|(path, hits)| format!("{path}: {}", hits.len()))
            .collect(),
        OutputMode::Content => files
            .iter()
            .flat_map(|(path, hits)| {
                std::iter::once(format!("{path}:"))
                    .chain(hits.iter().map(|m| format!("  {}: {}", m.line, m.text)))
            })
            .collect(),
    };
    lines.join("\n")
}

/// Whether a pattern that found nothing was probably meant as a regex:
/// alternation, `.*`/`.+`, or an escaped metacharacter or class.
fn looks_like_regex(pattern: &str) -> bool {
    if pattern.contains('|') || pattern.contains(".*") || pattern.contains(".+") {
        return true;
    }
    pattern
        .split('\\')
        .skip(1)
        .filter_map(|rest| rest.chars().next())
        .any(|c| ".^$*+?()[]{}|dDsSwWbB".contains(c))
}

#[cfg(test)]
#[path = "grep_tests.rs"]
mod tests;
