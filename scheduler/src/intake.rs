//! The scheduler's run settings: the store and queue new runs go to, the
//! specs they start with (served, or pinned by a batch that brought its
//! own), how their runtime context is sealed, their limits, bounds,
//! retention and webhooks. Runs themselves are made by
//! [`make_run`](crate::make_run::make_run).

use std::collections::BTreeMap;
use std::sync::Arc;

use deepfleet_proto::{AgentSpec, InputLimits, Priority, ServedSpec};
use deepfleet_proto::{SealedContext, TenantId};
use deepfleet_queue::Queue;
use deepfleet_store::Store;
use deepfleet_store::sealed::ContextKey;

use crate::error::SchedulerError;
use crate::retention::RetentionPolicy;
use crate::run_bounds::RunBounds;
use crate::webhooks::config::WebhookConfig;

/// The settings and back ends every new run is made with.
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

    /// The admission window of each task batch ([`Intake::with_admission_window`]).
    pub fn admission_window(&self) -> Option<u32> {
        self.window
    }

    /// The priority of the task-line runs it creates.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The tenant its task-line runs belong to.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// What the runs of a task batch may spend in all, in nano-dollars.
    pub fn batch_budget(&self) -> Option<u64> {
        self.batch_budget
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

/// What registering a spec checks beyond its own validation: the schemas
/// it carries compile.
fn check_spec(spec: &AgentSpec) -> Result<(), SchedulerError> {
    spec.validate()?;
    crate::custom_state::check_schema(spec)?;
    crate::runtime_context::check_schema(spec)?;
    Ok(())
}
