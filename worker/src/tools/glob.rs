//! `glob`: find files by name pattern.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;

use super::format::{backend_error, py_list, truncate_list, validate_path};
use super::{Tool, ToolOutput, ToolResult};
use crate::context::ToolView;

/// Finds files matching a glob pattern.
pub struct Glob;

/// Arguments of [`Glob`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// Glob pattern, e.g. `*.py` (any depth), `src/**/*.rs` or `/docs/*.md`.
    pub pattern: String,
    /// Absolute directory to search under; the whole filesystem when omitted.
    #[serde(default)]
    pub path: Option<String>,
}

#[async_trait]
impl Tool for Glob {
    const NAME: &'static str = "glob";
    type Args = GlobArgs;

    fn description(&self) -> String {
        "Find files whose paths match a glob `pattern`, optionally under the directory `path`. \
         A pattern without `/` (like `*.py`) matches file names at any depth; a pattern with \
         `/` (like `src/*.py` or `/src/**/*.py`) is matched from the search root. `*`, `?` and \
         `**` skip names starting with `.`; spell the dot out (`.env`, `.github/**`) to match \
         them. Returns absolute paths, most recently modified first."
            .to_owned()
    }

    async fn call(&self, ctx: &ToolView<'_>, args: GlobArgs) -> ToolResult {
        let path = args.path.as_deref().map(validate_path).transpose()?;
        let found = ctx
            .backend()
            .glob(&args.pattern, path.as_deref())
            .await
            .map_err(backend_error)?;
        if found.is_empty() {
            return Ok(ToolOutput::Text("No files found".to_owned()));
        }
        let paths = found.into_iter().map(|info| info.path).collect();
        Ok(ToolOutput::Text(py_list(&truncate_list(paths))))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::Glob;
    use crate::context::StepContext;
    use crate::tools::DynTool;
    use crate::tools::tests::{ctx_with, err_text, ok_text};

    async fn glob(ctx: &StepContext, args: serde_json::Value) -> String {
        ok_text(&Glob, ctx, args).await
    }

    #[tokio::test]
    async fn follows_deepagents_pattern_rules() {
        let (ctx, backend) = ctx_with(&[]);
        // Written one after another so the newest-first order is known.
        for path in [
            "/a.py",
            "/src/b.py",
            "/src/deep/c.py",
            "/.venv/d.py",
            "/.env",
            "/README.md",
        ] {
            crate::backend::Backend::write(&backend, path, "")
                .await
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.py"})).await,
            "['/src/deep/c.py', '/src/b.py', '/a.py']"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "src/*.py"})).await,
            "['/src/b.py']"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "/src/**/*.py"})).await,
            "['/src/deep/c.py', '/src/b.py']"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.py", "path": "/src/deep"})).await,
            "['/src/deep/c.py']"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "*", "path": null}))
                .await
                .contains(".env"),
            false
        );
        assert_eq!(glob(&ctx, json!({"pattern": ".env"})).await, "['/.env']");
        assert_eq!(
            glob(&ctx, json!({"pattern": ".venv/*.py"})).await,
            "['/.venv/d.py']"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.rs"})).await,
            "No files found"
        );
    }

    #[tokio::test]
    async fn rejects_parent_components_and_bad_paths() {
        let (ctx, _) = ctx_with(&[("/a.py", "")]);
        assert_eq!(
            err_text(&Glob, &ctx, json!({"pattern": "../*.py"})).await,
            "Error: glob pattern must not contain '..': ../*.py"
        );
        assert_eq!(
            err_text(&Glob, &ctx, json!({"pattern": "*", "path": "~/x"})).await,
            "Error: Path traversal not allowed: ~/x"
        );
    }

    #[test]
    fn path_is_optional_and_nullable_in_the_schema() {
        let spec = Glob.spec();
        assert_eq!(spec.parameters["required"], json!(["pattern"]));
        assert_eq!(
            spec.parameters["properties"]["path"]["type"],
            json!(["string", "null"])
        );
    }
}
