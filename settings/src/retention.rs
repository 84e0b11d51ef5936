//! How long ended runs live (`[retention]`): a default for every tenant
//! and overrides by tenant id. A run's retention is fixed when it is
//! created (the scheduler's `RetentionPolicy`) and applied as expirations when it ends (see the retention
//! section of `docs/configuration.md`); `/memories/` store items are
//! never expired.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How long ended runs live.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSettings {
    /// Seconds an ended run (success, error, cancelled), its thread with
    /// the subagent threads under it, and its event streams stay in the
    /// store after it ends; a later run on the thread keeps it. Default:
    /// none (kept until deleted).
    pub finished_runs_secs: Option<u64>,
    /// Per-tenant overrides of `finished_runs_secs`, by tenant id
    /// (`[retention.tenants] acme = 86400`); `0` keeps that tenant's runs
    /// until deleted. Default: none.
    #[serde(default)]
    pub tenants: BTreeMap<String, u64>,
}
