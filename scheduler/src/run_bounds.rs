//! What bounds a new run besides its spec: its deadline and the budgets
//! it spends from. The scheduler fixes both on the run's record when the
//! run is created ([`deepfleet_proto::RunRecord::timeout_secs`],
//! [`deepfleet_proto::RunRecord::budgets`]); workers enforce them before
//! every step, and subagents inherit them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_proto::run::DEFAULT_RUN_TIMEOUT_SECS;
use deepfleet_proto::{AgentSpec, Budget, RunRecord, TenantId};

/// The fleet's bounds of new runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBounds {
    /// Seconds a run may take when neither its spec nor its request says.
    pub run_timeout_secs: u64,
    /// What each tenant may spend per UTC day, in nano-dollars; a tenant
    /// not listed has no daily budget.
    pub tenant_daily_nano_usd: BTreeMap<TenantId, u64>,
}

impl Default for RunBounds {
    fn default() -> Self {
        RunBounds {
            run_timeout_secs: DEFAULT_RUN_TIMEOUT_SECS,
            tenant_daily_nano_usd: BTreeMap::new(),
        }
    }
}

impl RunBounds {
    /// Fixes `run`'s deadline allowance and budgets, created at `now`
    /// for `spec`: the request's timeout (a task line's or an API
    /// request's) over the spec's over the fleet's; the tenant's budget
    /// for today, and `batch`'s when given.
    pub fn apply(
        &self,
        run: &mut RunRecord,
        spec: &AgentSpec,
        requested_timeout_secs: Option<u64>,
        batch: Option<Budget>,
        now: DateTime<Utc>,
    ) {
        run.timeout_secs = Some(
            requested_timeout_secs
                .or(spec.limits.run_timeout_secs)
                .unwrap_or(self.run_timeout_secs)
                .max(1),
        );
        run.budgets = batch.into_iter().collect();
        if let Some(&limit) = self.tenant_daily_nano_usd.get(&run.tenant) {
            let day = now.format("%Y-%m-%d").to_string();
            run.budgets
                .push(Budget::tenant_day(run.tenant.as_str(), &day, limit));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn spec(yaml: &str) -> AgentSpec {
        AgentSpec::from_yaml(yaml).unwrap()
    }

    #[test]
    fn the_request_wins_over_the_spec_over_the_fleet() {
        let bounds = RunBounds::default();
        let now = Utc::now();
        let plain = spec("name: a\nmodel: openai:x\n");
        let limited = spec("name: a\nmodel: openai:x\nlimits:\n  run_timeout_secs: 60\n");
        let mut run = RunRecord::new("r", "t", "a", now);
        bounds.apply(&mut run, &plain, None, None, now);
        assert_eq!(run.timeout_secs, Some(DEFAULT_RUN_TIMEOUT_SECS));
        bounds.apply(&mut run, &limited, None, None, now);
        assert_eq!(run.timeout_secs, Some(60));
        bounds.apply(&mut run, &limited, Some(5), None, now);
        assert_eq!(run.timeout_secs, Some(5));
    }

    #[test]
    fn a_run_spends_from_its_batch_and_its_tenants_day() {
        let acme = TenantId::new("acme").unwrap();
        let bounds = RunBounds {
            tenant_daily_nano_usd: BTreeMap::from([(acme.clone(), 5_000)]),
            ..RunBounds::default()
        };
        let now = "2026-12-02T10:00:00Z".parse().unwrap();
        let plain = spec("name: a\nmodel: openai:x\n");
        let mut run = RunRecord {
            tenant: acme,
            ..RunRecord::new("r", "t", "a", now)
        };
        bounds.apply(&mut run, &plain, None, Some(Budget::batch("b1", 900)), now);
        assert_eq!(
            run.budgets,
            vec![
                Budget::batch("b1", 900),
                Budget::tenant_day("acme", "2026-12-02", 5_000)
            ]
        );
        let mut other = RunRecord::new("r2", "t2", "a", now);
        bounds.apply(&mut other, &plain, None, None, now);
        assert!(other.budgets.is_empty());
    }
}
