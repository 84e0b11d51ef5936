//! The rate limiter's reports ([`LimiterObserver`]) as updates of the
//! fleet's [`Metrics`]: waits, 429s, and the limiter's view per account
//! and model.

use std::sync::Arc;
use std::time::Duration;

use deepfleet_fleet::Metrics;
use deepfleet_model::ratelimit::{Dimension, LimitKey, LimiterObserver};

/// [`Metrics`] as the rate gate's observer.
pub struct LimiterMetrics(pub Arc<Metrics>);

impl LimiterObserver for LimiterMetrics {
    fn waited(&self, _key: &LimitKey, wait: Duration) {
        self.0.rate_limit_wait(wait);
    }

    fn throttled(&self, key: &LimitKey) {
        self.0.rate_limited_call(&key.provider, &key.model);
    }

    fn levels(&self, key: &LimitKey, levels: [Option<f64>; 4]) {
        for dimension in Dimension::ALL {
            if let Some(level) = levels[dimension.index()] {
                self.0.rate_limiter_remaining(
                    &key.provider,
                    &key.account,
                    &key.model,
                    dimension.as_str(),
                    level,
                );
            }
        }
    }
}
