//! [`InProcessLimiter`]: the buckets in this process's memory, for an
//! embedded fleet (one process is the whole fleet) and for tests.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{Acquired, Buckets, Cost, LimitKey, LimiterError, Limits, Observed, RateLimiter};

/// Buckets and claims behind one lock, on a monotonic clock.
#[derive(Debug)]
pub struct InProcessLimiter {
    start: Instant,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    buckets: HashMap<LimitKey, Buckets>,
    /// Kept slots by claim: when each may go, on this limiter's clock.
    claims: HashMap<String, u64>,
}

impl Default for InProcessLimiter {
    fn default() -> Self {
        InProcessLimiter::new()
    }
}

impl InProcessLimiter {
    /// An empty limiter: every bucket starts full.
    pub fn new() -> Self {
        InProcessLimiter {
            start: Instant::now(),
            state: Mutex::new(State::default()),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl RateLimiter for InProcessLimiter {
    async fn acquire(
        &self,
        key: &LimitKey,
        limits: &Limits,
        cost: Cost,
        claim: Option<&str>,
        max_wait: Duration,
    ) -> Result<Acquired, LimiterError> {
        let now = self.now_ms();
        let max_wait_ms = u64::try_from(max_wait.as_millis()).unwrap_or(u64::MAX);
        let mut state = self.state();
        let blocked = state.buckets.get(key).map_or(0, Buckets::blocked_until_ms);
        if let Some(at) = claim.and_then(|claim| state.claims.get(claim).copied()) {
            // A 429 since the slot was promised moves it past the block.
            let wait = at.max(blocked).saturating_sub(now);
            if wait <= max_wait_ms {
                if let Some(claim) = claim {
                    state.claims.remove(claim);
                }
                return Ok(Acquired::Go(Duration::from_millis(wait)));
            }
            return Ok(Acquired::Later(Duration::from_millis(wait)));
        }
        let buckets = state.buckets.entry(key.clone()).or_default();
        if !buckets.meters(limits, now) {
            return Ok(Acquired::Unmetered);
        }
        let wait = buckets.take(limits, cost, now);
        match claim {
            Some(claim) if wait > max_wait_ms => {
                state.claims.insert(claim.to_owned(), now + wait);
                Ok(Acquired::Later(Duration::from_millis(wait)))
            }
            _ => Ok(Acquired::Go(Duration::from_millis(wait))),
        }
    }

    async fn record(
        &self,
        key: &LimitKey,
        limits: &Limits,
        taken: Cost,
        used: Cost,
    ) -> Result<(), LimiterError> {
        let now = self.now_ms();
        self.state()
            .buckets
            .entry(key.clone())
            .or_default()
            .give(limits, taken, used, now);
        Ok(())
    }

    async fn observe(
        &self,
        key: &LimitKey,
        limits: &Limits,
        observed: &Observed,
    ) -> Result<[Option<f64>; 4], LimiterError> {
        let now = self.now_ms();
        Ok(self
            .state()
            .buckets
            .entry(key.clone())
            .or_default()
            .observe(limits, observed, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn key() -> LimitKey {
        LimitKey {
            provider: "openai".into(),
            account: "abc".into(),
            model: "gpt".into(),
        }
    }

    const RPM_60: Limits = Limits {
        requests_per_minute: Some(60),
        tokens_per_minute: None,
        input_tokens_per_minute: None,
        output_tokens_per_minute: None,
    };

    #[tokio::test]
    async fn a_long_wait_is_kept_under_its_claim_and_found_again() {
        let limiter = InProcessLimiter::new();
        let max = Duration::from_secs(2);
        for _ in 0..59 {
            let got = limiter
                .acquire(&key(), &RPM_60, Cost::call(0, 0), None, max)
                .await;
            assert_eq!(got, Ok(Acquired::Go(Duration::ZERO)));
        }
        let Ok(Acquired::Later(first)) = limiter
            .acquire(
                &key(),
                &RPM_60,
                Cost::call(0, 0),
                Some("t:1"),
                Duration::ZERO,
            )
            .await
        else {
            panic!("the 60th call must wait");
        };
        assert!(first > Duration::from_millis(900), "{first:?}");
        // Asking again under the claim takes nothing more.
        let Ok(Acquired::Later(again)) = limiter
            .acquire(
                &key(),
                &RPM_60,
                Cost::call(0, 0),
                Some("t:1"),
                Duration::ZERO,
            )
            .await
        else {
            panic!("the claim must still wait");
        };
        assert!(again <= first);
        let got = limiter
            .acquire(&key(), &RPM_60, Cost::call(0, 0), Some("t:1"), max)
            .await;
        assert!(matches!(got, Ok(Acquired::Go(w)) if w <= first), "{got:?}");
        // The next caller queues behind the claimed slot, not in it.
        let Ok(Acquired::Go(next)) = limiter
            .acquire(&key(), &RPM_60, Cost::call(0, 0), None, max)
            .await
        else {
            panic!("without a claim the caller waits in place");
        };
        assert!(next > first, "{next:?} {first:?}");
    }

    #[tokio::test]
    async fn a_429_blocks_every_caller_and_claimed_slots() {
        let limiter = InProcessLimiter::new();
        let max = Duration::from_secs(1);
        let throttled = Observed {
            blocked_for: Some(Duration::from_secs(20)),
            ..Observed::default()
        };
        limiter
            .observe(&key(), &Limits::default(), &throttled)
            .await
            .unwrap();
        let got = limiter
            .acquire(&key(), &Limits::default(), Cost::call(1, 1), Some("c"), max)
            .await;
        assert!(
            matches!(got, Ok(Acquired::Later(w)) if w > Duration::from_secs(19)),
            "{got:?}"
        );
        let other = LimitKey {
            model: "other".into(),
            ..key()
        };
        let got = limiter
            .acquire(&other, &Limits::default(), Cost::call(1, 1), Some("d"), max)
            .await;
        assert_eq!(got, Ok(Acquired::Unmetered));
    }
}
