//! Which tools a role's `interrupt_on` holds for a reviewer.
//!
//! Gates hold tools, not names: [`Gates`] resolves each `interrupt_on`
//! key to the tools it names and each call to the tool it runs, so an MCP
//! tool is held whether the model calls it by its offered name or by its
//! `SERVER__TOOL` alias, whichever spelling the key used. The agent builds
//! them (it knows its tools); the step decides by them.

use std::collections::BTreeMap;

use deepfleet_proto::{DecisionType, InterruptOn};

use crate::tool_id::ToolId;
use crate::tool_names::ToolNames;

/// A role's `interrupt_on`, resolved to the tools its keys name, and the
/// names the role's calls may use: the data the step's human-in-the-loop
/// decisions are made by (`crate::step::hitl`), built where the tools are
/// known (`Agent::gates`).
pub struct Gates<'a> {
    names: ToolNames<'a>,
    by_tool: BTreeMap<ToolId, &'a InterruptOn>,
}

impl<'a> Gates<'a> {
    /// `interrupt_on` over `names`. A tool several keys name (`read_text`
    /// and `fs__read_text`) is gated when any of them gates it, as the
    /// first such key (in key order) says.
    pub fn new(interrupt_on: &'a BTreeMap<String, InterruptOn>, names: ToolNames<'a>) -> Self {
        let mut by_tool: BTreeMap<ToolId, &'a InterruptOn> = BTreeMap::new();
        for (key, gate) in interrupt_on {
            for tool in names.named_by(key) {
                let held = by_tool.entry(tool).or_insert(gate);
                if matches!(held, InterruptOn::Enabled(false)) {
                    *held = gate;
                }
            }
        }
        Gates { names, by_tool }
    }

    /// The decisions a call named `name` allows, or `None` when the tool
    /// it runs is not gated (or it runs none).
    pub fn allowed(&self, name: &str) -> Option<(&'a InterruptOn, Vec<DecisionType>)> {
        let gate = *self.by_tool.get(&self.names.resolve(name)?)?;
        Some((gate, gate.allowed()?))
    }
}
