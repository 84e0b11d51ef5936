//! Output helpers shared by the file tools: path validation as a tool
//! error, backend errors as model text, Python-style list rendering and the
//! 80,000-character output cap.
//!
//! deepagents renders `ls`/`glob` results as Python's `str(list)`; models
//! tuned on it expect that exact shape, so it is reproduced here.

use crate::backend::{BackendError, path};
use crate::tools::ToolError;

/// The most characters a file tool returns (20,000 tokens at 4 chars per
/// token, deepagents' budget for tools that cap their own output).
pub const OUTPUT_LIMIT: usize = 80_000;

/// The marker that ends a list or text cut at [`OUTPUT_LIMIT`].
pub const TRUNCATION_GUIDANCE: &str =
    "... [results truncated, try being more specific with your parameters]";

/// Validates a model-supplied path (see [`path::validate`]).
pub fn validate_path(raw: &str) -> Result<String, ToolError> {
    path::validate(raw).map_err(ToolError::Model)
}

/// A backend failure as the text the model reads.
pub fn backend_error(error: BackendError) -> ToolError {
    match error {
        BackendError::Unavailable(reason) => ToolError::Fatal(reason),
        error => ToolError::Model(format!("Error: {error}")),
    }
}

/// The error for a file that does not exist.
pub fn file_not_found(path: &str) -> ToolError {
    ToolError::Model(format!("Error: File '{path}' not found"))
}

/// Keeps items while their combined length fits [`OUTPUT_LIMIT`]; when some
/// are dropped, [`TRUNCATION_GUIDANCE`] becomes the last item.
pub fn truncate_list(items: Vec<String>) -> Vec<String> {
    let mut used = 0;
    let mut kept = Vec::with_capacity(items.len());
    let total = items.len();
    for item in items {
        used += item.chars().count();
        if used > OUTPUT_LIMIT {
            break;
        }
        kept.push(item);
    }
    if kept.len() < total {
        kept.push(TRUNCATION_GUIDANCE.to_owned());
    }
    kept
}

/// Cuts `text` to [`OUTPUT_LIMIT`] characters, followed by
/// [`TRUNCATION_GUIDANCE`] on its own line.
pub fn truncate_text(text: String) -> String {
    match text.char_indices().nth(OUTPUT_LIMIT) {
        Some((cut, _)) => format!("{}\n{TRUNCATION_GUIDANCE}", &text[..cut]),
        None => text,
    }
}

/// Python's `repr` of a list of strings: `['/a', '/b']`.
pub fn py_list(items: &[String]) -> String {
    let reprs: Vec<String> = items.iter().map(|item| py_str(item)).collect();
    format!("[{}]", reprs.join(", "))
}

/// Python's `repr` of a string: single quotes unless the text contains a
/// single quote and no double quote.
fn py_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn renders_python_list_repr() {
        assert_eq!(py_list(&[]), "[]");
        assert_eq!(
            py_list(&strings(&["/memory/", "/notes.md"])),
            "['/memory/', '/notes.md']"
        );
        assert_eq!(py_list(&strings(&["/it's.md"])), "[\"/it's.md\"]");
        assert_eq!(py_list(&strings(&["/a'\"b"])), "['/a\\'\"b']");
        assert_eq!(
            py_list(&strings(&["/a\\b\n\u{1}é"])),
            "['/a\\\\b\\n\\x01é']"
        );
    }

    #[test]
    fn truncates_lists_at_the_budget() {
        let items: Vec<String> = (0..20)
            .map(|i| format!("/{i:09}/{}", "x".repeat(9_989)))
            .collect();
        let kept = truncate_list(items.clone());
        assert_eq!(kept.len(), 9);
        assert_eq!(kept[..8], items[..8]);
        assert_eq!(kept[8], TRUNCATION_GUIDANCE);
        assert_eq!(truncate_list(items[..8].to_vec()), items[..8]);
    }

    #[test]
    fn truncates_text_at_the_budget() {
        assert_eq!(truncate_text("short".to_owned()), "short");
        let long = "é".repeat(OUTPUT_LIMIT + 5);
        let cut = truncate_text(long);
        assert_eq!(
            cut,
            format!("{}\n{TRUNCATION_GUIDANCE}", "é".repeat(OUTPUT_LIMIT))
        );
    }
}
