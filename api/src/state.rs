//! What every handler shares.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use deepfleet_store::Store;

use crate::api::auth::ApiKeys;
use crate::api::browser_guard::AllowedHosts;
use crate::api::graphs::Graphs;
use crate::lifecycle::Lifecycle;

/// Renders the process's Prometheus metrics for `/metrics`.
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub struct ApiState {
    /// Run lifecycle over the store and queue.
    pub life: Lifecycle,
    /// The registered graphs (agent spec names).
    pub graphs: Graphs,
    /// When this scheduler started: the system assistants' timestamps.
    pub started_at: DateTime<Utc>,
    /// The metrics registry's renderer, when the binary has one.
    pub metrics: Option<MetricsRender>,
    /// The API keys; none means every caller is the default tenant's
    /// admin.
    pub keys: ApiKeys,
    /// Runs one tenant may have pending or running at once.
    pub tenant_runs_in_flight: Option<u32>,
    /// Largest request body read, in bytes (`limits.max_body_bytes`).
    pub max_body_bytes: usize,
    /// Host names answered without keys besides the loopback ones
    /// (`api.allowed_hosts`), so a DNS-rebound name gets nothing.
    pub allowed_hosts: AllowedHosts,
}

impl ApiState {
    /// The store, for the repositories.
    pub fn store(&self) -> &dyn Store {
        self.life.store().as_ref()
    }
}
