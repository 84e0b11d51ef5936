//! Accepting runs: validate, record, publish the first step.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::Utc;
use deepfleet_fleet::admission::start_admitted;
use deepfleet_fleet::publish_step;
use deepfleet_fleet::tokens::logged;
use deepfleet_proto::{
    AgentSpec, FileData, InputLimits, Message, Priority, RunRecord, RunStatus, ServedSpec, StepJob,
    TaskLine,
};
use deepfleet_proto::{Budget, SealedContext, TenantId};
use deepfleet_queue::Queue;
use deepfleet_store::sealed::ContextKey;
use deepfleet_store::{Entered, Store, ThreadSeed};

use crate::batch_ids::{batch_run_id, batch_thread_id};
use crate::error::SchedulerError;
use crate::repo::threads::threads;
use crate::retention::RetentionPolicy;
use crate::run_bounds::RunBounds;
use crate::task_batches::TaskBatches;
use crate::webhooks::config::WebhookConfig;

/// Takes runs in.
#[derive(Clone)]
pub struct Intake {
    store: Arc<dyn Store>,
    queue: Arc<dyn Queue>,
    /// Seals runtime context; without it, runs with a context are refused.
    context_key: Option<ContextKey>,
    /// How long each tenant's ended runs live.
    retention: RetentionPolicy,
    /// Specs this intake brought itself ([`Intake::pin`]), by name: its
    /// runs of these names use them, whatever the name serves.
    pinned: BTreeMap<String, ServedSpec>,
    /// What a run's input may bring.
    limits: InputLimits,
    /// How many runs of one batch are in flight at once
    /// ([`Intake::with_admission_window`]); `None`: all of them.
    window: Option<u32>,
    /// The priority of the runs it creates (batch unless told).
    priority: Priority,
    /// Deadlines and tenant budgets of new runs.
    bounds: RunBounds,
    /// What the runs of a batch this intake submits may spend in all, in
    /// nano-dollars.
    batch_budget: Option<u64>,
    /// The tenant the task-line runs it creates belong to.
    tenant: TenantId,
    /// Signing secrets and retries of run-completion webhooks.
    webhooks: Arc<WebhookConfig>,
}

impl Intake {
    /// Intake over a store and a queue.
    pub fn new(store: Arc<dyn Store>, queue: Arc<dyn Queue>) -> Self {
        Intake {
            store,
            queue,
            context_key: None,
            retention: RetentionPolicy::default(),
            pinned: BTreeMap::new(),
            limits: InputLimits::default(),
            window: None,
            priority: Priority::Batch,
            bounds: RunBounds::default(),
            batch_budget: None,
            tenant: TenantId::default(),
            webhooks: Arc::new(WebhookConfig::default()),
        }
    }

    /// Signs and retries the webhooks of its runs as `config` says
    /// (without it every webhook is refused: no tenant has a secret).
    pub fn with_webhooks(mut self, config: WebhookConfig) -> Self {
        self.webhooks = Arc::new(config);
        self
    }

    /// The webhook configuration.
    pub fn webhooks(&self) -> &WebhookConfig {
        &self.webhooks
    }

    /// Gives the runs this intake creates `priority`: interactive runs
    /// are served ahead of batch ones.
    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// Keeps at most `window` runs of each batch this intake submits to
    /// in flight: the others are created pending and wait in the batch's
    /// admission ([`deepfleet_store::Admission`]), and each run's end
    /// admits the next (at least 1).
    pub fn with_admission_window(mut self, window: u32) -> Self {
        self.window = Some(window.max(1));
        self
    }

    /// Makes the task-line runs this intake creates `tenant`'s (the
    /// default tenant's unless told): its retention, budget and
    /// concurrency limit apply, and its agents' `/memories/` are its.
    pub fn with_tenant(mut self, tenant: TenantId) -> Self {
        self.tenant = tenant;
        self
    }

    /// Fixes deadlines and tenant budgets of new runs by `bounds`.
    pub fn with_bounds(mut self, bounds: RunBounds) -> Self {
        self.bounds = bounds;
        self
    }

    /// Deadlines and tenant budgets of new runs.
    pub fn bounds(&self) -> &RunBounds {
        &self.bounds
    }

    /// Gives the batch this intake submits to a budget of `nano_usd` (a
    /// `--budget-usd`): its runs take no step once they spent it.
    pub fn with_batch_budget(mut self, nano_usd: Option<u64>) -> Self {
        self.batch_budget = nano_usd;
        self
    }

    /// Fixes on every new run how long it lives once ended, by `policy`
    /// (without it, runs are kept until deleted).
    pub fn with_retention(mut self, policy: RetentionPolicy) -> Self {
        self.retention = policy;
        self
    }

    /// How long each tenant's ended runs live.
    pub fn retention(&self) -> &RetentionPolicy {
        &self.retention
    }

    /// Refuses input past `limits` (the settings' `[limits]`).
    pub fn with_limits(mut self, limits: InputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// What a run's input may bring.
    pub fn limits(&self) -> &InputLimits {
        &self.limits
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

    /// Opens a context [`Intake::seal_context`] sealed; one that does not
    /// open (another key, altered) is corrupt stored data.
    pub fn open_context(
        &self,
        sealed: &SealedContext,
    ) -> Result<serde_json::Value, SchedulerError> {
        let corrupt = |reason: String| {
            SchedulerError::Store(deepfleet_store::StoreError::Corrupt {
                key: "sealed context".to_owned(),
                reason,
            })
        };
        let key = self
            .context_key
            .as_ref()
            .ok_or_else(|| corrupt("no context key is configured to open it".to_owned()))?;
        key.open(sealed).map_err(|e| corrupt(e.to_string()))
    }

    /// Checks run `id`'s runtime `context` against the `context_schema` of
    /// agent `agent`, before it is sealed.
    pub async fn check_context(
        &self,
        agent: &str,
        id: &str,
        context: Option<&serde_json::Value>,
    ) -> Result<(), SchedulerError> {
        let spec = self.spec_for(agent).await?;
        crate::runtime_context::validate(&spec.spec, id, context)
    }

    /// Validates `spec` and serves it under its name: what runs that name
    /// the agent (API runs, queue submissions) start with from now on.
    /// Runs under way keep the version they started with.
    pub async fn register(&self, spec: &AgentSpec) -> Result<(), SchedulerError> {
        check_spec(spec)?;
        self.store.serve_spec(spec).await?;
        Ok(())
    }

    /// Validates `spec` and stores it as a version that this intake's runs
    /// of its name use, serving nothing: a batch that brings its own spec
    /// (`deepfleet submit`) never replaces the spec a scheduler serves
    /// under the same name.
    pub async fn pin(mut self, spec: &AgentSpec) -> Result<Self, SchedulerError> {
        check_spec(spec)?;
        let version = self.store.put_spec_version(spec).await?;
        let pinned = ServedSpec {
            version,
            spec: spec.clone(),
        };
        self.pinned.insert(spec.name.clone(), pinned);
        Ok(self)
    }

    /// The spec a new run of `agent` starts with: the one this intake
    /// pinned, else the one served under the name.
    pub async fn spec_for(&self, agent: &str) -> Result<ServedSpec, SchedulerError> {
        if let Some(pinned) = self.pinned.get(agent) {
            return Ok(pinned.clone());
        }
        self.store
            .served_spec(agent)
            .await?
            .ok_or_else(|| SchedulerError::UnknownAgent(agent.to_owned()))
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
        let ids = (
            uuid::Uuid::now_v7().to_string(),
            uuid::Uuid::new_v4().to_string(),
        );
        let (run, seed) = self.prepare(agent, task, batch_id, ids).await?;
        self.start(&run, &seed).await?;
        Ok(run)
    }

    /// Starts `task`'s run in batch `batch_id` unless it exists already,
    /// and returns it. The run's ids are derived from the batch and the
    /// task ([`batch_run_id`]), so submitting a batch again after an
    /// interruption starts only the tasks that never started and finds
    /// the runs of the others.
    pub async fn submit_to_batch(
        &self,
        agent: &str,
        task: &TaskLine,
        batch_id: &str,
    ) -> Result<RunRecord, SchedulerError> {
        let run_id = batch_run_id(batch_id, &task.id);
        if let Some(run) = self.store.find_run(&run_id).await? {
            if run.status == RunStatus::Pending {
                // Entered before (held: the intake that entered it, or the
                // sweep, starts it), or created by an intake that stopped
                // before it could enter it (entered and started now).
                self.enter(&run, batch_id).await?;
            }
            return Ok(run);
        }
        // Derived, so that two intakes creating the run at once agree on
        // its thread (the run's record lives in its thread's slot), and
        // salted with the batch's own random salt, so that no one can
        // name the thread before the batch makes it.
        let salt = TaskBatches::new(Arc::clone(&self.store))
            .salt(batch_id, agent)
            .await?;
        let thread_id = batch_thread_id(batch_id, &task.id, &salt);
        // A batch from before salts derives its ids from what others know:
        // it never runs on a thread an API record owns. A salted id cannot
        // have been made ahead, so it needs no such read.
        if salt.is_empty()
            && threads(self.store.as_ref())
                .get(&thread_id)
                .await?
                .is_some()
        {
            return Err(SchedulerError::InvalidTask {
                id: task.id.clone(),
                reason: format!(
                    "its thread id {thread_id} is taken by a thread made through the API; \
                     submit the batch under another --batch-key"
                ),
            });
        }
        let (run, seed) = self
            .prepare(agent, task, Some(batch_id), (run_id, thread_id))
            .await?;
        if self.window.is_some() {
            if self.store.create_run(&run, &seed).await?.is_some() {
                self.enter(&run, batch_id).await?;
                return Ok(run);
            }
        } else if self.start(&run, &seed).await? {
            return Ok(run);
        }
        // Another intake created it meanwhile; follow that one.
        Ok(self.store.find_run(&run.run_id).await?.unwrap_or(run))
    }

    /// The record and thread seed of a new run `(run id, thread id)` of
    /// `agent` for `task`, checked.
    async fn prepare(
        &self,
        agent: &str,
        task: &TaskLine,
        batch_id: Option<&str>,
        (run_id, thread_id): (String, String),
    ) -> Result<(RunRecord, ThreadSeed), SchedulerError> {
        let files = validate_task(task)?;
        self.check_limits(task, &files)?;
        let ServedSpec { version, spec } = self.spec_for(agent).await?;
        let state = crate::custom_state::validate_seed(&spec, &task.id, task.state.as_ref())?;
        crate::runtime_context::validate(&spec, &task.id, task.context.as_ref())?;
        let context = self.seal_context(&task.id, task.context.as_ref())?;
        let now = Utc::now();
        let mut run = RunRecord {
            batch_id: batch_id.map(str::to_owned),
            task_id: Some(task.id.clone()),
            context,
            tenant: self.tenant.clone(),
            expire_after_secs: self.retention.expire_after_secs(&self.tenant),
            spec_version: Some(version),
            priority: self.priority,
            ..RunRecord::new(run_id, thread_id, agent.to_owned(), now)
        };
        let batch_budget = batch_id
            .zip(self.batch_budget)
            .map(|(batch, limit)| Budget::batch(batch, limit));
        self.bounds
            .apply(&mut run, &spec, task.timeout_secs, batch_budget, now);
        let seed = ThreadSeed {
            messages: vec![logged(Message::user(task.input.clone()))],
            files: files
                .into_iter()
                .map(|(path, content)| (path, FileData::text(content, now)))
                .collect(),
            state,
        };
        Ok((run, seed))
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
            priority: run.priority,
        };
        publish_step(self.queue.as_ref(), job, None).await?;
        Ok(true)
    }

    /// Enters a created `run` into `batch_id`'s admission window and
    /// publishes its first step if it is admitted; without a window, does
    /// nothing.
    async fn enter(&self, run: &RunRecord, batch_id: &str) -> Result<(), SchedulerError> {
        let Some(window) = self.window else {
            return Ok(());
        };
        let entered = self
            .store
            .enter_admission(batch_id, &run.run_id, window)
            .await?;
        if entered == Entered::Start {
            let runs = [run.run_id.clone()];
            start_admitted::<SchedulerError>(
                self.queue.as_ref(),
                self.store.as_ref(),
                batch_id,
                &runs,
            )
            .await?;
        }
        Ok(())
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

impl Intake {
    /// Checks `task`'s input message and seed `files` against the limits.
    fn check_limits(
        &self,
        task: &TaskLine,
        files: &BTreeMap<String, String>,
    ) -> Result<(), SchedulerError> {
        let too_large = |limit| SchedulerError::TooLarge {
            id: task.id.clone(),
            limit,
        };
        self.limits
            .check_message("the input", task.input.len())
            .map_err(too_large)?;
        self.limits
            .check_file_count(files.len())
            .map_err(too_large)?;
        for (path, content) in files {
            self.limits
                .check_file(path, content.len())
                .map_err(too_large)?;
        }
        Ok(())
    }
}

/// What registering a spec checks beyond its own validation: the schemas
/// it carries compile.
fn check_spec(spec: &AgentSpec) -> Result<(), SchedulerError> {
    spec.validate()?;
    crate::custom_state::check_schema(spec)?;
    crate::runtime_context::check_schema(spec)?;
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
        use deepfleet_queue::memory::MemoryQueue;
        use deepfleet_store::embedded::EmbeddedStore;
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
        let theirs = submit
            .submit("a", &task("t1", "go", &[]), None)
            .await
            .unwrap();
        let ours = scheduler
            .submit("a", &task("t2", "go", &[]), None)
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
        use deepfleet_queue::memory::MemoryQueue;
        use deepfleet_store::embedded::EmbeddedStore;
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
            let err = intake.submit("a", &task, None).await.unwrap_err();
            assert!(matches!(err, SchedulerError::TooLarge { .. }), "{err:?}");
            assert_eq!(err.to_string(), reason);
        }
        assert_eq!(queue.depth().await.unwrap(), Some(0), "nothing started");
    }

    #[tokio::test]
    async fn a_task_submitted_to_its_batch_again_is_the_same_run() {
        use deepfleet_queue::memory::MemoryQueue;
        use deepfleet_store::embedded::EmbeddedStore;
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::new());
        let queue = Arc::new(MemoryQueue::new());
        let intake = Intake::new(Arc::clone(&store), queue.clone());
        intake
            .register(&AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap())
            .await
            .unwrap();
        let first = intake
            .submit_to_batch("a", &task("t1", "go", &[]), "b1")
            .await
            .unwrap();
        let again = intake
            .submit_to_batch("a", &task("t1", "go", &[]), "b1")
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
