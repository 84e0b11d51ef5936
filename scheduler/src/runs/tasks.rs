//! Runs from task lines: the CLI's entry (`deepfleet run` and `submit`).
//! A task line is checked here, then made into a run by
//! [`make_run`](crate::make_run::make_run) like every other entry's. A
//! task's run and thread ids derive from its batch and its id, so a batch
//! submitted again after an interruption starts only the tasks that never
//! started and finds the runs of the others.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use deepfleet_proto::{FileData, Message, RunRecord, RunStatus, TaskLine};

use crate::batch_ids::{batch_run_id, batch_thread_id};
use crate::error::SchedulerError;
use crate::intake::Intake;
use crate::make_run::{BatchLink, RunDraft, enter_admission, make_run};
use crate::repo::threads::threads;
use crate::task_batches::TaskBatches;

/// Starts `task`'s run of `agent`, alone or in batch `batch_id`, and
/// returns it; in a batch, a task whose run exists already gets that run
/// back, not a second one. A refused task has written nothing.
pub async fn submit_task(
    intake: &Intake,
    agent: &str,
    task: &TaskLine,
    batch_id: Option<&str>,
) -> Result<RunRecord, SchedulerError> {
    let Some(batch_id) = batch_id else {
        let ids = (
            uuid::Uuid::now_v7().to_string(),
            uuid::Uuid::new_v4().to_string(),
        );
        let draft = draft(intake, agent, task, None, ids).await?;
        let run_id = draft.run_id.clone();
        return make_run(intake, draft)
            .await?
            .ok_or(SchedulerError::UnknownRun(run_id));
    };
    submit_to_batch(intake, agent, task, batch_id).await
}

/// Starts `task`'s run in batch `batch_id` unless it exists already.
async fn submit_to_batch(
    intake: &Intake,
    agent: &str,
    task: &TaskLine,
    batch_id: &str,
) -> Result<RunRecord, SchedulerError> {
    let store = intake.store();
    let run_id = batch_run_id(batch_id, &task.id);
    if let Some(run) = store.find_run(&run_id).await? {
        if run.status == RunStatus::Pending {
            // Entered before (held: the intake that entered it, or the
            // sweep, starts it), or created by an intake that stopped
            // before it could enter it (entered and started now).
            enter_admission(intake, &run, batch_id).await?;
        }
        return Ok(run);
    }
    // Derived, so that two intakes creating the run at once agree on its
    // thread (the run's record lives in its thread's slot), and salted
    // with the batch's own random salt, so that no one can name the
    // thread before the batch makes it.
    let salt = TaskBatches::new(Arc::clone(store))
        .salt(batch_id, agent)
        .await?;
    let thread_id = batch_thread_id(batch_id, &task.id, &salt);
    // A batch from before salts derives its ids from what others know:
    // it never runs on a thread an API record owns. A salted id cannot
    // have been made ahead, so it needs no such read.
    if salt.is_empty() && threads(store.as_ref()).get(&thread_id).await?.is_some() {
        return Err(SchedulerError::InvalidTask {
            id: task.id.clone(),
            reason: format!(
                "its thread id {thread_id} is taken by a thread made through the API; \
                 submit the batch under another --batch-key"
            ),
        });
    }
    let draft = draft(intake, agent, task, Some(batch_id), (run_id, thread_id)).await?;
    let run_id = draft.run_id.clone();
    if let Some(run) = make_run(intake, draft).await? {
        return Ok(run);
    }
    // Another intake created it meanwhile; follow that one.
    store
        .find_run(&run_id)
        .await?
        .ok_or(SchedulerError::UnknownRun(run_id))
}

/// The draft of run `(run id, thread id)` of `agent` for `task`, checked.
async fn draft(
    intake: &Intake,
    agent: &str,
    task: &TaskLine,
    batch_id: Option<&str>,
    (run_id, thread_id): (String, String),
) -> Result<RunDraft, SchedulerError> {
    let files = validate_task(task)?;
    check_limits(intake, task, &files)?;
    let served = intake.spec_for(agent).await?;
    let state = crate::custom_state::validate_seed(&served.spec, &task.id, task.state.as_ref())?;
    crate::runtime_context::validate(&served.spec, &task.id, task.context.as_ref())?;
    let context = intake.seal_context(&task.id, task.context.as_ref())?;
    let now = Utc::now();
    Ok(RunDraft {
        run_id,
        thread_id,
        tenant: intake.tenant().clone(),
        spec: served,
        priority: intake.priority(),
        created_at: now,
        context,
        batch: batch_id.map_or(BatchLink::None, |batch_id| {
            BatchLink::Tasks(batch_id.to_owned())
        }),
        task_id: Some(task.id.clone()),
        timeout_secs: task.timeout_secs,
        temporary_thread: false,
        input: vec![Message::user(task.input.clone())],
        files: files
            .into_iter()
            .map(|(path, content)| (path, FileData::text(content, now)))
            .collect(),
        state,
    })
}

/// Checks `task`'s input message and seed `files` against the intake's
/// limits.
fn check_limits(
    intake: &Intake,
    task: &TaskLine,
    files: &BTreeMap<String, String>,
) -> Result<(), SchedulerError> {
    let too_large = |limit| SchedulerError::TooLarge {
        id: task.id.clone(),
        limit,
    };
    let limits = intake.limits();
    limits
        .check_message("the input", task.input.len())
        .map_err(too_large)?;
    limits.check_file_count(files.len()).map_err(too_large)?;
    for (path, content) in files {
        limits.check_file(path, content.len()).map_err(too_large)?;
    }
    Ok(())
}

/// Checks a task without submitting it; returns its seed files with
/// normalised paths.
pub fn validate_task(task: &TaskLine) -> Result<BTreeMap<String, String>, SchedulerError> {
    let invalid = |reason: String| SchedulerError::InvalidTask {
        id: task.id.clone(),
        reason,
    };
    if task.id.trim().is_empty() {
        return Err(invalid("`id` must not be empty".to_owned()));
    }
    if task.input.trim().is_empty() {
        return Err(invalid("`input` must not be empty".to_owned()));
    }
    let mut files = BTreeMap::new();
    for (path, content) in task.files.iter().flatten() {
        let normal =
            deepfleet_proto::path::validate(path).map_err(|e| invalid(format!("files: {e}")))?;
        files.insert(normal, content.clone());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use deepfleet_proto::{AgentSpec, InputLimits};
    use deepfleet_queue::Queue;
    use deepfleet_queue::memory::MemoryQueue;
    use deepfleet_store::Store;
    use deepfleet_store::embedded::EmbeddedStore;

    use super::*;

    fn task(id: &str, input: &str, files: &[(&str, &str)]) -> TaskLine {
        TaskLine {
            id: id.into(),
            input: input.into(),
            context: None,
            state: None,
            files: Some(
                files
                    .iter()
                    .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
                    .collect(),
            ),
            timeout_secs: None,
        }
    }

    #[tokio::test]
    async fn a_pinned_spec_runs_its_own_version_and_serves_nothing() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let queue = Arc::new(MemoryQueue::new());
        let served =
            AgentSpec::from_yaml("name: a\nmodel: openai:x\nsystem_prompt: Served.\n").unwrap();
        let brought =
            AgentSpec::from_yaml("name: a\nmodel: openai:x\nsystem_prompt: Brought.\n").unwrap();
        let scheduler = Intake::new(Arc::clone(&store), queue.clone());
        scheduler.register(&served).await.unwrap();
        let submit = Intake::new(Arc::clone(&store), queue.clone())
            .pin(&brought)
            .await
            .unwrap();
        let theirs = submit_task(&submit, "a", &task("t1", "go", &[]), None)
            .await
            .unwrap();
        let ours = submit_task(&scheduler, "a", &task("t2", "go", &[]), None)
            .await
            .unwrap();
        let pinned = |run: &RunRecord| run.spec_version.clone().unwrap();
        assert_eq!(pinned(&theirs), deepfleet_proto::spec_version(&brought));
        assert_eq!(pinned(&ours), deepfleet_proto::spec_version(&served));
        assert_eq!(store.get_spec("a").await.unwrap(), Some(served.clone()));
        // Serving a newer spec leaves both runs' versions loadable.
        let newer =
            AgentSpec::from_yaml("name: a\nmodel: openai:x\nsystem_prompt: Newer.\n").unwrap();
        scheduler.register(&newer).await.unwrap();
        for (run, spec) in [(&theirs, &brought), (&ours, &served)] {
            assert_eq!(
                store
                    .get_spec_version("a", &pinned(run))
                    .await
                    .unwrap()
                    .as_ref(),
                Some(spec)
            );
        }
    }

    #[tokio::test]
    async fn a_task_past_a_limit_is_refused_before_anything_is_written() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let queue = Arc::new(MemoryQueue::new());
        let limits = InputLimits {
            max_message_bytes: 4,
            max_file_bytes: 2,
            max_files_per_thread: 1,
        };
        let intake = Intake::new(Arc::clone(&store), queue.clone()).with_limits(limits);
        intake
            .register(&AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let cases = [
            (
                task("t1", "too long", &[]),
                "task t1: the input is 8 bytes, over the limit of 4 (limits.max_message_bytes)",
            ),
            (
                task("t2", "go", &[("/a", "big")]),
                "task t2: file /a is 3 bytes, over the limit of 2 (limits.max_file_bytes)",
            ),
            (
                task("t3", "go", &[("/a", "1"), ("/b", "2")]),
                "task t3: the thread's file count is 2, over the limit of 1 (limits.max_files_per_thread)",
            ),
        ];
        for (task, reason) in cases {
            let err = submit_task(&intake, "a", &task, None).await.unwrap_err();
            assert!(matches!(err, SchedulerError::TooLarge { .. }), "{err:?}");
            assert_eq!(err.to_string(), reason);
        }
        assert_eq!(queue.depth().await.unwrap(), Some(0), "nothing started");
    }

    #[tokio::test]
    async fn a_task_submitted_to_its_batch_again_is_the_same_run() {
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let queue = Arc::new(MemoryQueue::new());
        let intake = Intake::new(Arc::clone(&store), queue.clone());
        intake
            .register(&AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let first = submit_task(&intake, "a", &task("t1", "go", &[]), Some("b1"))
            .await
            .unwrap();
        let again = submit_task(&intake, "a", &task("t1", "go", &[]), Some("b1"))
            .await
            .unwrap();
        assert_eq!(
            (first.run_id.as_str(), first.thread_id.as_str()),
            (again.run_id.as_str(), again.thread_id.as_str())
        );
        assert_eq!(first.run_id, batch_run_id("b1", "t1"));
        assert_eq!(queue.depth().await.unwrap(), Some(1), "one first step");
        let thread = store.load_thread(&first.thread_id).await.unwrap();
        assert_eq!(thread.messages.len(), 1, "seeded once");
    }

    #[test]
    fn rejects_empty_fields_and_traversal() {
        assert!(validate_task(&task("", "x", &[])).is_err());
        assert!(validate_task(&task("a", " ", &[])).is_err());
        let err = validate_task(&task("a", "x", &[("/../etc/passwd", "")])).unwrap_err();
        assert!(
            err.to_string().contains("Path traversal not allowed"),
            "{err}"
        );
    }

    #[test]
    fn normalises_seed_paths() {
        let files = validate_task(&task("a", "x", &[("notes//a.md", "hi")])).unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), vec!["/notes/a.md"]);
    }
}
