//! What every handler shares.

use std::sync::Arc;

use deepfleet_store::Store;

use crate::browser_guard::AllowedHosts;
use deepfleet_scheduler::keys::ApiKeys;
use deepfleet_scheduler::runs::Runs;

/// Renders the process's Prometheus metrics for `/metrics`.
pub type MetricsRender = Arc<dyn Fn() -> String + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub struct ApiState {
    /// The runs service every handler works through.
    pub runs: Runs,
    /// The metrics registry's renderer, when the binary has one.
    pub metrics: Option<MetricsRender>,
    /// The API keys; none means every caller is the default tenant's
    /// admin.
    pub keys: ApiKeys,
    /// Largest request body read, in bytes (`limits.max_body_bytes`).
    pub max_body_bytes: usize,
    /// Host names answered without keys besides the loopback ones
    /// (`api.allowed_hosts`), so a DNS-rebound name gets nothing.
    pub allowed_hosts: AllowedHosts,
}

impl ApiState {
    /// The store, for the repositories.
    pub fn store(&self) -> &dyn Store {
        self.runs.store()
    }
}
