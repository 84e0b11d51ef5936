//! Retries of transient model failures: exponential backoff with full
//! jitter, honouring the provider's `Retry-After`.
//!
//! Full jitter (a uniform delay between zero and the exponential cap)
//! spreads a fleet of workers that hit the same rate limit at once, so they
//! do not come back in lockstep.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use crate::ModelError;

/// How often and how patiently a client retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Cap of the first retry's delay; doubles with each attempt.
    pub base_delay: Duration,
    /// Upper bound of any delay, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// A policy that makes one attempt only.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// How long to wait after failed attempt number `attempt` (1-based)
    /// before the next one, or `None` when `error` is not worth retrying or
    /// the attempts are used up.
    pub fn delay<R: Rng + ?Sized>(
        &self,
        attempt: u32,
        error: &ModelError,
        rng: &mut R,
    ) -> Option<Duration> {
        // A call awaiting capacity goes back to its caller, who gives its
        // worker slot up instead of sleeping in it.
        if !error.is_retryable()
            || error.kind == crate::ErrorKind::AwaitingCapacity
            || attempt >= self.max_attempts
        {
            return None;
        }
        if let Some(asked) = error.retry_after {
            // The provider knows best when capacity returns; jitter would
            // only make us early. The cap keeps one step from stalling.
            return Some(asked.min(self.max_delay));
        }
        let exponent = attempt.saturating_sub(1).min(31);
        let cap = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let nanos = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX);
        Some(Duration::from_nanos(rng.random_range(0..=nanos)))
    }

    /// Runs `attempt` until it succeeds, fails for good, or the attempts
    /// are used up; returns the last error then.
    pub async fn run<T, F, Fut>(&self, attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        self.run_while(|| true, attempt).await
    }

    /// Like [`RetryPolicy::run`], but stops retrying once `may_retry`
    /// says no: a stream that already delivered deltas cannot be replayed
    /// without the consumer seeing two answers.
    pub async fn run_while<T, F, Fut>(
        &self,
        may_retry: impl Fn() -> bool,
        mut attempt: F,
    ) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let error = match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            if !may_retry() {
                return Err(error);
            }
            // ThreadRng is not Send: draw the delay before awaiting.
            let Some(delay) = self.delay(attempts, &error, &mut rand::rng()) else {
                return Err(error);
            };
            tracing::warn!(
                attempt = attempts,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %error,
                "model call failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use pretty_assertions::assert_eq;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn error(kind: ErrorKind) -> ModelError {
        ModelError::new(kind, "x")
    }

    #[test]
    fn delays_stay_under_the_doubling_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        };
        let mut rng = StdRng::seed_from_u64(7);
        let caps = [100, 200, 400, 800, 1000, 1000];
        for (index, cap) in caps.into_iter().enumerate() {
            let attempt = u32::try_from(index).unwrap() + 1;
            for _ in 0..200 {
                let delay = policy
                    .delay(attempt, &error(ErrorKind::Server), &mut rng)
                    .unwrap();
                assert!(delay <= Duration::from_millis(cap), "{attempt}: {delay:?}");
            }
        }
    }

    #[test]
    fn jitter_is_deterministic_for_a_seed_and_spread_out() {
        let policy = RetryPolicy::default();
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            (1..4)
                .map(|attempt| policy.delay(attempt, &error(ErrorKind::Timeout), &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        let mut rng = StdRng::seed_from_u64(3);
        let delays: Vec<Duration> = (0..100)
            .map(|_| {
                policy
                    .delay(3, &error(ErrorKind::Timeout), &mut rng)
                    .unwrap()
            })
            .collect();
        // Full jitter: both halves of [0, 2 s] are used.
        assert!(delays.iter().any(|d| *d < Duration::from_secs(1)));
        assert!(delays.iter().any(|d| *d > Duration::from_secs(1)));
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let policy = RetryPolicy::default();
        let mut rng = StdRng::seed_from_u64(0);
        let mut limited = error(ErrorKind::RateLimited);
        limited.retry_after = Some(Duration::from_secs(3));
        assert_eq!(
            policy.delay(1, &limited, &mut rng),
            Some(Duration::from_secs(3))
        );
        limited.retry_after = Some(Duration::from_secs(600));
        assert_eq!(policy.delay(1, &limited, &mut rng), Some(policy.max_delay));
    }

    #[test]
    fn stops_on_permanent_errors_and_after_the_last_attempt() {
        let policy = RetryPolicy::default();
        let mut rng = StdRng::seed_from_u64(0);
        for kind in [
            ErrorKind::Auth,
            ErrorKind::BadRequest,
            ErrorKind::ContextOverflow,
        ] {
            assert_eq!(policy.delay(1, &error(kind), &mut rng), None);
        }
        assert!(
            policy
                .delay(3, &error(ErrorKind::Server), &mut rng)
                .is_some()
        );
        assert_eq!(policy.delay(4, &error(ErrorKind::Server), &mut rng), None);
        assert_eq!(
            RetryPolicy::none().delay(1, &error(ErrorKind::Server), &mut rng),
            None
        );
    }

    #[tokio::test]
    async fn run_retries_until_success() {
        let quick = RetryPolicy {
            base_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        };
        let calls = AtomicU32::new(0);
        let result = quick
            .run(|| async {
                match calls.fetch_add(1, Ordering::SeqCst) {
                    0 | 1 => Err(error(ErrorKind::Overloaded)),
                    n => Ok(n),
                }
            })
            .await;
        assert_eq!(result, Ok(2));
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = quick
            .run(|| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(error(ErrorKind::Auth))
            })
            .await;
        assert_eq!(result.unwrap_err().kind, ErrorKind::Auth);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn run_while_stops_once_retrying_is_ruled_out() {
        let quick = RetryPolicy {
            base_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        };
        let calls = AtomicU32::new(0);
        let result: Result<(), _> = quick
            .run_while(
                || calls.load(Ordering::SeqCst) < 2,
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(error(ErrorKind::Server))
                },
            )
            .await;
        assert_eq!(result.unwrap_err().kind, ErrorKind::Server);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
