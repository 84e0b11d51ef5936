//! `write_file`: create or overwrite a text file.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{backend_error, validate_path};
use super::{Tool, ToolOutput, ToolResult};
use crate::backend::path;
use crate::context::ToolView;

/// Writes a whole file.
pub struct WriteFile;

/// Arguments of [`WriteFile`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// Absolute path of the file to write, e.g. `/notes.md`.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

#[async_trait]
impl Tool for WriteFile {
    const NAME: &'static str = "write_file";
    type Args = WriteFileArgs;

    fn description(&self) -> String {
        "Write `content` to the file at `file_path` (an absolute path such as `/notes.md`), \
         creating it, or replacing everything in it if it already exists. Parent directories \
         need not exist. To change part of an existing file, prefer `edit_file`."
            .to_owned()
    }

    fn mutated_path(&self, args: &WriteFileArgs) -> Option<String> {
        path::validate(&args.file_path).ok()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: WriteFileArgs) -> ToolResult {
        let path = validate_path(&args.file_path)?;
        ctx.backend()
            .write(&path, &args.content)
            .await
            .map_err(backend_error)?;
        Ok(ToolOutput::Text(format!("Updated file {path}")))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::WriteFile;
    use crate::backend::Backend;
    use crate::tools::DynTool;
    use crate::tools::tests::{ctx_with, err_text, ok_text};

    #[tokio::test]
    async fn creates_then_overwrites() {
        let (ctx, backend) = ctx_with(&[]);
        let args = json!({"file_path": "/notes.md", "content": "# Notes\n"});
        assert_eq!(
            ok_text(&WriteFile, &ctx, args).await,
            "Updated file /notes.md"
        );
        let args = json!({"file_path": "notes.md", "content": "second"});
        assert_eq!(
            ok_text(&WriteFile, &ctx, args).await,
            "Updated file /notes.md"
        );
        assert_eq!(backend.read("/notes.md").await.unwrap().content, "second");
        assert_eq!(backend.changes().len(), 1);
    }

    #[tokio::test]
    async fn bad_paths_leave_state_unchanged() {
        let (ctx, backend) = ctx_with(&[]);
        for (path, expected) in [
            ("../etc/passwd", "Error: Path traversal not allowed: ../etc/passwd".to_owned()),
            ("~/secret.txt", "Error: Path traversal not allowed: ~/secret.txt".to_owned()),
            (
                "C:\\x",
                "Error: Windows absolute paths are not supported: C:\\x. Please use virtual paths starting with / (e.g., /workspace/file.txt)".to_owned(),
            ),
        ] {
            let args = json!({"file_path": path, "content": "x"});
            assert_eq!(err_text(&WriteFile, &ctx, args).await, expected);
        }
        assert!(backend.snapshot().is_empty());
    }

    #[test]
    fn mutated_path_is_the_validated_path() {
        let raw = json!({"file_path": "a//b.txt", "content": ""}).to_string();
        assert_eq!(
            DynTool::mutated_path(&WriteFile, &raw),
            Some("/a/b.txt".to_owned())
        );
        let raw = json!({"file_path": "../x", "content": ""}).to_string();
        assert_eq!(DynTool::mutated_path(&WriteFile, &raw), None);
    }
}
