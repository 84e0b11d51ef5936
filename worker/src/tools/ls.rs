//! `ls`: the entries directly under a directory.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{backend_error, py_list, truncate_list, validate_path};
use super::{Tool, ToolOutput, ToolResult};
use crate::context::ToolView;

/// Lists a directory of the agent's filesystem.
pub struct Ls;

/// Arguments of [`Ls`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LsArgs {
    /// Absolute path of the directory to list, e.g. `/` or `/src`.
    pub path: String,
}

#[async_trait]
impl Tool for Ls {
    const NAME: &'static str = "ls";
    type Args = LsArgs;

    fn description(&self) -> String {
        "List the files and directories directly inside a directory. `path` is an absolute \
         path such as `/` or `/src`. Returns the absolute paths, sorted; directories end \
         with `/`. Use it to explore the filesystem before reading or editing files."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: LsArgs) -> ToolResult {
        let path = validate_path(&args.path)?;
        let entries = ctx.backend().ls(&path).await.map_err(backend_error)?;
        if entries.is_empty() {
            return Ok(ToolOutput::Text("No files found".to_owned()));
        }
        let paths = entries.into_iter().map(|entry| entry.path).collect();
        Ok(ToolOutput::Text(py_list(&truncate_list(paths))))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::Ls;
    use crate::tools::format::TRUNCATION_GUIDANCE;
    use crate::tools::tests::{ctx_with, err_text, ok_text};

    #[tokio::test]
    async fn lists_files_and_directories_as_a_python_list() {
        let (ctx, _) = ctx_with(&[("/notes.md", "n"), ("/memory/AGENTS.md", "m")]);
        assert_eq!(
            ok_text(&Ls, &ctx, json!({"path": "/"})).await,
            "['/memory/', '/notes.md']"
        );
        assert_eq!(
            ok_text(&Ls, &ctx, json!({"path": "memory"})).await,
            "['/memory/AGENTS.md']"
        );
        assert_eq!(
            ok_text(&Ls, &ctx, json!({"path": "/empty"})).await,
            "No files found"
        );
    }

    #[tokio::test]
    async fn rejects_bad_paths() {
        let (ctx, _) = ctx_with(&[]);
        assert_eq!(
            err_text(&Ls, &ctx, json!({"path": "../etc"})).await,
            "Error: Path traversal not allowed: ../etc"
        );
    }

    #[tokio::test]
    async fn long_listings_end_with_the_truncation_marker() {
        let names: Vec<String> = (0..10)
            .map(|i| format!("/{i}{}", "x".repeat(9_998)))
            .collect();
        let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
        let (ctx, _) = ctx_with(&files);
        let text = ok_text(&Ls, &ctx, json!({"path": "/"})).await;
        assert!(
            text.ends_with(&format!(", '{TRUNCATION_GUIDANCE}']")),
            "{}",
            &text[text.len() - 120..]
        );
        assert_eq!(text.matches("xxx',").count(), 8);
    }
}
