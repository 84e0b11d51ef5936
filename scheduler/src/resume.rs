//! Resuming a run parked for human review (`interrupt_on`).
//!
//! The reviewer's decisions are checked against the parked interrupt
//! (one per action request, each of an allowed type), then recorded by a
//! fenced step commit that sets the run running again, so two concurrent
//! resumes cannot both apply: the loser finds the run no longer
//! interrupted. The worker that takes the published step applies the
//! decisions in order.

use chrono::Utc;
use deepfleet_fleet::publish_step;
use deepfleet_proto::{Decision, Interrupt, RunRecord, RunStatus, StepJob, hitl::DecisionType};
use deepfleet_queue::Queue;
use deepfleet_store::{CommitOutcome, StepCommit, Store};

use crate::error::SchedulerError;

/// Applies `decisions` to the interrupted run `run_id` on `thread_id` and
/// publishes its next step. Returns the run as it is now (running).
pub async fn resume(
    store: &dyn Store,
    queue: &dyn Queue,
    thread_id: &str,
    run_id: &str,
    decisions: Vec<Decision>,
) -> Result<RunRecord, SchedulerError> {
    let mut run = store
        .get_run(thread_id, run_id)
        .await?
        .ok_or_else(|| SchedulerError::UnknownRun(run_id.to_owned()))?;
    let checkpoint = store.load_thread(thread_id).await?;
    let not_interrupted = |status| SchedulerError::NotInterrupted {
        run_id: run_id.to_owned(),
        status,
    };
    let mut pending = match (&run.status, checkpoint.pending) {
        (RunStatus::AwaitingHuman, Some(p)) if p.interrupt.is_some() => p,
        _ => return Err(not_interrupted(run.status)),
    };
    let Some(interrupt) = pending.interrupt.as_mut() else {
        return Err(not_interrupted(run.status));
    };
    validate_decisions(interrupt, &decisions).map_err(|reason| {
        SchedulerError::InvalidDecisions {
            run_id: run_id.to_owned(),
            reason,
        }
    })?;
    interrupt.decisions = Some(decisions);
    run.status = RunStatus::Running;
    run.updated_at = Utc::now();
    let commit = StepCommit {
        thread_id: thread_id.to_owned(),
        step: checkpoint.step,
        messages: Vec::new(),
        files: Default::default(),
        state: None,
        pending: Some(pending),
        run: run.clone(),
        fan_in_expected: None,
        context: None,
    };
    match store.commit_step(&commit).await? {
        CommitOutcome::Committed => {}
        CommitOutcome::Conflict { .. } => {
            let now = store.get_run(thread_id, run_id).await?;
            return Err(not_interrupted(now.map_or(run.status, |r| r.status)));
        }
        // Deleted while the decisions were checked.
        CommitOutcome::Gone => return Err(SchedulerError::UnknownRun(run_id.to_owned())),
    }
    let step = checkpoint.step + 1;
    let job = StepJob {
        run_id: run_id.to_owned(),
        thread_id: thread_id.to_owned(),
        step,
        priority: run.priority,
    };
    publish_step(queue, job, None).await?;
    store.mark_published(thread_id, step).await?;
    Ok(run)
}

/// Checks `decisions` against `interrupt`: one per action request, in
/// order, each of a type its review config allows, edits naming a tool.
pub fn validate_decisions(interrupt: &Interrupt, decisions: &[Decision]) -> Result<(), String> {
    let expected = interrupt.action_requests.len();
    if decisions.len() != expected {
        return Err(format!(
            "expected {expected} decision(s), one per action request in order, got {}",
            decisions.len()
        ));
    }
    for (i, (decision, config)) in decisions.iter().zip(&interrupt.review_configs).enumerate() {
        let kind = decision.kind();
        if !config.allowed_decisions.contains(&kind) {
            let allowed: Vec<&str> = config
                .allowed_decisions
                .iter()
                .map(|d| d.as_str())
                .collect();
            return Err(format!(
                "decision {} ({kind}) is not allowed for `{}`; allowed: {}",
                i + 1,
                config.action_name,
                allowed.join(", ")
            ));
        }
        if let Decision::Edit { edited_action } = decision {
            if edited_action.name.trim().is_empty() {
                return Err(format!(
                    "decision {} (edit): edited_action.name must not be empty",
                    i + 1
                ));
            }
            if !edited_action.args.is_object() {
                return Err(format!(
                    "decision {} (edit): edited_action.args must be a JSON object",
                    i + 1
                ));
            }
        }
        debug_assert!(DecisionType::ALL.contains(&kind));
    }
    Ok(())
}

/// The top-level run above `run` (itself when it has no parent); `None`
/// when a link is broken.
pub async fn root_of(
    store: &dyn Store,
    run: &RunRecord,
) -> Result<Option<RunRecord>, SchedulerError> {
    let mut current = run.clone();
    // Depth is bounded by the spec's limits; the cap guards a corrupt loop.
    for _ in 0..64 {
        let Some(parent) = current.parent.clone() else {
            return Ok(Some(current));
        };
        match store.get_run(&parent.thread_id, &parent.run_id).await? {
            Some(next) => current = next,
            None => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use deepfleet_proto::{ActionRequest, EditedAction, ReviewConfig};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn interrupt() -> Interrupt {
        let request = |id: &str| ActionRequest {
            name: "write_file".into(),
            args: json!({"file_path": "/a.txt", "content": "x"}),
            description: "d".into(),
            tool_call_id: id.into(),
        };
        Interrupt {
            action_requests: vec![request("c1"), request("c2")],
            review_configs: vec![
                ReviewConfig {
                    action_name: "write_file".into(),
                    allowed_decisions: DecisionType::ALL.to_vec(),
                },
                ReviewConfig {
                    action_name: "write_file".into(),
                    allowed_decisions: vec![DecisionType::Approve, DecisionType::Reject],
                },
            ],
            decisions: None,
        }
    }

    #[test]
    fn count_must_match() {
        assert_eq!(
            validate_decisions(&interrupt(), &[Decision::Approve]),
            Err("expected 2 decision(s), one per action request in order, got 1".into())
        );
    }

    #[test]
    fn types_must_be_allowed() {
        let respond = Decision::Respond {
            message: "no".into(),
        };
        assert_eq!(
            validate_decisions(&interrupt(), &[Decision::Approve, respond]),
            Err(
                "decision 2 (respond) is not allowed for `write_file`; allowed: approve, reject"
                    .into()
            )
        );
        let reject = Decision::Reject { message: None };
        assert_eq!(
            validate_decisions(&interrupt(), &[Decision::Approve, reject]),
            Ok(())
        );
    }

    #[test]
    fn edits_need_a_tool_and_object_args() {
        let edit = |name: &str, args| Decision::Edit {
            edited_action: EditedAction {
                name: name.into(),
                args,
            },
        };
        let err = validate_decisions(&interrupt(), &[edit("", json!({})), Decision::Approve])
            .unwrap_err();
        assert!(err.contains("edited_action.name"), "{err}");
        let err = validate_decisions(
            &interrupt(),
            &[edit("write_file", json!("x")), Decision::Approve],
        )
        .unwrap_err();
        assert!(err.contains("edited_action.args"), "{err}");
    }
}
