//! The system prompt: sections in a fixed order.
//!
//! DESIGN §7 fixes the order; each middleware contributes the sections it
//! owns, tagged with a [`Slot`], and [`assemble`] sorts them. Nothing in a
//! section depends on the step, so within a thread the prompt is
//! byte-identical from step to step and provider prompt caches hit.

/// Where a section goes, in prompt order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    /// The agent spec's own `system_prompt`.
    Agent,
    /// The harness's base prompt (or a profile's replacement).
    Base,
    /// AGENTS.md memory.
    Memory,
    /// The skills listing.
    Skills,
    /// Filesystem tool guidance.
    Filesystem,
    /// How to run commands, when `execute` is offered.
    Execute,
    /// The `task` tool's guidance and the subagent list.
    Task,
    /// Prompts of other middleware (planning, ...).
    Middleware,
    /// Human-in-the-loop notes.
    HumanInTheLoop,
}

/// One section of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptSection {
    /// Where it goes.
    pub slot: Slot,
    /// Its text.
    pub text: String,
}

impl PromptSection {
    /// A section for `slot`.
    pub fn new(slot: Slot, text: impl Into<String>) -> Self {
        PromptSection {
            slot,
            text: text.into(),
        }
    }
}

/// The harness's base prompt.
pub const BASE_PROMPT: &str = include_str!("prompts/base.md");

/// Joins sections in slot order (stable within a slot), separated by a
/// blank line; empty sections are dropped.
pub fn assemble(sections: impl IntoIterator<Item = PromptSection>) -> String {
    let mut sections: Vec<PromptSection> = sections
        .into_iter()
        .filter(|s| !s.text.trim().is_empty())
        .collect();
    sections.sort_by_key(|s| s.slot);
    sections
        .iter()
        .map(|s| s.text.trim_end())
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn sections_follow_slot_order() {
        let prompt = assemble([
            PromptSection::new(Slot::Task, "task"),
            PromptSection::new(Slot::Agent, "agent\n"),
            PromptSection::new(Slot::Middleware, "mw1"),
            PromptSection::new(Slot::Base, "  "),
            PromptSection::new(Slot::Middleware, "mw2"),
            PromptSection::new(Slot::Filesystem, "fs"),
        ]);
        assert_eq!(prompt, "agent\n\nfs\n\ntask\n\nmw1\n\nmw2");
    }
}
