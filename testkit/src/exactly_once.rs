//! What a run's thread shows when a step was committed twice: the one
//! check the crash and chaos tests both make of every run they audit.

use std::collections::HashSet;

use deepfleet_proto::{Message, RunRecord};
use deepfleet_store::Checkpoint;

/// Every sign that `record`'s steps were committed more than once in
/// `thread`, each said with the run's id; empty when each step left one
/// assistant message, the thread stands at the run's step count, and each
/// tool call has exactly one result.
pub fn repeats(record: &RunRecord, thread: &Checkpoint) -> Vec<String> {
    let run_id = &record.run_id;
    let mut found = Vec::new();
    let turns = thread
        .messages
        .iter()
        .filter(|m| matches!(m.message, Message::Assistant(_)))
        .count();
    if turns as u64 != u64::from(record.steps) || thread.step != u64::from(record.steps) {
        found.push(format!(
            "run {run_id}: {turns} model turns, {} steps, thread at step {}",
            record.steps, thread.step
        ));
    }
    let mut answered = HashSet::new();
    for m in &thread.messages {
        if let Message::Tool(t) = &m.message
            && !answered.insert(t.tool_call_id.clone())
        {
            found.push(format!(
                "run {run_id}: call {} answered twice",
                t.tool_call_id
            ));
        }
    }
    let calls: HashSet<String> = thread
        .messages
        .iter()
        .flat_map(|m| m.message.tool_calls())
        .map(|c| c.id.clone())
        .collect();
    if calls != answered {
        found.push(format!("run {run_id}: calls and answers differ"));
    }
    found
}
