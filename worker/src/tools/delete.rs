//! `delete`: remove a file, or a directory and everything under it.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{backend_error, file_not_found, validate_path};
use super::{Tool, ToolOutput, ToolResult};
use crate::backend::{BackendError, path};
use crate::context::ToolView;

/// Deletes a file or directory.
pub struct Delete;

/// Arguments of [`Delete`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteArgs {
    /// Absolute path of the file or directory to delete, e.g. `/tmp/draft.md`.
    pub file_path: String,
}

#[async_trait]
impl Tool for Delete {
    const NAME: &'static str = "delete";
    type Args = DeleteArgs;

    fn description(&self) -> String {
        "Delete the file at `file_path` (an absolute path). If the path is a directory, \
         everything under it is deleted too. Deletion cannot be undone, so check the path \
         with `ls` or `glob` first when unsure."
            .to_owned()
    }

    fn mutated_path(&self, args: &DeleteArgs) -> Option<String> {
        path::validate(&args.file_path).ok()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: DeleteArgs) -> ToolResult {
        let path = validate_path(&args.file_path)?;
        match ctx.backend().delete(&path).await {
            Ok(()) => Ok(ToolOutput::Text(format!("Deleted {path}"))),
            Err(BackendError::NotFound) => Err(file_not_found(&path)),
            Err(other) => Err(backend_error(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::Delete;
    use crate::tools::tests::{ctx_with, err_text, ok_text};

    #[tokio::test]
    async fn deletes_files_and_directories_recursively() {
        let (ctx, backend) =
            ctx_with(&[("/a.txt", "a"), ("/dir/b.txt", "b"), ("/dir/c/d.txt", "d")]);
        assert_eq!(
            ok_text(&Delete, &ctx, json!({"file_path": "/a.txt"})).await,
            "Deleted /a.txt"
        );
        assert_eq!(
            ok_text(&Delete, &ctx, json!({"file_path": "dir/"})).await,
            "Deleted /dir"
        );
        assert!(backend.snapshot().is_empty());
        assert_eq!(backend.changes().len(), 3);
    }

    #[tokio::test]
    async fn missing_and_bad_paths_are_errors() {
        let (ctx, _) = ctx_with(&[]);
        assert_eq!(
            err_text(&Delete, &ctx, json!({"file_path": "/missing.txt"})).await,
            "Error: File '/missing.txt' not found"
        );
        assert_eq!(
            err_text(&Delete, &ctx, json!({"file_path": "/a/../../b"})).await,
            "Error: Path traversal not allowed: /a/../../b"
        );
    }
}
