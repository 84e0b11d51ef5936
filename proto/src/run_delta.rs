//! Token deltas of a run's model calls, for `messages` streaming.
//!
//! While a model call streams, the worker coalesces its deltas and appends
//! a [`RunDelta`] every few tens of milliseconds to a stream of their own
//! (`…:dl:{run}`), apart from the run's commit events: short-lived and
//! capped, so a chatty model never grows what the checkpoint path reads.
//! Partial tokens are a courtesy to live followers; the committed message
//! stays the record.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Record kind (store records) of [`Followed`] marks, by run id.
pub use crate::keys::records::FOLLOWED;

/// Someone streams the run: workers stream its model calls and publish the
/// deltas while the mark is fresh. A follower renews it every few seconds
/// and removes it when it leaves, so unfollowed runs pay one record read
/// per step and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Followed {
    /// Until when the mark holds without a renewal.
    pub until: DateTime<Utc>,
}

impl Followed {
    /// Whether the mark still holds at `now`.
    pub fn holds(&self, now: DateTime<Utc>) -> bool {
        now < self.until
    }
}

/// Why the model call that produced a delta was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeltaSource {
    /// The agent's own turn: the text becomes the step's AI message.
    #[default]
    Agent,
    /// A context-compression summary (tagged `lc_source: summarization`).
    Summarization,
}

/// More argument text of one tool call, as it streamed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallChunk {
    /// Position of the call in the turn, from 0.
    pub index: usize,
    /// The call id, on the call's first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool name, on the call's first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Argument text to append (JSON, possibly partial).
    #[serde(default)]
    pub arguments: String,
}

/// The deltas of one model call that arrived within one flush window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunDelta {
    /// The thread step the call belongs to: the commit event of this step
    /// (`RunEvent::step`) follows all its deltas.
    pub step: u64,
    /// The index in the thread's log the step's AI message will have, so
    /// partial chunks carry the id of the message they become.
    pub index: u64,
    /// Why the call was made.
    #[serde(default)]
    pub source: DeltaSource,
    /// Text, in order.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Tool-call chunks, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallChunk>,
}

impl RunDelta {
    /// Whether the delta carries nothing.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.tool_calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn wire_shape_omits_what_is_empty() {
        let delta = RunDelta {
            step: 3,
            index: 7,
            source: DeltaSource::Summarization,
            text: "Sum".into(),
            tool_calls: vec![],
        };
        let value = serde_json::to_value(&delta).unwrap();
        assert_eq!(
            value,
            json!({"step": 3, "index": 7, "source": "summarization", "text": "Sum"})
        );
        assert_eq!(serde_json::from_value::<RunDelta>(value).unwrap(), delta);
        assert!(RunDelta::default().is_empty());
    }
}
