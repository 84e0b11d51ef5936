//! The filesystem middleware: the file tools and their guidance.

use std::sync::Arc;

use crate::middleware::{Middleware, StepCx};
use crate::prompt::{PromptSection, Slot};
use crate::tools::DynTool;
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

    fn prompt(&self, _cx: &StepCx) -> Option<PromptSection> {
        Some(PromptSection::new(Slot::Filesystem, GUIDANCE))
    }
}
