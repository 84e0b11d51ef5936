//! [`RateLimitsConfig`]: the `[rate_limits]` table, and [`RateLimits`],
//! the limits of each provider and model it resolves to.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Limits;

/// Longest wait for capacity a call awaits in place by default; a longer
/// one gives its worker slot back (the step is deferred).
pub const DEFAULT_MAX_WAIT_MS: u64 = 2_000;

/// Output tokens a call is assumed to use before any usage of its account
/// and model is reported; then their running average stands in.
pub const DEFAULT_EXPECTED_OUTPUT_TOKENS: u64 = 1_000;

/// `[rate_limits]`: per-minute limits by provider account and model.
/// Unset = no limit but what the providers' headers teach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitsConfig {
    /// Longest wait for capacity a step awaits while holding its worker
    /// slot, in milliseconds; a longer one defers the step. Default 2000.
    pub max_wait_ms: u64,
    /// Output tokens a call is assumed to use before any usage of its
    /// account and model is reported (then the running average of the
    /// reported output stands in); never above a request's
    /// `max_output_tokens`. Default 1000.
    pub expected_output_tokens: u64,
    /// Limits of every provider and model not listed below.
    pub default: Limits,
    /// Limits by provider name (`openai`), over `default`.
    pub providers: HashMap<String, Limits>,
    /// Limits by `provider:model` (`openai:gpt-4.1`), over the provider's.
    pub models: HashMap<String, Limits>,
}

impl Default for RateLimitsConfig {
    fn default() -> Self {
        RateLimitsConfig {
            max_wait_ms: DEFAULT_MAX_WAIT_MS,
            expected_output_tokens: DEFAULT_EXPECTED_OUTPUT_TOKENS,
            default: Limits::default(),
            providers: HashMap::new(),
            models: HashMap::new(),
        }
    }
}

/// The resolved table: what each provider and model is limited to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateLimits {
    config: RateLimitsConfig,
}

impl From<RateLimitsConfig> for RateLimits {
    fn from(config: RateLimitsConfig) -> Self {
        RateLimits { config }
    }
}

impl RateLimits {
    /// The limits of `model` at `provider`: the default, overlaid with the
    /// provider's, overlaid with the model's.
    pub fn of(&self, provider: &str, model: &str) -> Limits {
        let mut limits = self.config.default;
        if let Some(over) = self.config.providers.get(provider) {
            limits = limits.overlaid(over);
        }
        if let Some(over) = self.config.models.get(&format!("{provider}:{model}")) {
            limits = limits.overlaid(over);
        }
        limits
    }

    /// Longest wait awaited in place.
    pub fn max_wait(&self) -> Duration {
        Duration::from_millis(self.config.max_wait_ms)
    }

    /// The output tokens assumed of a call with no cap.
    pub fn expected_output_tokens(&self) -> u64 {
        self.config.expected_output_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn model_limits_overlay_provider_limits_overlay_the_default() {
        let config: RateLimitsConfig = serde_json::from_value(serde_json::json!({
            "default": {"requests_per_minute": 100},
            "providers": {"openai": {"requests_per_minute": 600, "tokens_per_minute": 90000}},
            "models": {"openai:gpt-4.1-mini": {"tokens_per_minute": 200000}},
        }))
        .unwrap();
        let table = RateLimits::from(config);
        assert_eq!(
            table.of("openai", "gpt-4.1-mini"),
            Limits {
                requests_per_minute: Some(600),
                tokens_per_minute: Some(200_000),
                ..Limits::default()
            }
        );
        assert_eq!(table.of("anthropic", "x").requests_per_minute, Some(100));
        assert!(RateLimits::default().of("openai", "gpt").is_empty());
        assert_eq!(table.max_wait(), Duration::from_millis(DEFAULT_MAX_WAIT_MS));
    }
}
