//! After a step's commit: its events, then its follow-ups published, or
//! the next step the delivery keeps (`docs/step-protocol.md`, steps 5-8).

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::Utc;
use deepfleet_proto::{AgentSpec, ChildRun, FileData, PendingTools, RunRecord, RunStatus, StepJob};
use deepfleet_store::{Checkpoint, CommitOutcome};
use serde_json::{Map, Value};
use tracing::{debug, info};

use crate::background::started_at;
use crate::error::StepError;
use crate::events::{Event, EventScope, EventSink};
use crate::step::announce::Announcement;
use crate::step::commit::Executed;
use crate::step::decide::{FollowUp, follow_ups, kept_step};
use crate::step::follow_up::{self, Outgoing, inherited_state};
use crate::step::hold::Hold;
use crate::step::io::Io;
use crate::step::spend;

/// The next step a delivery keeps: the run's own, or that of the
/// subagent it started or the parent it woke; and, when it is the run's
/// own, the commit event of the step before, still to send.
pub(super) struct Kept {
    pub(super) next: StepJob,
    /// The trace context its message would have carried.
    pub(super) traceparent: Option<String>,
    pub(super) announcement: Option<Announcement>,
}

/// A committed step, as its follow-ups need it.
pub(super) struct Committed<'a> {
    /// The run as committed.
    pub(super) run: &'a RunRecord,
    /// The thread's step after the commit.
    pub(super) step: u64,
    /// The parked turn, if the run parked.
    pub(super) pending: Option<&'a PendingTools>,
    /// Background tasks the step started.
    pub(super) spawned: Vec<ChildRun>,
    /// The thread's files after the step (subagents' seed).
    pub(super) files: &'a BTreeMap<String, FileData>,
    /// The custom state subagents inherit.
    pub(super) child_state: &'a Map<String, Value>,
}

/// Commits an executed step of `job` (begun at `started`, the thread's
/// log then `log_before` long); once committed, reports it, announces it
/// and publishes its follow-ups, or returns the next step `hold` keeps.
pub(super) async fn commit(
    io: &Io,
    job: &StepJob,
    executed: Executed,
    span: &tracing::Span,
    started: Instant,
    log_before: u64,
    hold: &Hold<'_>,
) -> Result<Option<Kept>, StepError> {
    match io.store.commit_step(&executed.commit).await? {
        CommitOutcome::Committed => {
            let run = &executed.commit.run;
            let scope = EventScope::of(run);
            io.events.emit(
                &scope,
                &Event::StepCommitted {
                    status: run.status,
                    latency: started.elapsed(),
                },
            );
            span.in_scope(|| finished(&*io.events, &scope, run));
            committed(io, executed, log_before, hold.may_keep()).await
        }
        CommitOutcome::Conflict { current } => {
            debug!(run = %job.run_id, step = job.step, current, "another delivery committed this step");
            Ok(None)
        }
        CommitOutcome::Gone => {
            debug!(run = %job.run_id, step = job.step, "the run's thread was deleted or expired");
            Ok(None)
        }
    }
}

/// Reports a run that reached its final status.
pub(super) fn finished(events: &dyn EventSink, scope: &EventScope, run: &RunRecord) {
    if !run.status.is_terminal() {
        return;
    }
    let latency = (Utc::now() - run.created_at).to_std().unwrap_or_default();
    info!(run = %run.run_id, status = ?run.status, steps = run.steps, latency_ms = latency.as_millis() as u64, "run finished");
    events.emit(
        scope,
        &Event::RunFinished {
            status: run.status,
            latency,
        },
    );
}

/// After the commit: the run event, then the follow-ups.
///
/// When the only follow-up is the run's next step and the delivery may
/// `keep` it, that step is returned instead, unpublished and unmarked,
/// with the event still to send: should the worker die while running
/// it, the redelivered message finds the thread ahead of it with
/// nothing published since, and publishes the step the thread is at
/// (see `decide`). Likewise, when the follow-ups call for exactly one
/// step message (a subagent's first step, or the parent its end
/// wakes), the delivery keeps that one (see [`follow_up::publish`]).
async fn committed(
    io: &Io,
    executed: Executed,
    log_before: u64,
    keep: bool,
) -> Result<Option<Kept>, StepError> {
    let Executed {
        commit,
        files,
        child_state,
        spawned,
    } = executed;
    let run = &commit.run;
    let log_after = log_before + commit.messages.len() as u64;
    let announcement = Announcement::of(run, commit.step, log_before, log_after);
    let step = commit.step + 1;
    let follow = match kept_step(all_follow_ups(spawned, run, step, commit.pending.as_ref())) {
        Ok(next) if keep => {
            // Before the step runs, so that it sees what this one spent.
            spend::report(io.store.as_ref(), run).await?;
            return Ok(Some(Kept {
                next,
                traceparent: None,
                announcement: Some(announcement),
            }));
        }
        Ok(next) => vec![FollowUp::Step(next)],
        Err(follow) => follow,
    };
    // The event goes out beside the follow-ups, not before them: it is
    // a notice (sent first all the same), the follow-ups the record.
    let ((), published) = tokio::join!(
        announcement.send(&*io.store),
        publish(io, run, step, follow, (&files, &child_state), keep)
    );
    Ok(published?.map(|out| Kept {
        next: out.job,
        traceparent: out.traceparent,
        announcement: None,
    }))
}

/// Publishes again what the committed step before `checkpoint` had to
/// (a redelivered step's): the background tasks it started, then the
/// run's own follow-ups. `spec` is the run's, which subagents inherit
/// state by.
pub(super) async fn republish(
    io: &Io,
    spec: Option<&AgentSpec>,
    run: &RunRecord,
    checkpoint: &Checkpoint,
) -> Result<(), StepError> {
    let spawned = started_at(&checkpoint.state, checkpoint.step.saturating_sub(1));
    let child_state = match spec {
        Some(spec) if run.status == RunStatus::Waiting || !spawned.is_empty() => {
            inherited_state(spec, &checkpoint.state)
        }
        _ => Default::default(),
    };
    let committed = Committed {
        run,
        step: checkpoint.step,
        pending: checkpoint.pending.as_ref(),
        spawned,
        files: &checkpoint.files,
        child_state: &child_state,
    };
    publish_follow_ups(io, committed).await
}

/// Publishes a committed step's follow-ups (see [`Committed`]).
pub(super) async fn publish_follow_ups(io: &Io, committed: Committed<'_>) -> Result<(), StepError> {
    let Committed {
        run,
        step,
        pending,
        spawned,
        files,
        child_state,
    } = committed;
    let follow = all_follow_ups(spawned, run, step, pending);
    publish(io, run, step, follow, (files, child_state), false)
        .await
        .map(drop)
}

/// Publishes `follow`, the follow-ups of `run`'s thread now at `step`
/// (with the thread's files and the state its subagents inherit), then
/// marks them published; or, when the delivery may `keep` the one step
/// message they call for, carries out the rest and returns that one,
/// marking nothing.
async fn publish(
    io: &Io,
    run: &RunRecord,
    step: u64,
    follow: Vec<FollowUp>,
    (files, child_state): (&BTreeMap<String, FileData>, &Map<String, Value>),
    keep: bool,
) -> Result<Option<Outgoing>, StepError> {
    // Before the next step goes out, so that step sees what this one
    // spent.
    spend::report(io.store.as_ref(), run).await?;
    let store = &*io.store;
    let kept = follow_up::publish(&*io.queue, store, run, follow, files, child_state, keep).await?;
    if kept.is_none() {
        store.mark_published(&run.thread_id, step).await?;
    }
    Ok(kept)
}

/// Everything a committed step of `run` (its thread now at `step`) must
/// publish: the background tasks it started first (the parent's next step
/// may check them), then the run's own follow-ups.
fn all_follow_ups(
    spawned: Vec<ChildRun>,
    run: &RunRecord,
    step: u64,
    pending: Option<&PendingTools>,
) -> Vec<FollowUp> {
    let mut follow: Vec<FollowUp> = spawned.into_iter().map(FollowUp::StartChild).collect();
    follow.extend(follow_ups(run, step, pending));
    follow
}
