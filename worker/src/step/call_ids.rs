//! Tool-call ids the harness can pair results with. Results, subagent
//! fan-in and reviewers' decisions all find their call by id, so a model
//! turn whose calls share an id, or come without one, would leave a call
//! unanswered (and a parent waiting forever on a subagent result that
//! lands on its twin). Every model turn passes through here before the
//! harness reads it, whatever the provider: the first call to use an id
//! keeps it, every later duplicate (of the thread, not only of the turn)
//! and every empty id gets `df_{step}_{index}`, a function of the thread
//! step and the call's position, so a redelivered step names its calls as
//! the first delivery did.

use std::collections::HashSet;

use deepfleet_proto::{LoggedMessage, Message, ToolCall};

/// Gives every call of `calls` (the model turn of thread step `step`) an
/// id no other call of the thread has; `earlier` are the thread's messages
/// before the turn. Returns how many calls were renamed.
pub fn make_unique<'a>(
    calls: &mut [ToolCall],
    earlier: impl IntoIterator<Item = &'a LoggedMessage>,
    step: u64,
) -> usize {
    let taken: HashSet<String> = earlier
        .into_iter()
        .filter_map(|m| match &m.message {
            Message::Assistant(turn) => Some(turn.tool_calls.iter().map(|c| c.id.clone())),
            _ => None,
        })
        .flatten()
        .collect();
    // A fresh id avoids the model's own ids of this turn too, so a call
    // keeps its id even when a fresh one could have been named like it.
    let mut avoid: HashSet<String> = taken.clone();
    avoid.extend(calls.iter().map(|c| c.id.clone()));
    let mut kept = HashSet::new();
    let mut renamed = 0;
    for (index, call) in calls.iter_mut().enumerate() {
        if !call.id.is_empty() && !taken.contains(&call.id) && kept.insert(call.id.clone()) {
            continue;
        }
        call.id = fresh(&avoid, step, index);
        avoid.insert(call.id.clone());
        renamed += 1;
    }
    renamed
}

/// `df_{step}_{index}`, or with a counter after it when the model itself
/// used that id.
fn fresh(avoid: &HashSet<String>, step: u64, index: usize) -> String {
    let base = format!("df_{step}_{index}");
    if !avoid.contains(&base) {
        return base;
    }
    (1u64..)
        .map(|n| format!("{base}_{n}"))
        .find(|id| !avoid.contains(id))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_fleet::tokens::logged;
    use deepfleet_proto::AssistantMessage;
    use pretty_assertions::assert_eq;

    fn calls(ids: &[&str]) -> Vec<ToolCall> {
        ids.iter()
            .map(|id| ToolCall {
                id: (*id).to_owned(),
                name: "ls".to_owned(),
                arguments: "{}".to_owned(),
            })
            .collect()
    }

    fn ids(calls: &[ToolCall]) -> Vec<&str> {
        calls.iter().map(|c| c.id.as_str()).collect()
    }

    fn turn(ids: &[&str]) -> LoggedMessage {
        logged(Message::Assistant(AssistantMessage {
            tool_calls: calls(ids),
            ..AssistantMessage::default()
        }))
    }

    #[test]
    fn distinct_ids_stay_as_the_model_gave_them() {
        let mut turn = calls(&["a", "b", "c"]);
        assert_eq!(make_unique(&mut turn, [], 4), 0);
        assert_eq!(ids(&turn), ["a", "b", "c"]);
    }

    #[test]
    fn duplicates_keep_the_first_and_rename_the_rest() {
        let mut turn = calls(&["dup", "dup", "x", "dup"]);
        assert_eq!(make_unique(&mut turn, [], 3), 2);
        assert_eq!(ids(&turn), ["dup", "df_3_1", "x", "df_3_3"]);
    }

    #[test]
    fn empty_ids_are_named_by_step_and_position() {
        let mut turn = calls(&["", "", "a"]);
        assert_eq!(make_unique(&mut turn, [], 7), 2);
        assert_eq!(ids(&turn), ["df_7_0", "df_7_1", "a"]);
    }

    #[test]
    fn ids_of_earlier_turns_are_taken_too() {
        let history = [turn(&["call_0", "call_1"])];
        let mut again = calls(&["call_0", "call_2"]);
        assert_eq!(make_unique(&mut again, &history, 2), 1);
        assert_eq!(ids(&again), ["df_2_0", "call_2"]);
    }

    #[test]
    fn a_fresh_id_the_model_already_used_gets_a_counter() {
        let mut turn = calls(&["df_5_1", "df_5_1", "df_5_1_1"]);
        make_unique(&mut turn, [], 5);
        assert_eq!(ids(&turn), ["df_5_1", "df_5_1_2", "df_5_1_1"]);
        let unique: HashSet<&str> = ids(&turn).into_iter().collect();
        assert_eq!(unique.len(), 3);
    }

    #[test]
    fn a_replayed_turn_gets_the_same_ids() {
        let history = [turn(&["a"])];
        let mut first = calls(&["a", "", "b", "b"]);
        let mut again = first.clone();
        make_unique(&mut first, &history, 9);
        make_unique(&mut again, &history, 9);
        assert_eq!(first, again);
    }
}
