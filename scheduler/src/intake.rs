//! Accepting runs: validate, record, publish the first step.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use deepfleet_fleet::publish_step;
use deepfleet_fleet::tokens::logged;
use deepfleet_proto::SealedContext;
use deepfleet_proto::{AgentSpec, FileData, Message, RunRecord, StepJob, TaskLine};
use deepfleet_queue::Queue;
use deepfleet_store::sealed::ContextKey;
use deepfleet_store::{Store, ThreadSeed};

use crate::error::SchedulerError;

/// Takes runs in.
#[derive(Clone)]
pub struct Intake {
    store: Arc<dyn Store>,
    queue: Arc<dyn Queue>,
    /// Seals runtime context; without it, runs with a context are refused.
    context_key: Option<ContextKey>,
}

impl Intake {
    /// Intake over a store and a queue.
    pub fn new(store: Arc<dyn Store>, queue: Arc<dyn Queue>) -> Self {
        Intake {
            store,
            queue,
            context_key: None,
        }
    }

    /// Seals runtime context under `key` (the fleet's `context_key`).
    pub fn with_context_key(mut self, key: ContextKey) -> Self {
        self.context_key = Some(key);
        self
    }

    /// Seals a run's runtime context for storage, so it is never written
    /// or queued in clear. `id` names the task in errors.
    pub fn seal_context(
        &self,
        id: &str,
        context: Option<&serde_json::Value>,
    ) -> Result<Option<SealedContext>, SchedulerError> {
        let Some(context) = context else {
            return Ok(None);
        };
        let invalid = |reason: String| SchedulerError::InvalidTask {
            id: id.to_owned(),
            reason,
        };
        let key = self.context_key.as_ref().ok_or_else(|| {
            invalid(
                "context: no context key is configured to seal it (set context_key / DEEPFLEET__CONTEXT_KEY)"
                    .to_owned(),
            )
        })?;
        key.seal(context)
            .map(Some)
            .map_err(|e| invalid(format!("context: {e}")))
    }

    /// Validates and stores a spec so workers can load it by name.
    pub async fn register(&self, spec: &AgentSpec) -> Result<(), SchedulerError> {
        spec.validate()?;
        crate::custom_state::check_schema(spec)?;
        self.store.put_spec(spec).await?;
        Ok(())
    }

    /// Starts a run of `agent` for `task`, part of `batch_id` if given.
    /// The input message is stored with its token count, so no step ever
    /// counts it again.
    pub async fn submit(
        &self,
        agent: &str,
        task: &TaskLine,
        batch_id: Option<&str>,
    ) -> Result<RunRecord, SchedulerError> {
        let files = validate_task(task)?;
        let Some(spec) = self.store.get_spec(agent).await? else {
            return Err(SchedulerError::UnknownAgent(agent.to_owned()));
        };
        let state = crate::custom_state::validate_seed(&spec, &task.id, task.state.as_ref())?;
        let context = self.seal_context(&task.id, task.context.as_ref())?;
        let now = Utc::now();
        let run = RunRecord {
            batch_id: batch_id.map(str::to_owned),
            task_id: Some(task.id.clone()),
            context,
            ..RunRecord::new(
                uuid::Uuid::now_v7().to_string(),
                uuid::Uuid::new_v4().to_string(),
                agent.to_owned(),
                now,
            )
        };
        let seed = ThreadSeed {
            messages: vec![logged(Message::user(task.input.clone()))],
            files: files
                .into_iter()
                .map(|(path, content)| (path, FileData::text(content, now)))
                .collect(),
            state,
        };
        self.start(&run, &seed).await?;
        Ok(run)
    }

    /// Creates `run` with its thread `seed` and publishes its first step.
    /// Idempotent: a run that exists already is not seeded again, and its
    /// first step is republished only if nothing ran yet (a duplicate
    /// step message is fenced by the worker anyway). Returns whether this
    /// call created the run.
    pub async fn start(&self, run: &RunRecord, seed: &ThreadSeed) -> Result<bool, SchedulerError> {
        let created = self.store.create_run(run, seed).await?;
        let step = match created {
            Some(step) => step,
            None => return Ok(false),
        };
        let job = StepJob {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            step,
        };
        publish_step(self.queue.as_ref(), job, None).await?;
        Ok(true)
    }

    /// The queue this intake publishes to.
    pub fn queue(&self) -> &Arc<dyn Queue> {
        &self.queue
    }

    /// The store this intake writes to.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }
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
        }
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
