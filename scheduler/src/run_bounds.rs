//! What bounds a new run besides its spec: its deadline, the budgets it
//! spends from and the concurrency limits it counts against. The
//! scheduler fixes them on the run's record when the run is created
//! ([`deepfleet_proto::RunRecord::timeout_secs`],
//! [`deepfleet_proto::RunRecord::budgets`],
//! [`deepfleet_proto::RunRecord::concurrency`]); workers enforce them
//! before every step. Subagents inherit the deadline and the budgets, and
//! work under their parent's concurrency slots.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use deepfleet_proto::run::DEFAULT_RUN_TIMEOUT_SECS;
use deepfleet_proto::{AgentSpec, Budget, ConcurrencyLimit, RunRecord, TenantId};

/// The fleet's bounds of new runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunBounds {
    /// Seconds a run may take when neither its spec nor its request says.
    pub run_timeout_secs: u64,
    /// What each tenant may spend per UTC day, in nano-dollars; a tenant
    /// not listed has no daily budget.
    pub tenant_daily_nano_usd: BTreeMap<TenantId, u64>,
    /// How many runs a tenant not in `tenant_concurrency` may have in
    /// flight at once; `None`: no limit.
    pub default_tenant_concurrency: Option<u32>,
    /// How many runs each listed tenant may have in flight at once; `0`:
    /// no limit for that tenant.
    pub tenant_concurrency: BTreeMap<TenantId, u32>,
}

impl Default for RunBounds {
    fn default() -> Self {
        RunBounds {
            run_timeout_secs: DEFAULT_RUN_TIMEOUT_SECS,
            tenant_daily_nano_usd: BTreeMap::new(),
            default_tenant_concurrency: None,
            tenant_concurrency: BTreeMap::new(),
        }
    }
}

impl RunBounds {
    /// Fixes `run`'s deadline allowance, budgets and concurrency limits,
    /// created at `now` for `spec`: the request's timeout (a task line's
    /// or an API request's) over the spec's over the fleet's; the
    /// tenant's budget for today, and `batch`'s when given; the tenant's
    /// limit of runs in flight, and the spec's
    /// (`limits.max_concurrent_runs`, counted per tenant).
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
        let tenant_limit = match self.tenant_concurrency.get(&run.tenant) {
            Some(0) => None,
            Some(limit) => Some(*limit),
            None => self.default_tenant_concurrency,
        };
        run.concurrency = tenant_limit
            .map(|limit| ConcurrencyLimit::tenant(run.tenant.clone(), limit))
            .into_iter()
            .chain(
                spec.limits
                    .max_concurrent_runs
                    .map(|limit| ConcurrencyLimit::agent(run.tenant.clone(), &spec.name, limit)),
            )
            .collect();
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

    #[test]
    fn a_run_counts_against_its_tenants_limit_and_its_specs() {
        let acme = TenantId::new("acme").unwrap();
        let free = TenantId::new("free").unwrap();
        let bounds = RunBounds {
            default_tenant_concurrency: Some(10),
            tenant_concurrency: BTreeMap::from([(acme.clone(), 3), (free.clone(), 0)]),
            ..RunBounds::default()
        };
        let now = Utc::now();
        let limited = spec("name: a\nmodel: openai:x\nlimits: {max_concurrent_runs: 2}\n");
        let mut run = RunRecord {
            tenant: acme.clone(),
            ..RunRecord::new("r", "t", "a", now)
        };
        bounds.apply(&mut run, &limited, None, None, now);
        assert_eq!(
            run.concurrency,
            vec![
                ConcurrencyLimit::tenant(acme.clone(), 3),
                ConcurrencyLimit::agent(acme, "a", 2)
            ]
        );
        let mut other = RunRecord::new("r2", "t2", "a", now);
        bounds.apply(
            &mut other,
            &spec("name: a\nmodel: openai:x\n"),
            None,
            None,
            now,
        );
        assert_eq!(
            other.concurrency,
            vec![ConcurrencyLimit::tenant(TenantId::default(), 10)]
        );
        let mut free = RunRecord::new("r3", "t3", "a", now);
        RunBounds::default().apply(
            &mut free,
            &spec("name: a\nmodel: openai:x\n"),
            None,
            None,
            now,
        );
        assert!(free.concurrency.is_empty());
    }
}
