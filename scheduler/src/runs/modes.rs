//! The stream modes a follower asked for.

use deepfleet_proto::api::StreamMode;

use super::error::RunsError;

/// The stream modes a request asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Modes {
    /// Full state after each step.
    pub values: bool,
    /// Each node's new messages.
    pub updates: bool,
    /// `messages/metadata` + `messages/complete` per new message.
    pub messages: bool,
    /// `messages` events of `[message, metadata]`.
    pub messages_tuple: bool,
    /// Tool-emitted custom data (none is produced yet).
    pub custom: bool,
    /// Each step's tasks (graph nodes), started and finished.
    pub tasks: bool,
    /// The checkpoint each step made.
    pub checkpoints: bool,
    /// Tasks and checkpoints, wrapped with their kind, step and time.
    pub debug: bool,
    /// Each step's nodes, model answers and tool results as LangChain
    /// callback events.
    pub events: bool,
    /// Subagents' events too, namespaced `mode|task:<tool_call_id>`
    /// (`stream_subgraphs`).
    pub subgraphs: bool,
}

impl Modes {
    /// Parses `stream_mode` (default `values`).
    pub fn parse(value: Option<&StreamMode>) -> Result<Modes, RunsError> {
        let names = value.map_or_else(|| vec!["values"], StreamMode::names);
        let mut modes = Modes::default();
        for name in names {
            match name {
                "values" => modes.values = true,
                "updates" => modes.updates = true,
                "messages" => modes.messages = true,
                "messages-tuple" => modes.messages_tuple = true,
                "custom" => modes.custom = true,
                "tasks" => modes.tasks = true,
                "checkpoints" => modes.checkpoints = true,
                "debug" => modes.debug = true,
                "events" => modes.events = true,
                other => {
                    return Err(RunsError::invalid(format!("unknown stream_mode '{other}'")));
                }
            }
        }
        Ok(modes)
    }

    /// Whether a step's tasks, checkpoint or callback events are asked
    /// for.
    pub fn wants_trace(&self) -> bool {
        self.tasks || self.checkpoints || self.debug || self.events
    }

    /// Every mode either asks for.
    pub fn union(self, other: Modes) -> Modes {
        Modes {
            values: self.values || other.values,
            updates: self.updates || other.updates,
            messages: self.messages || other.messages,
            messages_tuple: self.messages_tuple || other.messages_tuple,
            custom: self.custom || other.custom,
            tasks: self.tasks || other.tasks,
            checkpoints: self.checkpoints || other.checkpoints,
            debug: self.debug || other.debug,
            events: self.events || other.events,
            subgraphs: self.subgraphs || other.subgraphs,
        }
    }

    /// Whether token streaming is asked for.
    pub fn wants_tokens(&self) -> bool {
        self.messages || self.messages_tuple
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_default_to_values_and_reject_unknown() {
        assert_eq!(
            Modes::parse(None).unwrap(),
            Modes {
                values: true,
                ..Modes::default()
            }
        );
        let many = StreamMode::Many(vec!["updates".into(), "messages-tuple".into()]);
        let m = Modes::parse(Some(&many)).unwrap();
        assert!(m.updates && m.messages_tuple && !m.values);
        assert!(Modes::parse(Some(&StreamMode::One("nope".into()))).is_err());
    }
}
