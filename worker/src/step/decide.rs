//! The sans-IO heart of the step protocol: what to do with a step message,
//! and what a committed step must publish.
//!
//! Both are pure functions of stored state, so a redelivered message, a
//! crashed worker or a duplicate publish all lead to the same decisions.

use deepfleet_proto::{ChildRun, ParentLink, PendingTools, RunRecord, RunStatus, StepJob};

use crate::step::halt::Halt;

/// What a worker does with `Step{n}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the step.
    Execute,
    /// The thread is past step `n` and nothing was published since this
    /// message: a crash between a commit and its publish, or while the
    /// delivery ran the run's next steps itself. Publish what the thread's
    /// step calls for.
    Republish,
    /// End the run: cancelled, past its deadline, or out of budget.
    Halt(Halt),
    /// Nothing to do; the reason is for the logs.
    Skip(&'static str),
    /// The message contradicts the store; dead-letter it with this reason.
    Reject(String),
}

/// Decides what to do with `job`, given the run, the thread's
/// checkpoint position (`step`, `published`) and whether something stops
/// the run ([`crate::step::halt::check`]).
pub fn decide(
    job: &StepJob,
    run: &RunRecord,
    step: u64,
    published: u64,
    halt: Option<Halt>,
) -> Decision {
    if step > job.step {
        // Fencing: never run a step twice on top of itself. Whatever the
        // thread's step calls for is published again only when no message
        // has gone out since this one (`published <= job.step`): a
        // delivery that kept the run's next steps (`hold::Hold`)
        // committed them without publishing any.
        return if published < step && published <= job.step {
            Decision::Republish
        } else {
            Decision::Skip("step already executed")
        };
    }
    if step < job.step {
        return Decision::Reject(format!(
            "step {} is ahead of thread {} at step {step}",
            job.step, job.thread_id
        ));
    }
    match run.status {
        RunStatus::Success | RunStatus::Error | RunStatus::Cancelled | RunStatus::Timeout => {
            Decision::Skip("run already finished")
        }
        // A cancel ends a run waiting for its human; its deadline and
        // budgets wait with it (no step, no spend) until the human answers.
        RunStatus::AwaitingHuman => match halt {
            Some(Halt::Cancelled) => Decision::Halt(Halt::Cancelled),
            _ => Decision::Skip("run waits for a human decision"),
        },
        RunStatus::Pending | RunStatus::Running | RunStatus::Waiting => match halt {
            Some(halt) => Decision::Halt(halt),
            None => Decision::Execute,
        },
    }
}

/// Something a committed step must publish or record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FollowUp {
    /// The run's next step.
    Step(StepJob),
    /// Create a subagent run and publish its first step.
    StartChild(ChildRun),
    /// Hand this finished subagent run's result to its parent.
    Report(ParentLink),
    /// Tell the batch this top-level run finished.
    BatchDone(String),
    /// Check the run, parked at this step, at its deadline
    /// (`step::deadline_check`).
    DeadlineCheck(u64),
    /// Give back this ended (or parked) top-level run's concurrency
    /// slots ([`deepfleet_proto::RunRecord::concurrency`]); before the
    /// admission's next run, so that run finds the place free.
    ReleaseSlots,
    /// Admit the batch's next waiting run in this ended (or parked)
    /// top-level run's place in the admission window, and publish its
    /// first step ([`deepfleet_store::Admission::admit_after`]: the same
    /// run on every redelivery).
    Admit(String),
    /// Set this ended run's thread (with its subagents' threads) and its
    /// batch to expire after the run's retention; always the last
    /// follow-up, so everything before it still finds what it reads.
    Expire(std::time::Duration),
}

/// Whether `run` takes concurrency slots: a top-level run under limits
/// (its subagents work under its slots).
pub fn holds_slots(run: &RunRecord) -> bool {
    run.parent.is_none() && !run.concurrency.is_empty()
}

/// The run's next step when it is all a commit must publish: then the
/// delivery that ran the step may keep it (`hold::Hold`) without
/// carrying out anything else. Other follow-ups are carried out first
/// (`follow_up::publish`, which may keep the one step message they call
/// for).
pub fn kept_step(follow: Vec<FollowUp>) -> Result<StepJob, Vec<FollowUp>> {
    match <[FollowUp; 1]>::try_from(follow) {
        Ok([FollowUp::Step(next)]) => Ok(next),
        Ok([other]) => Err(vec![other]),
        Err(follow) => Err(follow),
    }
}

/// The follow-ups of a run whose thread is now at `step`.
pub fn follow_ups(run: &RunRecord, step: u64, pending: Option<&PendingTools>) -> Vec<FollowUp> {
    match run.status {
        RunStatus::Pending | RunStatus::Running => vec![FollowUp::Step(StepJob {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            step,
            priority: run.priority,
        })],
        RunStatus::Waiting => {
            let mut out: Vec<FollowUp> = pending
                .map(|p| {
                    p.children
                        .iter()
                        .cloned()
                        .map(FollowUp::StartChild)
                        .collect()
                })
                .unwrap_or_default();
            if run.deadline.is_some() {
                out.push(FollowUp::DeadlineCheck(step));
            }
            out
        }
        // The batch learns of the parked run (a subagent's too: its batch
        // reports it on the top-level run's line), and a parked top-level
        // run, which waits for a human, gives its place in the admission
        // window to the next run; nothing else moves.
        RunStatus::AwaitingHuman => {
            let mut out: Vec<FollowUp> = run
                .batch_id
                .iter()
                .map(|b| FollowUp::BatchDone(b.clone()))
                .collect();
            if holds_slots(run) {
                out.push(FollowUp::ReleaseSlots);
            }
            if let Some(batch) = run.batch_id.as_ref().filter(|_| run.parent.is_none()) {
                out.push(FollowUp::Admit(batch.clone()));
            }
            out
        }
        RunStatus::Success | RunStatus::Error | RunStatus::Cancelled | RunStatus::Timeout => {
            let mut out = Vec::new();
            if let Some(parent) = &run.parent {
                out.push(FollowUp::Report(parent.clone()));
            }
            if holds_slots(run) {
                out.push(FollowUp::ReleaseSlots);
            }
            // Subagent runs carry their batch only for interrupts.
            if let Some(batch) = run.batch_id.as_ref().filter(|_| run.parent.is_none()) {
                out.push(FollowUp::BatchDone(batch.clone()));
                out.push(FollowUp::Admit(batch.clone()));
            }
            // A subagent's thread expires with its parent's, once the run
            // at the top ends.
            if let Some(secs) = run.expire_after_secs.filter(|_| run.parent.is_none()) {
                out.push(FollowUp::Expire(std::time::Duration::from_secs(secs)));
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    use pretty_assertions::assert_eq;

    fn run(status: RunStatus) -> RunRecord {
        RunRecord {
            status,
            batch_id: Some("b".into()),
            ..RunRecord::new("r", "t", "a", Utc::now())
        }
    }

    fn job(step: u64) -> StepJob {
        StepJob {
            run_id: "r".into(),
            thread_id: "t".into(),
            step,
            priority: Default::default(),
        }
    }

    #[test]
    fn current_step_executes() {
        assert_eq!(
            decide(&job(3), &run(RunStatus::Running), 3, 3, None),
            Decision::Execute
        );
        assert_eq!(
            decide(&job(3), &run(RunStatus::Waiting), 3, 3, None),
            Decision::Execute
        );
    }

    #[test]
    fn redelivery_republishes_only_unconfirmed_follow_ups() {
        let r = run(RunStatus::Running);
        assert_eq!(decide(&job(3), &r, 4, 3, None), Decision::Republish);
        assert_eq!(
            decide(&job(3), &r, 4, 4, None),
            Decision::Skip("step already executed")
        );
        // Two steps behind, with step 4's follow-up published: that
        // message drives the run; republishing would start a chain of
        // duplicates.
        assert_eq!(
            decide(&job(3), &r, 5, 4, None),
            Decision::Skip("step already executed")
        );
        // Steps 4 and 5 ran under this message's delivery, which kept
        // them and published nothing: it is still the run's only message.
        assert_eq!(decide(&job(3), &r, 6, 3, None), Decision::Republish);
        assert_eq!(decide(&job(3), &r, 6, 2, None), Decision::Republish);
    }

    #[test]
    fn only_a_lone_next_step_is_kept() {
        let r = run(RunStatus::Running);
        assert_eq!(kept_step(follow_ups(&r, 4, None)), Ok(job(4)));
        let report = vec![FollowUp::Step(job(4)), FollowUp::BatchDone("b".into())];
        assert_eq!(kept_step(report.clone()), Err(report));
        let ended = follow_ups(&run(RunStatus::Success), 4, None);
        assert_eq!(kept_step(ended.clone()), Err(ended));
    }

    #[test]
    fn future_steps_are_rejected() {
        assert!(matches!(
            decide(&job(7), &run(RunStatus::Running), 3, 3, None),
            Decision::Reject(_)
        ));
    }

    #[test]
    fn cancel_and_terminal_runs() {
        assert_eq!(
            decide(
                &job(1),
                &run(RunStatus::Running),
                1,
                1,
                Some(Halt::Cancelled)
            ),
            Decision::Halt(Halt::Cancelled)
        );
        assert_eq!(
            decide(
                &job(1),
                &run(RunStatus::Success),
                1,
                1,
                Some(Halt::Cancelled)
            ),
            Decision::Skip("run already finished")
        );
    }

    #[test]
    fn a_run_parked_with_a_deadline_schedules_its_check() {
        let mut parked = run(RunStatus::Waiting);
        assert_eq!(follow_ups(&parked, 4, None), vec![]);
        parked.deadline = Some(Utc::now());
        assert_eq!(
            follow_ups(&parked, 4, None),
            vec![FollowUp::DeadlineCheck(4)]
        );
    }

    #[test]
    fn ended_top_level_runs_expire_last_and_subagents_not_at_all() {
        let mut top = run(RunStatus::Success);
        top.expire_after_secs = Some(30);
        assert_eq!(
            follow_ups(&top, 4, None),
            vec![
                FollowUp::BatchDone("b".into()),
                FollowUp::Admit("b".into()),
                FollowUp::Expire(std::time::Duration::from_secs(30))
            ]
        );
        let mut parked = top.clone();
        parked.status = RunStatus::AwaitingHuman;
        assert_eq!(
            follow_ups(&parked, 4, None),
            vec![FollowUp::BatchDone("b".into()), FollowUp::Admit("b".into())],
            "an interrupted run has not ended, but gives up its place in the window"
        );
        let mut child = top.clone();
        child.parent = Some(ParentLink {
            run_id: "p".into(),
            thread_id: "pt".into(),
            tool_call_id: "c".into(),
        });
        assert_eq!(
            follow_ups(&child, 4, None),
            vec![FollowUp::Report(child.parent.clone().unwrap())]
        );
    }

    #[test]
    fn a_limited_top_level_run_gives_its_slots_back_before_the_next_is_admitted() {
        let mut limited = run(RunStatus::Success);
        limited.concurrency = vec![deepfleet_proto::ConcurrencyLimit::tenant(
            deepfleet_proto::TenantId::default(),
            2,
        )];
        let released = vec![
            FollowUp::ReleaseSlots,
            FollowUp::BatchDone("b".into()),
            FollowUp::Admit("b".into()),
        ];
        assert_eq!(follow_ups(&limited, 4, None), released);
        limited.status = RunStatus::AwaitingHuman;
        assert_eq!(
            follow_ups(&limited, 4, None),
            vec![
                FollowUp::BatchDone("b".into()),
                FollowUp::ReleaseSlots,
                FollowUp::Admit("b".into())
            ],
            "a run waiting for a human holds no place"
        );
        // Parked on its subagents, it keeps its place: they work under it.
        limited.status = RunStatus::Waiting;
        assert_eq!(follow_ups(&limited, 4, None), vec![]);
        limited.status = RunStatus::Running;
        assert_eq!(follow_ups(&limited, 4, None), vec![FollowUp::Step(job(4))]);
    }

    #[test]
    fn interrupted_runs_tell_their_batch_and_admit_the_next() {
        assert_eq!(
            follow_ups(&run(RunStatus::AwaitingHuman), 4, None),
            vec![FollowUp::BatchDone("b".into()), FollowUp::Admit("b".into())]
        );
        let mut child = run(RunStatus::Success);
        child.parent = Some(ParentLink {
            run_id: "p".into(),
            thread_id: "pt".into(),
            tool_call_id: "c".into(),
        });
        assert_eq!(
            follow_ups(&child, 4, None),
            vec![FollowUp::Report(child.parent.clone().unwrap())]
        );
        assert_eq!(
            decide(&job(4), &run(RunStatus::AwaitingHuman), 4, 4, None),
            Decision::Skip("run waits for a human decision")
        );
        assert_eq!(
            decide(
                &job(4),
                &run(RunStatus::AwaitingHuman),
                4,
                4,
                Some(Halt::Timeout)
            ),
            Decision::Skip("run waits for a human decision")
        );
        assert_eq!(
            decide(
                &job(4),
                &run(RunStatus::AwaitingHuman),
                4,
                4,
                Some(Halt::Cancelled)
            ),
            Decision::Halt(Halt::Cancelled),
            "a cancelled run stops waiting for its human"
        );
    }

    #[test]
    fn follow_ups_by_status() {
        assert_eq!(
            follow_ups(&run(RunStatus::Running), 4, None),
            vec![FollowUp::Step(job(4))]
        );
        assert_eq!(
            follow_ups(&run(RunStatus::Success), 4, None),
            vec![FollowUp::BatchDone("b".into()), FollowUp::Admit("b".into())]
        );
        let child = ChildRun {
            run_id: "c".into(),
            thread_id: "ct".into(),
            tool_call_id: "call_1".into(),
            subagent: "general-purpose".into(),
            description: "d".into(),
            traceparent: None,
            detached: false,
            run_budget: 0,
        };
        let pending = PendingTools {
            calls: Vec::new(),
            children: vec![child.clone()],
            interrupt: None,
        };
        assert_eq!(
            follow_ups(&run(RunStatus::Waiting), 4, Some(&pending)),
            vec![FollowUp::StartChild(child)]
        );
    }
}
