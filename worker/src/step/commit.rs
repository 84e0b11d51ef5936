//! Assembling a step's commit from its finished context and how its turn
//! ended. Pure: the driver writes it with `Store::commit_step`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_proto::{ChildRun, FileData, Price};
use deepfleet_store::StepCommit;
use serde_json::{Map, Value};

use crate::backend::StateBackend;
use crate::background::record_started;
use crate::context::StepContext;
use crate::events::Event;
use crate::step::follow_up::inherited_state;
use crate::step::turn::{End, Settled};

/// A step's result: what to commit, and the files after it (the seed of
/// any subagent it starts).
pub struct Executed {
    /// What to commit.
    pub commit: StepCommit,
    /// The thread's files after the step.
    pub files: BTreeMap<String, FileData>,
    /// The custom state subagents started by the step inherit.
    pub child_state: Map<String, Value>,
    /// Background subagent runs the step started (`start_async_task`):
    /// created after the commit, and never waited on.
    pub spawned: Vec<ChildRun>,
}

/// What the step's model costs, for the summaries compression made:
/// they run on the role's model.
pub struct Pricing<'a> {
    /// The model name sent to the provider.
    pub model: &'a str,
    /// Its price, when the worker's prices list it.
    pub price: Option<Price>,
}

/// What the step started from, to tell what it changed.
pub struct Loaded {
    /// The thread step being executed.
    pub step: u64,
    /// The custom state as loaded.
    pub state: Map<String, Value>,
    /// The thread's own files (under the spec's routes), which record
    /// their changes.
    pub files: StateBackend,
}

/// The commit of a step that ended with `end` at `now`, having started
/// the background runs `spawned`.
pub fn assemble(
    cx: StepContext,
    end: End,
    spawned: Vec<ChildRun>,
    loaded: Loaded,
    pricing: Pricing<'_>,
    now: DateTime<Utc>,
) -> Executed {
    // What compression changed: the cursor to commit, and its own model
    // calls, which the run pays for.
    let (context, summaries) = cx.compaction.take();
    let cost = pricing.price.map_or(0, |p| p.cost(&summaries.tokens()));
    if summaries.model_calls > 0 {
        cx.emit(Event::Cost {
            model: pricing.model.to_owned(),
            nano_usd: cost,
        });
    }
    let StepContext {
        mut run,
        added,
        state,
        spec,
        ..
    } = cx;
    run.count_summaries(&summaries, cost);
    let Settled {
        pending,
        fan_in_expected,
    } = end.settle(&mut run);
    run.updated_at = now;
    // Recorded with the step, so a redelivery can start them again.
    record_started(&state, &spawned, loaded.step, now);
    let state = state.into_inner().unwrap_or_else(|e| e.into_inner());
    let child_state = inherited_state(&spec, &state);
    let commit = StepCommit {
        thread_id: run.thread_id.clone(),
        step: loaded.step,
        messages: added,
        files: loaded.files.changes(),
        state: (state != loaded.state).then_some(state),
        pending,
        run,
        fan_in_expected,
        context,
    };
    Executed {
        commit,
        files: loaded.files.snapshot(),
        child_state,
        spawned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::background::{STATE_KEY, spawned_child};
    use deepfleet_fleet::tokens::logged;
    use deepfleet_proto::{AgentSpec, Message, RunRecord, RunStatus, Usage};
    use pretty_assertions::assert_eq;

    fn context(files: &StateBackend) -> StepContext {
        let spec = AgentSpec::from_yaml("name: a\nmodel: replay:x\n").unwrap();
        let mut run = RunRecord::new("r", "t", "a", Utc::now());
        run.status = RunStatus::Running;
        let mut cx = StepContext::test(spec, run);
        cx.backend = std::sync::Arc::new(files.clone());
        cx
    }

    fn loaded(files: StateBackend) -> Loaded {
        Loaded {
            step: 4,
            state: Map::new(),
            files,
        }
    }

    #[tokio::test]
    async fn the_commit_carries_what_the_step_changed() {
        let files = StateBackend::default();
        let mut cx = context(&files);
        cx.backend.write("/a.txt", "a").await.unwrap();
        cx.added.push(logged(Message::user("hi")));
        cx.compaction.add_summary_call(&Usage {
            input_tokens: 7,
            output_tokens: 1,
            cached_input_tokens: 0,
        });
        let child = spawned_child("r", "c1", "worker".into(), "d".into(), None);
        let now = Utc::now();
        let executed = assemble(
            cx,
            End::Succeed("done".into()),
            vec![child.clone()],
            loaded(files),
            Pricing {
                model: "m",
                price: Some(Price {
                    input: 1.0,
                    output: 2.0,
                    cached_input: None,
                }),
            },
            now,
        );
        let commit = &executed.commit;
        assert_eq!(commit.step, 4);
        assert_eq!(commit.messages.len(), 1);
        assert_eq!(commit.files.keys().collect::<Vec<_>>(), ["/a.txt"]);
        assert_eq!(commit.run.status, RunStatus::Success);
        assert_eq!(commit.run.output.as_deref(), Some("done"));
        assert_eq!(commit.run.usage.input_tokens, 7);
        assert_eq!(commit.run.by_caller.summarization.model_calls, 1);
        assert_eq!(commit.run.by_caller.summarization.input_tokens, 7);
        // 7 input tokens at $1/M and 1 output token at $2/M.
        assert_eq!(commit.run.own_cost_nano_usd, 9_000);
        assert_eq!(commit.run.cost_nano_usd, 9_000);
        assert_eq!(commit.run.updated_at, now);
        assert_eq!(commit.fan_in_expected, None);
        let state = commit.state.as_ref().unwrap();
        assert!(state[STATE_KEY].get(&child.run_id).is_some());
        assert_eq!(executed.spawned, [child]);
        assert!(executed.files.contains_key("/a.txt"));
    }

    #[test]
    fn an_unchanged_state_is_not_written() {
        let files = StateBackend::default();
        let executed = assemble(
            context(&files),
            End::Continue,
            Vec::new(),
            loaded(files),
            Pricing {
                model: "m",
                price: None,
            },
            Utc::now(),
        );
        assert_eq!(executed.commit.state, None);
        assert_eq!(executed.commit.run.status, RunStatus::Running);
        assert_eq!(executed.commit.context, None);
    }
}
