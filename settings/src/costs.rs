//! `[costs]`: what model calls cost and what tenants may spend. Workers
//! price every call with `prices` over the built-in table of list prices
//! ([`deepfleet_proto::Prices`]); the scheduler gives each new run of a
//! tenant listed in `tenant_daily_usd` that tenant's budget for the day.
//! A batch's own budget comes from `--budget-usd`.

use std::collections::BTreeMap;

use deepfleet_proto::{Price, Prices};
use serde::{Deserialize, Serialize};

/// Prices and tenants' budgets.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CostSettings {
    /// Prices in dollars per million tokens by model (`provider:model` or
    /// a model name, matched as its longest prefix), over the built-in
    /// table: `[costs.prices."gpt-4.1"] input = 2.0, output = 8.0,
    /// cached_input = 0.5`. Default: none (the built-in table).
    pub prices: BTreeMap<String, Price>,
    /// Dollars each listed tenant's runs may spend per UTC day
    /// (`[costs.tenant_daily_usd] acme = 50.0`); once spent, its open runs
    /// end `budget_exceeded` and new ones stop at their first step.
    /// Default: none (no tenant budget).
    pub tenant_daily_usd: BTreeMap<String, f64>,
}

impl CostSettings {
    /// The prices workers apply.
    pub fn prices(&self) -> Prices {
        Prices::default().with(&self.prices)
    }
}
