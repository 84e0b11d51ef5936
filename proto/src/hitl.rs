//! Human in the loop: which tool calls wait for a reviewer, what the
//! reviewer is shown, and what they may decide.
//!
//! The shapes follow deepagents' batched mode: one interrupt per model
//! turn whose value holds an `action_requests` entry per gated call and a
//! `review_configs` entry saying which decisions each accepts; a resume
//! answers with one decision per action request, in order.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A decision a reviewer can make on a gated tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionType {
    /// Run the call as the model wrote it.
    Approve,
    /// Run a replacement call instead.
    Edit,
    /// Do not run it; the model reads an error with the reviewer's reason.
    Reject,
    /// Do not run it; the model reads the reviewer's text as its result.
    Respond,
}

impl DecisionType {
    /// All four, in the order deepagents lists them.
    pub const ALL: [DecisionType; 4] = [
        DecisionType::Approve,
        DecisionType::Edit,
        DecisionType::Reject,
        DecisionType::Respond,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionType::Approve => "approve",
            DecisionType::Edit => "edit",
            DecisionType::Reject => "reject",
            DecisionType::Respond => "respond",
        }
    }
}

impl fmt::Display for DecisionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one tool is gated in a spec's `interrupt_on`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum InterruptOn {
    /// `true`: every decision allowed; `false`: not gated.
    Enabled(bool),
    /// Gated with a chosen set of decisions.
    Config(InterruptConfig),
}

/// The detailed form of an `interrupt_on` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InterruptConfig {
    /// What the reviewer may decide; must not be empty.
    pub allowed_decisions: Vec<DecisionType>,
    /// Shown to the reviewer instead of the default description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl InterruptOn {
    /// The decisions allowed, or `None` when the tool is not gated.
    pub fn allowed(&self) -> Option<Vec<DecisionType>> {
        match self {
            InterruptOn::Enabled(true) => Some(DecisionType::ALL.to_vec()),
            InterruptOn::Enabled(false) => None,
            InterruptOn::Config(c) => Some(c.allowed_decisions.clone()),
        }
    }

    /// The spec's own description, if it set one.
    pub fn description(&self) -> Option<&str> {
        match self {
            InterruptOn::Config(c) => c.description.as_deref(),
            InterruptOn::Enabled(_) => None,
        }
    }
}

/// One gated call, as the reviewer sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActionRequest {
    /// The tool.
    pub name: String,
    /// Its arguments, parsed (the raw string when it is not JSON).
    pub args: Value,
    /// What the reviewer is asked to decide.
    pub description: String,
    /// The model's call id, so the decision lands on the right call.
    pub tool_call_id: String,
}

/// Which decisions one action request accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewConfig {
    /// The tool.
    pub action_name: String,
    /// The decisions allowed.
    pub allowed_decisions: Vec<DecisionType>,
}

/// A parked model turn waiting for a reviewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interrupt {
    /// One per gated call, in the model's order.
    pub action_requests: Vec<ActionRequest>,
    /// One per action request, same order.
    pub review_configs: Vec<ReviewConfig>,
    /// The reviewer's answers, once given; the next step applies them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<Vec<Decision>>,
}

/// A reviewer's answer to one action request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Run the call as written.
    Approve,
    /// Run `edited_action` instead.
    Edit {
        /// The replacement call.
        edited_action: EditedAction,
    },
    /// Skip the call; the model reads an error with `message` as reason.
    Reject {
        /// Why; a default text when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Skip the call; the model reads `message` as its successful result.
    Respond {
        /// The result the model reads.
        message: String,
    },
}

impl Decision {
    /// The decision's type.
    pub fn kind(&self) -> DecisionType {
        match self {
            Decision::Approve => DecisionType::Approve,
            Decision::Edit { .. } => DecisionType::Edit,
            Decision::Reject { .. } => DecisionType::Reject,
            Decision::Respond { .. } => DecisionType::Respond,
        }
    }
}

/// The call a reviewer wrote in place of the model's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditedAction {
    /// The tool to run.
    pub name: String,
    /// Its arguments.
    pub args: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn decisions_read_the_deepagents_shapes() {
        let decisions: Vec<Decision> = serde_json::from_value(json!([
            {"type": "approve"},
            {"type": "edit", "edited_action": {"name": "write_file", "args": {"file_path": "/a2.txt"}}},
            {"type": "reject", "message": "no b"},
            {"type": "reject"},
            {"type": "respond", "message": "done already"}
        ]))
        .unwrap();
        let kinds: Vec<&str> = decisions.iter().map(|d| d.kind().as_str()).collect();
        assert_eq!(kinds, ["approve", "edit", "reject", "reject", "respond"]);
        assert!(serde_json::from_value::<Decision>(json!({"type": "maybe"})).is_err());
    }

    #[test]
    fn interrupt_on_accepts_bool_or_config() {
        let on: InterruptOn = serde_json::from_value(json!(true)).unwrap();
        assert_eq!(on.allowed(), Some(DecisionType::ALL.to_vec()));
        let off: InterruptOn = serde_json::from_value(json!(false)).unwrap();
        assert_eq!(off.allowed(), None);
        let some: InterruptOn =
            serde_json::from_value(json!({"allowed_decisions": ["approve", "reject"]})).unwrap();
        assert_eq!(
            some.allowed(),
            Some(vec![DecisionType::Approve, DecisionType::Reject])
        );
    }
}
