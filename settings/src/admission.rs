//! `[admission]`: how many runs of one batch are in flight at once. The
//! rest of the batch is created pending and admitted as its runs end
//! (`deepfleet_store::Admission`), so results flow from the first seconds
//! and a run's latency is its own work, not the whole batch's.

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
}

impl Default for AdmissionSettings {
    fn default() -> Self {
        AdmissionSettings {
            batch_window: DEFAULT_BATCH_WINDOW,
        }
    }
}

impl AdmissionSettings {
    /// The window, `None` when admission is off.
    pub fn window(&self) -> Option<u32> {
        Some(self.batch_window).filter(|w| *w > 0)
    }
}
