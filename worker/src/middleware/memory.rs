//! Memory: AGENTS.md files from the spec's `memory:` paths, in the
//! Memory slot of the system prompt.
//!
//! As in deepagents, the files are read through the backend once per
//! thread and their contents kept in the thread's custom state (under
//! [`STATE_KEY`]), so the prompt stays byte-identical from step to step and
//! provider prompt caches hit. An edit to a memory file shows in the next
//! thread, not the current one.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::backend::BackendError;
use crate::context::StepContext;
use crate::error::StepError;
use crate::middleware::Middleware;
use crate::prompt::{PromptSection, Slot};

/// Where the loaded contents live in the thread's custom state.
pub const STATE_KEY: &str = "_memory";

const GUIDELINES: &str = include_str!("../prompts/memory.md");

/// Loads and shows the agent's memory files.
pub struct Memory {
    paths: Vec<String>,
}

impl Memory {
    /// Memory from these paths, shown in this order.
    pub fn new(paths: Vec<String>) -> Self {
        Memory { paths }
    }

    /// The loaded contents by path, when this thread has loaded them for
    /// the same paths.
    fn loaded(&self, state: &Map<String, Value>) -> Option<Map<String, Value>> {
        let cached = state.get(STATE_KEY)?;
        let same_paths = cached
            .get("paths")
            .and_then(Value::as_array)
            .is_some_and(|p| {
                p.iter()
                    .map(Value::as_str)
                    .eq(self.paths.iter().map(|s| Some(s.as_str())))
            });
        if !same_paths {
            return None;
        }
        cached.get("contents").and_then(Value::as_object).cloned()
    }

    /// The Memory section for these contents.
    fn render(&self, contents: &Map<String, Value>) -> String {
        let sections: Vec<String> = self
            .paths
            .iter()
            .filter_map(|path| {
                let text = strip_html_comments(contents.get(path)?.as_str()?);
                let text = text.trim_end();
                (!text.is_empty()).then(|| format!("{path}\n\n{text}"))
            })
            .collect();
        let body = if sections.is_empty() {
            "(No memory loaded)".to_owned()
        } else {
            sections.join("\n\n")
        };
        format!("<agent_memory>\n{body}\n\n</agent_memory>\n\n{GUIDELINES}")
    }
}

/// Removes `<!-- ... -->` comments (an unclosed one runs to the end).
fn strip_html_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = match rest[start..].find("-->") {
            Some(end) => &rest[start + end + 3..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

#[async_trait]
impl Middleware for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn prompt(&self, cx: &StepContext) -> Option<PromptSection> {
        let state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
        let contents = self.loaded(&state).unwrap_or_default();
        Some(PromptSection::new(Slot::Memory, self.render(&contents)))
    }

    async fn before_model(&self, cx: &mut StepContext) -> Result<(), StepError> {
        {
            let state = cx.state.lock().unwrap_or_else(|e| e.into_inner());
            if self.loaded(&state).is_some() {
                return Ok(());
            }
        }
        let mut contents = Map::new();
        for path in &self.paths {
            match cx.backend.read(path).await {
                Ok(file) => {
                    contents.insert(path.clone(), Value::String(file.content));
                }
                Err(BackendError::NotFound) => {}
                Err(BackendError::Unavailable(reason)) => {
                    return Err(StepError::Tool {
                        tool: "memory".to_owned(),
                        message: format!("reading {path}: {reason}"),
                    });
                }
                Err(e) => {
                    return Err(StepError::Agent {
                        agent: cx.spec.name.clone(),
                        message: format!("memory: cannot read {path}: {e}"),
                    });
                }
            }
        }
        cx.state.lock().unwrap_or_else(|e| e.into_inner()).insert(
            STATE_KEY.to_owned(),
            json!({"paths": self.paths, "contents": contents}),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_cx;
    use pretty_assertions::assert_eq;

    #[test]
    fn comments_are_stripped() {
        assert_eq!(strip_html_comments("a<!-- x -->b<!-- y"), "ab");
    }

    // deepagents conformance §13.2 item 24.
    #[tokio::test]
    async fn memory_block_format_and_missing_files() {
        let memory = Memory::new(vec!["/memory/AGENTS.md".into(), "/missing.md".into()]);
        let mut cx = test_cx("");
        cx.backend
            .write("/memory/AGENTS.md", "Prefer tea.<!-- private -->\n\n")
            .await
            .unwrap();
        memory.before_model(&mut cx).await.unwrap();
        let text = memory.prompt(&cx).unwrap().text;
        assert!(
            text.starts_with("<agent_memory>\n/memory/AGENTS.md\n\nPrefer tea.\n\n</agent_memory>\n\n<memory_guidelines>"),
            "{text}"
        );

        // Loaded once per thread: a later edit does not change the prompt.
        cx.backend
            .write("/memory/AGENTS.md", "Prefer coffee.")
            .await
            .unwrap();
        memory.before_model(&mut cx).await.unwrap();
        assert_eq!(memory.prompt(&cx).unwrap().text, text);
    }

    #[tokio::test]
    async fn no_files_is_no_memory_loaded() {
        let memory = Memory::new(vec!["/AGENTS.md".into()]);
        let mut cx = test_cx("");
        memory.before_model(&mut cx).await.unwrap();
        let text = memory.prompt(&cx).unwrap().text;
        assert!(
            text.starts_with("<agent_memory>\n(No memory loaded)\n\n</agent_memory>"),
            "{text}"
        );
    }
}
