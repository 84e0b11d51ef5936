//! Backoff of failed steps.

use std::time::Duration;

use rand::Rng;

/// How often a failing step is retried, and how long to wait.
#[derive(Debug, Clone, Copy)]
pub struct RetryConfig {
    /// Deliveries of one step before its run fails.
    pub max_attempts: u32,
    /// First backoff.
    pub base_delay: Duration,
    /// Longest backoff.
    pub max_delay: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryConfig {
    /// Exponential backoff with full jitter for the retry after `attempt`.
    pub(super) fn delay(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base_delay
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_delay);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::rng().random_range(millis / 2..=millis.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_within_jitter_and_stop_at_the_cap() {
        let retry = RetryConfig {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1_000),
        };
        for attempt in 0..8 {
            let ceiling = (100u64 << attempt).min(1_000);
            for _ in 0..50 {
                let delay = retry.delay(attempt).as_millis() as u64;
                assert!(
                    (ceiling / 2..=ceiling).contains(&delay),
                    "attempt {attempt}: {delay} ms"
                );
            }
        }
    }
}
