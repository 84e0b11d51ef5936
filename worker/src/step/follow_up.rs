//! Publishing what a committed step asks for.
//!
//! Every follow-up is idempotent, because a redelivered step publishes
//! them again: child runs are created at most once, child results are
//! recorded once per call, and duplicate step messages are fenced.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use deepfleet_fleet::admission::start_admitted;
use deepfleet_fleet::tokens::logged;
use deepfleet_fleet::{publish_deadline_check, publish_step};
use deepfleet_proto::keys::records::{
    BATCHES, TASK_BATCHES, THREADS, batch_members, task_batch_members, thread_queue, thread_runs,
};
use deepfleet_proto::{
    AgentSpec, ChildResult, ChildRun, FileData, ParentLink, RunRecord, RunStatus, StepJob,
};
use deepfleet_queue::Queue;
use deepfleet_store::{Order, Store, ThreadSeed};

use crate::error::StepError;
use crate::step::decide::FollowUp;

/// A step message a committed step calls for, with the trace context it
/// carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub job: StepJob,
    pub traceparent: Option<String>,
}

/// Carries out `follow_ups` of `run`; `files` are the run's thread files
/// after the step and `state` the custom state subagents inherit (the
/// seed of new subagent runs).
///
/// The step messages they call for (the run's next step, a subagent's
/// first, the parent a last subagent wakes) go out after everything else,
/// in order. When the delivery may `keep` one and there is exactly one,
/// it is returned unpublished for the delivery to run (`hold::Hold`):
/// a run that delegates to one subagent, and the parent that subagent
/// wakes, then go on under the same message. A redelivery of that
/// message republishes what the thread it names calls for, and a
/// subagent's first step message leads to the step its thread is at
/// (`decide`), so whatever the kept chain had reached is taken up again.
pub async fn publish(
    queue: &dyn Queue,
    store: &dyn Store,
    run: &RunRecord,
    follow_ups: Vec<FollowUp>,
    files: &BTreeMap<String, FileData>,
    state: &serde_json::Map<String, serde_json::Value>,
    keep: bool,
) -> Result<Option<Outgoing>, StepError> {
    let mut outbox = Vec::new();
    for follow_up in follow_ups {
        match follow_up {
            FollowUp::Step(job) => outbox.push(Outgoing {
                job,
                traceparent: run.traceparent.clone(),
            }),
            FollowUp::StartChild(child) => {
                outbox.push(start_child(store, run, child, files, state).await?);
            }
            FollowUp::Report(parent) => {
                outbox.extend(report(store, run, &parent, files).await?);
            }
            FollowUp::BatchDone(batch) => store.push_batch_done(&batch, &run.run_id).await?,
            FollowUp::DeadlineCheck(step) => {
                schedule_deadline_check(queue, run, step, Utc::now()).await?;
            }
            FollowUp::ReleaseSlots => {
                let pools: Vec<_> = run.concurrency.iter().map(|l| l.pool.clone()).collect();
                store.release_slots(&run.run_id, &pools).await?;
            }
            FollowUp::Admit(batch) => {
                if let Some(next) = store.admit_after(&batch, &run.run_id).await? {
                    start_admitted::<StepError>(queue, store, &batch, &[next]).await?;
                }
            }
            FollowUp::Expire(ttl) => expire(store, run, ttl).await?,
        }
    }
    if keep && outbox.len() == 1 {
        return Ok(outbox.pop());
    }
    for out in outbox {
        publish_step(queue, out.job, out.traceparent).await?;
    }
    Ok(None)
}

/// How many run ids of a thread's run index one read takes.
const RUNS_PAGE: u64 = 500;

/// Sets an ended top-level run's keys to expire after `ttl`: its thread
/// tree, its batch's done list and roster (or its API batch's records),
/// and, for a run the HTTP API made, the API's records of it: the
/// thread's record, and, unless a run waits in the thread's queue (whose
/// record must stay), the metadata of every run of the thread with their
/// index (a run started later puts its records again, which clears their
/// expiry). The tenant's thread index drops the thread when a listing
/// meets it gone.
async fn expire(store: &dyn Store, run: &RunRecord, ttl: Duration) -> Result<(), StepError> {
    let thread = run.thread_id.as_str();
    if !store.expire_thread(thread, &run.run_id, ttl).await? {
        // A later run keeps the thread; its end expires all of it.
        return Ok(());
    }
    store.expire_record(THREADS, thread, ttl).await?;
    let runs = thread_runs(thread);
    if store.index_count(&thread_queue(thread)).await? > 0 {
        store.expire_record(&runs, &run.run_id, ttl).await?;
    } else {
        let mut offset = 0;
        loop {
            let page = store
                .index_page(&runs, Order::Ascending, offset, RUNS_PAGE)
                .await?;
            for entry in &page {
                store.expire_record(&runs, &entry.id, ttl).await?;
            }
            if (page.len() as u64) < RUNS_PAGE {
                break;
            }
            offset += RUNS_PAGE;
        }
        store.index_expire(&runs, ttl).await?;
    }
    if let Some(batch) = &run.batch_id {
        store.expire_batch(batch, ttl).await?;
        // A batch of task lines (`deepfleet run`/`submit`) has a roster:
        // the run's member record goes with it, and the roster's header
        // and member index live `ttl` past the batch's latest ended run.
        let members = task_batch_members(batch);
        store.expire_record(&members, &run.run_id, ttl).await?;
        store.index_expire(&members, ttl).await?;
        store.expire_record(TASK_BATCHES, batch, ttl).await?;
    }
    if let Some(batch) = &run.api_batch_id {
        // The same for a batch of the HTTP API: its member, header and
        // member index.
        let members = batch_members(batch);
        store.expire_record(&members, &run.run_id, ttl).await?;
        store.index_expire(&members, ttl).await?;
        store.expire_record(BATCHES, batch, ttl).await?;
    }
    Ok(())
}

/// Creates a subagent run (once) and returns its first step message.
async fn start_child(
    store: &dyn Store,
    parent: &RunRecord,
    child: ChildRun,
    files: &BTreeMap<String, FileData>,
    state: &serde_json::Map<String, serde_json::Value>,
) -> Result<Outgoing, StepError> {
    let now = Utc::now();
    // A background task reports to no one: its record is its result.
    let (link, batch_id) = if child.detached {
        (None, None)
    } else {
        let link = ParentLink {
            run_id: parent.run_id.clone(),
            thread_id: parent.thread_id.clone(),
            tool_call_id: child.tool_call_id,
        };
        // The batch, so a subagent waiting for a reviewer is reported on
        // its top-level run's result line.
        (Some(link), parent.batch_id.clone())
    };
    let record = RunRecord {
        // A subagent works for its parent's tenant, in its store namespaces.
        tenant: parent.tenant.clone(),
        subagent: Some(child.subagent),
        parent: link,
        depth: parent.depth + 1,
        priority: parent.priority,
        batch_id,
        // Subagents see the parent's runtime context unchanged; it stays
        // sealed in the child's record too.
        context: parent.context.clone(),
        // The spec version the whole tree started with.
        spec_version: parent.spec_version.clone(),
        traceparent: child.traceparent.clone(),
        run_budget: Some(child.run_budget),
        // A subagent works within its parent's deadline; a background
        // task, which outlives its parent's turn, on a clock of its own
        // as long. Both spend from the parent's budgets.
        deadline: parent.deadline.filter(|_| !child.detached),
        timeout_secs: parent.timeout_secs.filter(|_| child.detached),
        budgets: parent.budgets.clone(),
        // What a background task (which reports to no one, and expires on
        // its own when it ends) keeps of its parent's retention.
        expire_after_secs: parent.expire_after_secs,
        ..RunRecord::new(
            child.run_id.clone(),
            child.thread_id.clone(),
            parent.agent.clone(),
            now,
        )
    };
    let seed = ThreadSeed {
        messages: vec![logged(deepfleet_proto::Message::user(child.description))],
        files: files.clone(),
        state: state.clone(),
    };
    // An existing child means this is a republish: its first step message
    // may not have gone out, and a duplicate is fenced, so send it anyway.
    // Step 0 of a thread a kept chain took further (nothing published
    // since) republishes what its thread is at.
    let step = store.create_run(&record, &seed).await?.unwrap_or(0);
    Ok(Outgoing {
        job: StepJob {
            run_id: child.run_id,
            thread_id: child.thread_id,
            step,
            priority: parent.priority,
        },
        traceparent: child.traceparent,
    })
}

/// Records a finished subagent's result for its parent; the last one to
/// arrive wakes the parent: its step message is returned.
///
/// A report repeated after the parent took its result and moved on (a
/// redelivered or republished end of the subagent) wakes no step of it,
/// and records nothing while the parent waits on other subagents, where
/// it would count toward their fan-in. If a delivery that kept the
/// parent's steps died, the parent's thread is past what was published
/// of it: the returned message, at the published step, republishes what
/// the thread is at (see `decide`).
async fn report(
    store: &dyn Store,
    run: &RunRecord,
    parent: &ParentLink,
    files: &BTreeMap<String, FileData>,
) -> Result<Option<Outgoing>, StepError> {
    let parent_thread = store.load_thread(&parent.thread_id).await?;
    let children = parent_thread.pending.as_ref().map(|p| &p.children);
    let waiting = children.is_some_and(|children| {
        children
            .iter()
            .any(|child| child.tool_call_id == parent.tool_call_id)
    });
    let waits_on_others = !waiting && children.is_some_and(|c| !c.is_empty());
    let parent_step = |step| Outgoing {
        job: StepJob {
            run_id: parent.run_id.clone(),
            thread_id: parent.thread_id.clone(),
            step,
            // A subagent has its parent's priority.
            priority: run.priority,
        },
        traceparent: None,
    };
    let behind = parent_thread.published < parent_thread.step;
    let republish = || behind.then(|| parent_step(parent_thread.published));
    if waits_on_others {
        return Ok(republish());
    }
    let output = match (&run.status, &run.output, &run.error) {
        (RunStatus::Success, Some(output), _) => output.clone(),
        (_, _, Some(error)) => format!(
            "Error: the subagent failed ({}): {}",
            error.code, error.message
        ),
        _ => format!("Error: the subagent ended with status {:?}", run.status),
    };
    let result = ChildResult {
        tool_call_id: parent.tool_call_id.clone(),
        status: run.status,
        output,
        files: file_changes(&parent_thread.files, files),
        usage: run.usage,
        by_caller: run.by_caller,
        // A subagent's record always carries its budget.
        runs_left: run.run_budget.unwrap_or(0),
        cost_nano_usd: run.cost_nano_usd,
    };
    let remaining = store.record_child_result(parent, &result).await?;
    if !waiting {
        return Ok(republish());
    }
    Ok((remaining == 0).then(|| parent_step(parent_thread.step)))
}

/// Below this much time left, the check is due at the deadline itself.
const LAST_STRETCH: Duration = Duration::from_millis(300);

/// How long after now the next check of a deadline `left` away is due:
/// a third of the time left (all of it in the last 300 ms). The RabbitMQ
/// queue rounds a delay up to its next delay bucket, at most three times
/// the one below, so a check never falls due after the deadline by more
/// than the smallest bucket, and a run with a day left is looked at about
/// thirty times, not once a second.
pub fn next_deadline_check(left: Duration) -> Duration {
    if left <= LAST_STRETCH { left } else { left / 3 }
}

/// Publishes the next deadline check of `run`, parked at thread step
/// `step` (see `deadline_check`), if it has a deadline.
pub async fn schedule_deadline_check(
    queue: &dyn Queue,
    run: &RunRecord,
    step: u64,
    now: DateTime<Utc>,
) -> Result<(), StepError> {
    let Some(deadline) = run.deadline else {
        return Ok(());
    };
    let left = (deadline - now).to_std().unwrap_or_default();
    let job = StepJob {
        run_id: run.run_id.clone(),
        thread_id: run.thread_id.clone(),
        step,
        priority: run.priority,
    };
    publish_deadline_check(queue, job, next_deadline_check(left)).await?;
    Ok(())
}

/// The custom state fields a subagent inherits: those the spec declares
/// in `state_schema.properties` (harness fields such as `todos` stay with
/// their thread, as in deepagents).
pub fn inherited_state(
    spec: &AgentSpec,
    state: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let Some(declared) = spec
        .state_schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.as_object())
    else {
        return serde_json::Map::new();
    };
    state
        .iter()
        .filter(|(k, _)| declared.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What the subagent changed: the parent is parked while its children run,
/// so its files are exactly the children's seed.
fn file_changes(
    base: &BTreeMap<String, FileData>,
    after: &BTreeMap<String, FileData>,
) -> BTreeMap<String, Option<FileData>> {
    let mut changes: BTreeMap<String, Option<FileData>> = after
        .iter()
        .filter(|(path, file)| base.get(*path) != Some(*file))
        .map(|(path, file)| (path.clone(), Some(file.clone())))
        .collect();
    for path in base.keys().filter(|p| !after.contains_key(*p)) {
        changes.insert(path.clone(), None);
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn child(n: u32) -> ChildRun {
        ChildRun {
            run_id: format!("child-{n}"),
            thread_id: format!("child-thread-{n}"),
            tool_call_id: format!("call-{n}"),
            subagent: "general-purpose".into(),
            description: "Look around".into(),
            traceparent: Some(format!("00-trace-{n}")),
            detached: false,
            run_budget: 0,
        }
    }

    /// Carries out `follow` of a parent run; what it returned and the
    /// step messages it published.
    async fn carried_out(follow: Vec<FollowUp>, keep: bool) -> (Option<Outgoing>, u64) {
        let queue = deepfleet_queue::memory::MemoryQueue::new();
        let store = deepfleet_store::embedded::EmbeddedStore::new();
        let parent = RunRecord::new("parent", "parent-thread", "agent", Utc::now());
        let kept = publish(
            &queue,
            &store,
            &parent,
            follow,
            &BTreeMap::new(),
            &serde_json::Map::new(),
            keep,
        )
        .await
        .unwrap();
        (kept, queue.depth().await.unwrap().unwrap_or_default())
    }

    #[tokio::test]
    async fn a_report_from_before_the_parents_latest_fan_in_records_and_wakes_nothing() {
        use deepfleet_proto::PendingTools;
        use deepfleet_store::{Checkpoints, FanIn, Runs, StepCommit};
        let queue = deepfleet_queue::memory::MemoryQueue::new();
        let store = deepfleet_store::embedded::EmbeddedStore::new();
        let now = Utc::now();
        let parent = RunRecord::new("parent", "parent-thread", "agent", now);
        store
            .create_run(&parent, &ThreadSeed::default())
            .await
            .unwrap();
        // The parent took its first subagent's result and parked again, on
        // a second one.
        let park = StepCommit {
            thread_id: parent.thread_id.clone(),
            step: 0,
            messages: Vec::new(),
            files: BTreeMap::new(),
            state: None,
            pending: Some(PendingTools {
                calls: Vec::new(),
                children: vec![child(2)],
                interrupt: None,
            }),
            run: RunRecord {
                status: RunStatus::Waiting,
                ..parent.clone()
            },
            fan_in_expected: Some(1),
            context: None,
        };
        store.commit_step(&park).await.unwrap();
        store.mark_published("parent-thread", 1).await.unwrap();
        // The first one's end is reported again.
        let first = RunRecord {
            status: RunStatus::Success,
            output: Some("looked".into()),
            ..RunRecord::new("child-1", "child-thread-1", "agent", now)
        };
        let link = ParentLink {
            run_id: "parent".into(),
            thread_id: "parent-thread".into(),
            tool_call_id: "call-1".into(),
        };
        let follow = vec![FollowUp::Report(link)];
        let (files, state) = (BTreeMap::new(), serde_json::Map::new());
        let kept = publish(&queue, &store, &first, follow, &files, &state, true).await;
        assert_eq!(kept.unwrap(), None);
        assert_eq!(queue.depth().await.unwrap(), Some(0));
        let recorded = store
            .child_results("parent-thread", "parent")
            .await
            .unwrap();
        assert!(recorded.is_empty(), "{recorded:?}");
    }

    #[tokio::test]
    async fn the_one_step_message_follow_ups_call_for_may_be_kept() {
        let start = || vec![FollowUp::StartChild(child(1))];
        let first_step = Outgoing {
            job: StepJob {
                run_id: "child-1".into(),
                thread_id: "child-thread-1".into(),
                step: 0,
                priority: Default::default(),
            },
            traceparent: Some("00-trace-1".into()),
        };
        // Kept: the child is created, and its first step is handed back.
        assert_eq!(carried_out(start(), true).await, (Some(first_step), 0));
        assert_eq!(carried_out(start(), false).await, (None, 1));
        // Two subagents run side by side: both go out.
        let both = vec![
            FollowUp::StartChild(child(1)),
            FollowUp::StartChild(child(2)),
        ];
        assert_eq!(carried_out(both, true).await, (None, 2));
    }

    #[test]
    fn subagents_inherit_only_declared_state() {
        let spec = deepfleet_proto::AgentSpec::from_yaml(
            "name: a\nmodel: openai:x\nstate_schema:\n  type: object\n  properties:\n    ticket: {type: string}\n",
        )
        .unwrap();
        let state = serde_json::json!({"ticket": "T-1", "todos": []});
        let state = state.as_object().unwrap();
        assert_eq!(
            inherited_state(&spec, state),
            serde_json::json!({"ticket": "T-1"})
                .as_object()
                .cloned()
                .unwrap()
        );
        let plain = deepfleet_proto::AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        assert!(inherited_state(&plain, state).is_empty());
    }

    #[test]
    fn file_changes_are_writes_and_deletes_against_the_seed() {
        let now = Utc::now();
        let f = |c: &str| FileData::text(c, now);
        let base = BTreeMap::from([
            ("/same".to_owned(), f("s")),
            ("/edited".to_owned(), f("a")),
            ("/gone".to_owned(), f("g")),
        ]);
        let after = BTreeMap::from([
            ("/same".to_owned(), f("s")),
            ("/edited".to_owned(), f("b")),
            ("/new".to_owned(), f("n")),
        ]);
        assert_eq!(
            file_changes(&base, &after),
            BTreeMap::from([
                ("/edited".to_owned(), Some(f("b"))),
                ("/gone".to_owned(), None),
                ("/new".to_owned(), Some(f("n"))),
            ])
        );
    }

    #[test]
    fn checks_close_in_on_the_deadline() {
        assert_eq!(
            next_deadline_check(Duration::from_secs(3)),
            Duration::from_secs(1)
        );
        assert_eq!(
            next_deadline_check(Duration::from_millis(200)),
            Duration::from_millis(200)
        );
        assert_eq!(next_deadline_check(Duration::ZERO), Duration::ZERO);
        // A day left: about thirty checks until the last stretch.
        let mut left = Duration::from_secs(86_400);
        let mut checks = 0;
        while left > LAST_STRETCH {
            left -= next_deadline_check(left);
            checks += 1;
        }
        assert!((25..=40).contains(&checks), "{checks}");
    }
}
