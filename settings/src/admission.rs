//! `[admission]`: how many runs of one batch are in flight at once, and
//! how many of one tenant's. The rest of a batch is created pending and
//! admitted as its runs end (`deepfleet_store::Admission`), so results
//! flow from the first seconds and a run's latency is its own work, not
//! the whole batch's. A tenant's limit holds across all its batches, API
//! runs and submissions, fleet-wide (`deepfleet_store::Slots`): one
//! tenant's big batch cannot take the fleet from another's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The default window: the default worker concurrency, so one worker is
/// kept busy by one batch and several batches share the fleet.
pub const DEFAULT_BATCH_WINDOW: u32 = 64;

/// Batch admission.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdmissionSettings {
    /// Runs of one `deepfleet submit` batch in flight at once
    /// (`--window` wins; `deepfleet run` defaults to its
    /// `--concurrency`). `0` starts every run at once. Default: 64.
    pub batch_window: u32,
    /// Top-level runs one tenant may have in flight at once across the
    /// fleet (subagents work under their run's place); a run past it
    /// waits on the queue for a place. `0`: no limit. Default: 0.
    pub tenant_concurrency: u32,
    /// Tenants' own limits over `tenant_concurrency`
    /// (`[admission.tenants] acme = 200`); `0` lifts the limit for that
    /// tenant. Default: none.
    pub tenants: BTreeMap<String, u32>,
}

impl Default for AdmissionSettings {
    fn default() -> Self {
        AdmissionSettings {
            batch_window: DEFAULT_BATCH_WINDOW,
            tenant_concurrency: 0,
            tenants: BTreeMap::new(),
        }
    }
}

impl AdmissionSettings {
    /// The window, `None` when admission is off.
    pub fn window(&self) -> Option<u32> {
        Some(self.batch_window).filter(|w| *w > 0)
    }
}
