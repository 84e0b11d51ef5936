//! `edit_file`: exact string replacement in a text file.

use async_trait::async_trait;
use deepfleet_proto::Encoding;
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{backend_error, file_not_found, validate_path};
use super::{Tool, ToolError, ToolOutput, ToolResult};
use crate::backend::{BackendError, path};
use crate::context::ToolView;

/// Replaces text in a file.
pub struct EditFile;

/// Arguments of [`EditFile`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileArgs {
    /// Absolute path of the file to edit, e.g. `/notes.md`.
    pub file_path: String,
    /// The exact text to replace, including whitespace and indentation.
    pub old_string: String,
    /// The text to put in its place.
    pub new_string: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

#[async_trait]
impl Tool for EditFile {
    const NAME: &'static str = "edit_file";
    type Args = EditFileArgs;

    fn description(&self) -> String {
        "Replace `old_string` with `new_string` in the file at `file_path`. Read the file \
         first and copy `old_string` exactly as it appears, keeping indentation, and never \
         include the `@@ ... @@` header that `read_file` prints. The edit fails if \
         `old_string` is missing or occurs more than once; add surrounding context to make it \
         unique, or set `replace_all` to true to replace every occurrence."
            .to_owned()
    }

    fn mutated_path(&self, args: &EditFileArgs) -> Option<String> {
        path::validate(&args.file_path).ok()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: EditFileArgs) -> ToolResult {
        let path = validate_path(&args.file_path)?;
        let file = match ctx.backend().read(&path).await {
            Ok(file) => file,
            Err(BackendError::NotFound) => return Err(file_not_found(&path)),
            Err(other) => return Err(backend_error(other)),
        };
        if file.encoding == Encoding::Base64 {
            return Err(ToolError::Model(
                "Error: Cannot edit binary files with text replacements.".to_owned(),
            ));
        }
        let (content, count) = replace(&file.content, &args)?;
        ctx.backend()
            .write(&path, &content)
            .await
            .map_err(backend_error)?;
        Ok(ToolOutput::Text(format!(
            "Successfully replaced {count} instance(s) of the string in '{path}'"
        )))
    }
}

/// The edited content and how many occurrences were replaced, or the
/// error the model reads.
fn replace(content: &str, args: &EditFileArgs) -> Result<(String, usize), ToolError> {
    let old = args.old_string.as_str();
    if old.is_empty() {
        return Err(ToolError::Model(
            "Error: old_string cannot be empty. Provide the exact text to replace.".to_owned(),
        ));
    }
    let count = content.matches(old).count();
    match count {
        0 => Err(ToolError::Model(not_found(content, old))),
        1 => Ok((content.replacen(old, &args.new_string, 1), 1)),
        n if args.replace_all => Ok((content.replace(old, &args.new_string), n)),
        n => Err(ToolError::Model(format!(
            "Error: String '{old}' appears {n} times in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context."
        ))),
    }
}

/// The not-found error, with a hint when the only obstacle is a trailing
/// newline in `old_string` that the file's last line lacks (a common slip
/// when models copy the final lines of a file).
fn not_found(content: &str, old: &str) -> String {
    let base = format!("Error: String not found in file: '{old}'");
    if !old.ends_with('\n') || content.ends_with('\n') {
        return base;
    }
    let trimmed = old.trim_end_matches(['\n', '\r']);
    if trimmed.is_empty() || !content.ends_with(trimmed) {
        return base;
    }
    match content.matches(trimmed).count() {
        1 => format!(
            "{base}\nHint: the file does not end with a newline, but old_string does. Without \
             its trailing newline, old_string matches exactly once: retry without it."
        ),
        n => format!(
            "{base}\nHint: the file does not end with a newline, but old_string does. Without \
             its trailing newline, old_string appears {n} times: retry without it and add \
             surrounding context, or set replace_all=True."
        ),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::EditFile;
    use crate::backend::Backend;
    use crate::tools::tests::{ctx_with, err_text, ok_text};

    fn edit(old: &str, new: &str, replace_all: bool) -> serde_json::Value {
        json!({"file_path": "/a.txt", "old_string": old, "new_string": new, "replace_all": replace_all})
    }

    #[tokio::test]
    async fn replaces_a_unique_string() {
        let (ctx, backend) = ctx_with(&[("/a.txt", "alpha\nbeta\ngamma\n")]);
        let before = backend.read("/a.txt").await.unwrap();
        assert_eq!(
            ok_text(&EditFile, &ctx, edit("beta", "beta (edited)", false)).await,
            "Successfully replaced 1 instance(s) of the string in '/a.txt'"
        );
        let after = backend.read("/a.txt").await.unwrap();
        assert_eq!(after.content, "alpha\nbeta (edited)\ngamma\n");
        assert_eq!(after.created_at, before.created_at);
    }

    #[tokio::test]
    async fn ambiguous_strings_need_replace_all() {
        let (ctx, backend) = ctx_with(&[("/a.txt", "foo bar foo foo")]);
        assert_eq!(
            err_text(&EditFile, &ctx, edit("foo", "x", false)).await,
            "Error: String 'foo' appears 3 times in file. Use replace_all=True to replace all instances, or provide a more specific string with surrounding context."
        );
        assert_eq!(
            backend.read("/a.txt").await.unwrap().content,
            "foo bar foo foo"
        );
        assert_eq!(
            ok_text(&EditFile, &ctx, edit("foo", "x", true)).await,
            "Successfully replaced 3 instance(s) of the string in '/a.txt'"
        );
        assert_eq!(backend.read("/a.txt").await.unwrap().content, "x bar x x");
    }

    #[tokio::test]
    async fn reports_missing_strings_files_and_empty_old_string() {
        let (ctx, _) = ctx_with(&[("/a.txt", "hello")]);
        assert_eq!(
            err_text(&EditFile, &ctx, edit("nope", "x", false)).await,
            "Error: String not found in file: 'nope'"
        );
        assert_eq!(
            err_text(&EditFile, &ctx, edit("", "x", false)).await,
            "Error: old_string cannot be empty. Provide the exact text to replace."
        );
        let args = json!({"file_path": "/missing.txt", "old_string": "a", "new_string": "b"});
        assert_eq!(
            err_text(&EditFile, &ctx, args).await,
            "Error: File '/missing.txt' not found"
        );
        let args = json!({"file_path": "~/a.txt", "old_string": "a", "new_string": "b"});
        assert_eq!(
            err_text(&EditFile, &ctx, args).await,
            "Error: Path traversal not allowed: ~/a.txt"
        );
    }

    #[tokio::test]
    async fn hints_at_a_trailing_newline_the_file_lacks() {
        let (ctx, _) = ctx_with(&[("/a.txt", "one\nlast")]);
        let text = err_text(&EditFile, &ctx, edit("last\n", "x", false)).await;
        assert!(
            text.starts_with("Error: String not found in file: 'last\n'\nHint:"),
            "{text}"
        );
        assert!(text.contains("matches exactly once"), "{text}");

        let (ctx, _) = ctx_with(&[("/a.txt", "last\nlast")]);
        let text = err_text(&EditFile, &ctx, edit("last\n\n", "x", false)).await;
        assert!(text.contains("appears 2 times"), "{text}");

        let (ctx, _) = ctx_with(&[("/a.txt", "one\nlast\n")]);
        assert_eq!(
            err_text(&EditFile, &ctx, edit("nope\n", "x", false)).await,
            "Error: String not found in file: 'nope\n'"
        );
    }
}
