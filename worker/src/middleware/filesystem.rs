//! The filesystem middleware: the file tools and their guidance.

use std::sync::Arc;

use async_trait::async_trait;
use deepfleet_proto::ToolCall;

use crate::compress::offload::offload_tool_result;
use crate::events::{CompactionKind, Event};

use crate::context::StepContext;
use crate::context::ToolView;
use crate::middleware::{Middleware, ToolNext};
use crate::prompt::{PromptSection, Slot};
use crate::tools::{DynTool, ToolResult};
use crate::tools::{
    delete::Delete, edit_file::EditFile, glob::Glob, grep::Grep, ls::Ls, read_file::ReadFile,
    write_file::WriteFile,
};

const GUIDANCE: &str = include_str!("../prompts/filesystem.md");

/// Offers `ls`, `read_file`, `write_file`, `edit_file`, `delete`, `glob`
/// and `grep`, in that order (deepagents' order).
pub struct Filesystem {
    with_delete: bool,
}

impl Filesystem {
    /// The file tools; `delete` only when the backend supports it.
    pub fn new(with_delete: bool) -> Self {
        Filesystem { with_delete }
    }
}

#[async_trait]
impl Middleware for Filesystem {
    fn name(&self) -> &'static str {
        "filesystem"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        let mut tools: Vec<Arc<dyn DynTool>> = vec![
            Arc::new(Ls),
            Arc::new(ReadFile),
            Arc::new(WriteFile),
            Arc::new(EditFile),
        ];
        if self.with_delete {
            tools.push(Arc::new(Delete));
        }
        tools.push(Arc::new(Glob));
        tools.push(Arc::new(Grep));
        tools
    }

    fn prompt(&self, _cx: &StepContext) -> Option<PromptSection> {
        Some(PromptSection::new(Slot::Filesystem, GUIDANCE))
    }

    /// Offloads a large result to `/large_tool_results/` and answers with
    /// a reference and a preview (file tools are exempt: they cap their own
    /// output).
    async fn wrap_tool(
        &self,
        call: &ToolCall,
        ctx: &ToolView<'_>,
        next: ToolNext<'_>,
    ) -> ToolResult {
        let result = next.run(call, ctx).await;
        let Ok(output) = &result else {
            return result;
        };
        match offload_tool_result(ctx.backend(), &call.name, &call.id, output).await {
            Some(done) => {
                ctx.emit(Event::Compaction {
                    kind: CompactionKind::Offload,
                    tokens_before: done.tokens_before,
                    tokens_after: done.tokens_after,
                });
                Ok(done.output())
            }
            None => result,
        }
    }
}
