//! Concurrency limits: how many top-level runs of one tenant, or of one
//! tenant's assistant, may be in flight at once across the fleet.
//!
//! The scheduler fixes a run's limits on its record when it creates it
//! (from the fleet's `[concurrency]` settings and the spec's
//! `limits.max_concurrent_runs`), as it fixes its budgets; workers take a
//! slot of each limit's pool before the run's steps and give them back
//! when it ends or waits for a human. A subagent works under its parent's
//! slots, so a parent waiting on its subagents can never starve them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tenant::TenantId;

/// A pool of slots: all a tenant's runs, or its runs of one assistant.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct SlotPool {
    /// The tenant the pool belongs to: every pool lies under one, so one
    /// tenant's limits never count another's runs.
    pub tenant: TenantId,
    /// The assistant (agent spec name) the pool counts; `None` for the
    /// tenant's own pool, which counts all its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl SlotPool {
    /// The pool's name in logs, errors and the store's pool list:
    /// `tenant` or `tenant/agent` (tenant ids hold no `/`).
    pub fn name(&self) -> String {
        match &self.agent {
            Some(agent) => format!("{}/{agent}", self.tenant),
            None => self.tenant.to_string(),
        }
    }

    /// The pool [`SlotPool::name`] names; `None` for a name no pool has.
    pub fn parse(name: &str) -> Option<Self> {
        let (tenant, agent) = match name.split_once('/') {
            Some((tenant, agent)) if !agent.is_empty() => (tenant, Some(agent.to_owned())),
            Some(_) => return None,
            None => (name, None),
        };
        let tenant = TenantId::new(tenant.to_owned()).ok()?;
        Some(SlotPool { tenant, agent })
    }
}

/// One bound on runs in flight: the pool a run takes a slot of, and how
/// many slots it has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConcurrencyLimit {
    /// The pool.
    #[serde(flatten)]
    pub pool: SlotPool,
    /// How many runs of the pool may be in flight at once (at least 1).
    pub limit: u32,
}

impl ConcurrencyLimit {
    /// The pool of all `tenant`'s runs.
    pub fn tenant(tenant: TenantId, limit: u32) -> Self {
        ConcurrencyLimit {
            pool: SlotPool {
                tenant,
                agent: None,
            },
            limit: limit.max(1),
        }
    }

    /// The pool of `tenant`'s runs of `agent`.
    pub fn agent(tenant: TenantId, agent: impl Into<String>, limit: u32) -> Self {
        ConcurrencyLimit {
            pool: SlotPool {
                tenant,
                agent: Some(agent.into()),
            },
            limit: limit.max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_are_named_under_their_tenant_and_parsed_back() {
        let acme = TenantId::new("acme".to_owned()).unwrap();
        let tenant = ConcurrencyLimit::tenant(acme.clone(), 5);
        assert_eq!(tenant.pool.name(), "acme");
        let agent = ConcurrencyLimit::agent(acme, "research/v2", 0);
        assert_eq!(agent.pool.name(), "acme/research/v2");
        assert_eq!(agent.limit, 1);
        for pool in [&tenant.pool, &agent.pool] {
            assert_eq!(SlotPool::parse(&pool.name()).as_ref(), Some(pool));
        }
        assert_eq!(SlotPool::parse("acme/"), None);
        assert_eq!(SlotPool::parse("not a tenant"), None);
    }

    #[test]
    fn a_limit_is_flat_on_the_wire() {
        let acme = TenantId::new("acme".to_owned()).unwrap();
        let json = serde_json::to_value(ConcurrencyLimit::agent(acme, "r", 3)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"tenant": "acme", "agent": "r", "limit": 3})
        );
    }
}
