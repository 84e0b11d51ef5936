//! What model calls cost, and the budgets that bound it.
//!
//! Costs are whole nano-dollars (`u64`): sums of them are exact, so the
//! costs of a batch's result lines add up to its account's total to the
//! last digit, which floating-point dollars would not.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Nano-dollars per dollar.
pub const NANOS_PER_USD: f64 = 1e9;

/// Dollars of `nanos`, for result lines, the API and metrics.
pub fn usd(nanos: u64) -> f64 {
    nanos as f64 / NANOS_PER_USD
}

/// Nano-dollars of `usd`, rounded; negative or non-finite amounts are 0.
pub fn nanos(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * NANOS_PER_USD).round() as u64
    } else {
        0
    }
}

/// A model's prices, in dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens not served from the provider's cache.
    pub input: f64,
    /// Completion tokens (reasoning included).
    pub output: f64,
    /// Prompt tokens served from the cache; the input price when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

impl Price {
    /// What `usage` costs at this price, in nano-dollars. A million tokens
    /// at a dollar is 10^9 nano-dollars, so a token at `p` dollars per
    /// million is `p * 1000` nano-dollars.
    pub fn cost(&self, usage: &Usage) -> u64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        let per_token = |per_million: f64| per_million * 1_000.0;
        let total = fresh as f64 * per_token(self.input)
            + cached as f64 * per_token(self.cached_input.unwrap_or(self.input))
            + usage.output_tokens as f64 * per_token(self.output);
        nanos(total / NANOS_PER_USD)
    }
}

/// Prices by model: entries are `provider:model` or a bare model name,
/// and a name matches the entry that is its longest prefix, so
/// `claude-sonnet-4` prices `claude-sonnet-4-5-20250929` too. A model
/// with no entry costs nothing (and says so in the logs once per worker,
/// where it is looked up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Prices(BTreeMap<String, Price>);

impl Default for Prices {
    /// List prices of the providers' common models (dollars per million
    /// tokens, late 2026); `[prices]` in the configuration overrides or
    /// adds entries.
    fn default() -> Self {
        let entries: [(&str, f64, f64, Option<f64>); 16] = [
            ("gpt-4o", 2.5, 10.0, Some(1.25)),
            ("gpt-4o-mini", 0.15, 0.6, Some(0.075)),
            ("gpt-4.1", 2.0, 8.0, Some(0.5)),
            ("gpt-4.1-mini", 0.4, 1.6, Some(0.1)),
            ("gpt-4.1-nano", 0.1, 0.4, Some(0.025)),
            ("gpt-5", 1.25, 10.0, Some(0.125)),
            ("gpt-5-mini", 0.25, 2.0, Some(0.025)),
            ("o3", 2.0, 8.0, Some(0.5)),
            ("o4-mini", 1.1, 4.4, Some(0.275)),
            ("claude-opus-4", 15.0, 75.0, Some(1.5)),
            ("claude-sonnet-4", 3.0, 15.0, Some(0.3)),
            ("claude-haiku-4", 1.0, 5.0, Some(0.1)),
            ("claude-3-5-haiku", 0.8, 4.0, Some(0.08)),
            ("gemini-2.5-pro", 1.25, 10.0, Some(0.31)),
            ("gemini-2.5-flash", 0.3, 2.5, Some(0.075)),
            ("gemini-2.5-flash-lite", 0.1, 0.4, Some(0.025)),
        ];
        Prices(
            entries
                .into_iter()
                .map(|(model, input, output, cached_input)| {
                    (
                        model.to_owned(),
                        Price {
                            input,
                            output,
                            cached_input,
                        },
                    )
                })
                .collect(),
        )
    }
}

impl Prices {
    /// No prices at all: every call costs nothing.
    pub fn none() -> Self {
        Prices(BTreeMap::new())
    }

    /// These prices with `overrides` on top (an entry replaces the one of
    /// the same name).
    pub fn with(mut self, overrides: &BTreeMap<String, Price>) -> Self {
        self.0
            .extend(overrides.iter().map(|(k, v)| (k.clone(), *v)));
        self
    }

    /// The price of `model` (a provider's model name) called through
    /// `provider`: the longest entry that prefixes `provider:model`, or
    /// else `model`.
    pub fn price(&self, provider: &str, model: &str) -> Option<&Price> {
        let qualified = format!("{provider}:{model}");
        longest_prefix(&self.0, &qualified).or_else(|| longest_prefix(&self.0, model))
    }

    /// What `usage` of `model` through `provider` costs, in nano-dollars
    /// (0 for an unpriced model).
    pub fn cost(&self, provider: &str, model: &str, usage: &Usage) -> u64 {
        self.price(provider, model).map_or(0, |p| p.cost(usage))
    }
}

fn longest_prefix<'a>(table: &'a BTreeMap<String, Price>, name: &str) -> Option<&'a Price> {
    table
        .iter()
        .filter(|(entry, _)| name.starts_with(entry.as_str()))
        .max_by_key(|(entry, _)| entry.len())
        .map(|(_, price)| price)
}

/// A budget a run spends from: an account (a batch's, a tenant's day)
/// and its limit. Every run of the account carries it, subagents
/// included; a run whose account has spent its limit takes no further
/// step and ends `budget_exceeded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Budget {
    /// The account ([`Budget::batch`], [`Budget::tenant_day`]).
    pub account: String,
    /// What the account may spend, in nano-dollars.
    pub limit_nano_usd: u64,
}

impl Budget {
    /// The budget of batch `batch_id`.
    pub fn batch(batch_id: &str, limit_nano_usd: u64) -> Self {
        Budget {
            account: format!("batch:{batch_id}"),
            limit_nano_usd,
        }
    }

    /// The budget of `tenant` for the UTC day `day` (`YYYY-MM-DD`).
    pub fn tenant_day(tenant: &str, day: &str, limit_nano_usd: u64) -> Self {
        Budget {
            account: format!("tenant:{tenant}:{day}"),
            limit_nano_usd,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn usage(input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
        }
    }

    #[test]
    fn a_million_tokens_cost_the_listed_price() {
        let price = Price {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
        };
        assert_eq!(price.cost(&usage(1_000_000, 0, 0)), 3_000_000_000);
        assert_eq!(price.cost(&usage(0, 0, 1_000_000)), 15_000_000_000);
        // Cached tokens are part of the input, at their own price.
        assert_eq!(price.cost(&usage(1_000_000, 1_000_000, 0)), 300_000_000);
        assert_eq!(price.cost(&usage(1_000, 0, 100)), 4_500_000);
    }

    #[test]
    fn the_longest_prefix_prices_a_model() {
        let prices = Prices::default();
        assert_eq!(
            prices
                .price("openai", "gpt-4.1-mini-2025-04-14")
                .unwrap()
                .input,
            0.4
        );
        assert_eq!(prices.price("openai", "gpt-4.1").unwrap().input, 2.0);
        assert_eq!(
            prices
                .price("anthropic", "claude-sonnet-4-5-20250929")
                .unwrap()
                .output,
            15.0
        );
        assert!(prices.price("openai", "my-finetune").is_none());
        assert_eq!(prices.cost("openai", "my-finetune", &usage(10, 0, 10)), 0);
    }

    #[test]
    fn overrides_replace_and_add_and_a_provider_entry_wins() {
        let overrides = BTreeMap::from([
            (
                "gpt-4.1".to_owned(),
                Price {
                    input: 1.0,
                    output: 1.0,
                    cached_input: None,
                },
            ),
            (
                "azure:gpt-4.1".to_owned(),
                Price {
                    input: 9.0,
                    output: 9.0,
                    cached_input: None,
                },
            ),
        ]);
        let prices = Prices::default().with(&overrides);
        assert_eq!(prices.price("openai", "gpt-4.1").unwrap().input, 1.0);
        assert_eq!(prices.price("azure", "gpt-4.1").unwrap().input, 9.0);
        // An unset cached price is the input price.
        assert_eq!(
            prices.cost("openai", "gpt-4.1", &usage(1_000_000, 500_000, 0)),
            1_000_000_000
        );
    }

    #[test]
    fn dollars_and_nanos_round_trip() {
        assert_eq!(nanos(0.25), 250_000_000);
        assert_eq!(usd(250_000_000), 0.25);
        assert_eq!(nanos(-1.0), 0);
        assert_eq!(nanos(f64::NAN), 0);
    }
}
