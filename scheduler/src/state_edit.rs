//! Edits of a thread's values that no step makes, as `update_state` and a
//! run's `command.update` give them, and where a run starts from when not
//! from the thread as it is. [`crate::lifecycle`] writes them (see
//! `lifecycle/rewind.rs`); they are data here so a queued run can carry
//! its own until it starts.

use std::collections::BTreeMap;

use deepfleet_fleet::tokens::logged;
use deepfleet_proto::{FileData, LoggedMessage, Message};
use deepfleet_store::{Conversation, ThreadUpdate};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message_ids::message_id;

/// An edit of a thread's values, as `update_state` and `command.update`
/// give it: messages added, or by id replaced or removed (LangGraph's
/// message reducer); files written or deleted; other fields set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateEdit {
    /// The message changes, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<EditedMessage>,
    /// File writes (`None` deletes the path).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, Option<FileData>>,
    /// Custom state fields set (`todos` and any the agent declares).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
}

/// One message change of a [`StateEdit`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditedMessage {
    /// The id it names: the message with it is replaced or removed; a
    /// message whose id matches none is added.
    pub id: Option<String>,
    /// The message (`None` removes the one with `id`).
    pub message: Option<Message>,
}

/// Why an edit cannot apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// A removal names no message of the thread.
    #[error("no message with id '{0}' to remove")]
    UnknownMessage(String),
    /// The messages would change under tool calls a run waits on.
    #[error(
        "the thread's run waits on tool calls: resume it (command.resume) before \
         changing its messages"
    )]
    WaitsOnTools,
}

/// Where a run starts from, when not from the thread as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rewind {
    /// The checkpoint it forks from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// Its `command.update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<StateEdit>,
}

impl StateEdit {
    /// This edit followed by `then`.
    pub fn extend(&mut self, then: StateEdit) {
        self.messages.extend(then.messages);
        self.files.extend(then.files);
        self.set.extend(then.set);
    }

    /// Applies the edit to `update`, whose conversation goes on from
    /// `current` (the thread's, for an update of the thread as it is) or
    /// is the branch it restores.
    pub fn apply(
        &self,
        thread_id: &str,
        current: &[LoggedMessage],
        waits_on_tools: bool,
        update: &mut ThreadUpdate,
    ) -> Result<(), EditError> {
        for (path, file) in &self.files {
            match file {
                Some(file) => update.files.insert(path.clone(), file.clone()),
                None => update.files.remove(path),
            };
        }
        update
            .state
            .extend(self.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        if self.messages.is_empty() {
            return Ok(());
        }
        if waits_on_tools && !update.clear_pending {
            return Err(EditError::WaitsOnTools);
        }
        let (mut kept, branch): (Vec<Option<LoggedMessage>>, bool) = match &update.conversation {
            Conversation::Branch(messages) => (messages.iter().cloned().map(Some).collect(), true),
            Conversation::Append(_) => (current.iter().cloned().map(Some).collect(), false),
        };
        let ids: Vec<String> = (0..kept.len()).map(|i| message_id(thread_id, i)).collect();
        let mut rewritten = branch;
        let mut added = Vec::new();
        for edited in &self.messages {
            let at = edited
                .id
                .as_ref()
                .and_then(|id| ids.iter().position(|known| known == id));
            match (at, &edited.message) {
                (Some(i), message) => {
                    kept[i] = message.clone().map(logged);
                    rewritten = true;
                }
                (None, Some(message)) => added.push(logged(message.clone())),
                (None, None) => {
                    return Err(EditError::UnknownMessage(
                        edited.id.clone().unwrap_or_default(),
                    ));
                }
            }
        }
        update.conversation = if rewritten {
            Conversation::Branch(kept.into_iter().flatten().chain(added).collect())
        } else {
            Conversation::Append(added)
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use deepfleet_store::{Checkpoint, CheckpointSource, Restore, Timeline};

    use super::*;

    fn thread(texts: &[&str]) -> Checkpoint {
        Checkpoint {
            step: 2,
            messages: texts.iter().map(|t| logged(Message::user(*t))).collect(),
            ..Checkpoint::default()
        }
    }

    fn texts(conversation: &Conversation) -> (bool, Vec<String>) {
        let (branch, messages) = match conversation {
            Conversation::Append(m) => (false, m),
            Conversation::Branch(m) => (true, m),
        };
        let texts = messages
            .iter()
            .map(|m| deepfleet_proto::message::joined_text(m.message.content()))
            .collect();
        (branch, texts)
    }

    fn edit(changes: &[(Option<usize>, Option<&str>)]) -> StateEdit {
        StateEdit {
            messages: changes
                .iter()
                .map(|(at, text)| EditedMessage {
                    id: at.map(|i| message_id("t", i)),
                    message: text.map(Message::user),
                })
                .collect(),
            ..StateEdit::default()
        }
    }

    fn applied(edit: &StateEdit, current: &Checkpoint) -> Result<ThreadUpdate, EditError> {
        let mut update = ThreadUpdate::of("t", current);
        edit.apply(
            "t",
            &current.messages,
            current.pending.is_some(),
            &mut update,
        )?;
        Ok(update)
    }

    #[test]
    fn new_messages_append_and_named_ones_rewrite_on_a_branch() {
        let current = thread(&["a", "b"]);
        let Ok(update) = applied(&edit(&[(None, Some("c")), (Some(7), Some("d"))]), &current)
        else {
            panic!("an append applies");
        };
        assert_eq!(
            texts(&update.conversation),
            (false, vec!["c".into(), "d".into()])
        );
        let Ok(update) = applied(&edit(&[(Some(1), Some("B")), (None, Some("c"))]), &current)
        else {
            panic!("a replacement applies");
        };
        assert_eq!(
            texts(&update.conversation),
            (true, vec!["a".into(), "B".into(), "c".into()])
        );
        let Ok(update) = applied(&edit(&[(Some(0), None)]), &current) else {
            panic!("a removal applies");
        };
        assert_eq!(texts(&update.conversation), (true, vec!["b".into()]));
        assert_eq!(
            applied(&edit(&[(Some(5), None)]), &current).err(),
            Some(EditError::UnknownMessage(message_id("t", 5)))
        );
    }

    #[test]
    fn files_and_fields_apply_and_pending_calls_keep_the_messages() {
        let mut current = thread(&["a"]);
        current
            .files
            .insert("/old.md".into(), FileData::text("x", chrono::Utc::now()));
        let mut change = edit(&[]);
        change.files.insert("/old.md".into(), None);
        change.files.insert(
            "/new.md".into(),
            Some(FileData::text("y", chrono::Utc::now())),
        );
        change.set.insert("todos".into(), serde_json::json!([]));
        let Ok(update) = applied(&change, &current) else {
            panic!("files and fields apply");
        };
        assert_eq!(update.files.keys().collect::<Vec<_>>(), ["/new.md"]);
        assert_eq!(update.state["todos"], serde_json::json!([]));

        current.pending = Some(deepfleet_proto::PendingTools {
            calls: Vec::new(),
            children: Vec::new(),
            interrupt: None,
        });
        assert_eq!(
            applied(&edit(&[(None, Some("b"))]), &current).err(),
            Some(EditError::WaitsOnTools)
        );
        assert!(applied(&change, &current).is_ok());
    }

    #[test]
    fn on_a_fork_ids_name_the_restored_messages() {
        let timeline = Timeline {
            step: 4,
            ..Timeline::default()
        };
        let to = Restore {
            parent: Some(1),
            checkpoint: thread(&["a", "b"]),
        };
        let mut update = ThreadUpdate::restoring("t", &timeline, to, CheckpointSource::Fork);
        let current = thread(&["x", "y", "z"]);
        let Ok(()) = edit(&[(Some(1), Some("B"))]).apply("t", &current.messages, true, &mut update)
        else {
            panic!("a fork drops the pending calls, so messages may change");
        };
        assert_eq!(
            texts(&update.conversation),
            (true, vec!["a".into(), "B".into()])
        );
    }
}
