//! [`RateGate`]: what the transport holds of the rate limiter, and the
//! three moments of a call it takes part in: before it is sent
//! ([`RateGate::admit`]), when its answer's headers arrive
//! ([`RateGate::observe`]), and when its usage is known
//! ([`RateGate::settle`]).
//!
//! A limiter that cannot be reached lets calls through, logged: the
//! providers' own 429s still protect them, and a fleet must not stop
//! because its limiter's store hiccupped.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use deepfleet_proto::Usage;
use reqwest::header::HeaderMap;
use sha2::{Digest, Sha256};

use super::output::OutputEstimate;
use super::unmetered::Unmetered;
use super::{Acquired, Cost, LimitKey, LimiterObserver, RateLimiter, RateLimits, headers};
use crate::{ErrorKind, ModelError, ModelRequest};

/// The limiter, its limits and its observer, shared by every client.
#[derive(Clone)]
pub struct RateGate {
    limiter: Arc<dyn RateLimiter>,
    limits: Arc<RateLimits>,
    output: Arc<OutputEstimate>,
    unmetered: Arc<Unmetered>,
    observer: Option<Arc<dyn LimiterObserver>>,
}

impl fmt::Debug for RateGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateGate")
            .field("limiter", &self.limiter)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// An account's name in limiter keys and metrics: the first 16 hex
/// digits of the key's SHA-256 (never the key), or the base URL when the
/// provider takes none.
pub fn account_of(api_key: Option<&str>, base_url: &str) -> String {
    match api_key {
        Some(key) => {
            let digest = Sha256::digest(key.as_bytes());
            digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
        }
        None => base_url.trim_end_matches('/').to_owned(),
    }
}

impl RateGate {
    /// A gate over `limiter` under `limits`.
    pub fn new(limiter: Arc<dyn RateLimiter>, limits: RateLimits) -> Self {
        RateGate {
            limiter,
            output: Arc::new(OutputEstimate::new(limits.expected_output_tokens())),
            limits: Arc::new(limits),
            unmetered: Arc::default(),
            observer: None,
        }
    }

    /// Reports waits, 429s and levels to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn LimiterObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// What `request` is assumed to take on `key` before it is sent: its
    /// counted input, and the output this account and model have been
    /// answering (never above the request's `max_output_tokens`).
    pub fn cost_of(&self, key: &LimitKey, request: &ModelRequest) -> Cost {
        let input = request
            .rate
            .estimated_input_tokens
            .unwrap_or_else(|| rough_input_tokens(request));
        let expected = self.output.expected(key);
        let output = request
            .max_output_tokens
            .map_or(expected, |most| most.min(expected));
        Cost::call(input, output)
    }

    /// Waits for capacity for `request`, or fails with
    /// [`ErrorKind::AwaitingCapacity`] (its `retry_after` the wait) when
    /// the wait is longer than the gate's `max_wait` and the request names
    /// a claim to keep its slot under. Returns what was taken: nothing on
    /// a key nothing meters.
    pub async fn admit(&self, key: &LimitKey, request: &ModelRequest) -> Result<Cost, ModelError> {
        if self.unmetered.holds(key) {
            return Ok(Cost::default());
        }
        let cost = self.cost_of(key, request);
        let limits = self.limits.of(&key.provider, &key.model);
        let acquired = self
            .limiter
            .acquire(
                key,
                &limits,
                cost,
                request.rate.claim.as_deref(),
                self.limits.max_wait(),
            )
            .await;
        match acquired {
            Ok(Acquired::Go(wait)) => {
                if !wait.is_zero() {
                    if let Some(observer) = &self.observer {
                        observer.waited(key, wait);
                    }
                    tokio::time::sleep(wait).await;
                }
                Ok(cost)
            }
            Ok(Acquired::Unmetered) => {
                self.unmetered.found_now(key);
                Ok(Cost::default())
            }
            Ok(Acquired::Later(wait)) => Err(ModelError {
                retry_after: Some(wait),
                ..ModelError::new(
                    ErrorKind::AwaitingCapacity,
                    format!("no capacity at {key} for {} ms", wait.as_millis()),
                )
            }),
            Err(error) => {
                tracing::warn!(%key, %error, "rate limiter unreachable; calling without it");
                Ok(Cost::default())
            }
        }
    }

    /// Applies what an answer's `headers` (with `status`) say of the
    /// account, and counts a 429.
    pub async fn observe(&self, key: &LimitKey, status: u16, headers: &HeaderMap) {
        let observed = headers::observed(status, headers, SystemTime::now());
        if status == 429
            && let Some(observer) = &self.observer
        {
            observer.throttled(key);
        }
        if observed.is_empty() {
            return;
        }
        self.unmetered.forget(key);
        let limits = self.limits.of(&key.provider, &key.model);
        match self.limiter.observe(key, &limits, &observed).await {
            Ok(levels) => {
                if let Some(observer) = &self.observer {
                    observer.levels(key, levels);
                }
            }
            Err(error) => tracing::warn!(%key, %error, "rate limiter unreachable"),
        }
    }

    /// Learns from the `used` tokens a call's provider reported how much
    /// output its next calls are likely to take.
    pub fn learn(&self, key: &LimitKey, used: Option<&Usage>) {
        if let Some(usage) = reported(used) {
            self.output.learn(key, usage.output_tokens);
        }
    }

    /// Corrects what `taken` assumed with the `used` tokens the provider
    /// reported; a call without usage (it failed, or its provider reports
    /// none: all zeros) gives its output back and keeps its input. A call
    /// that took nothing (nothing meters its account) has nothing to
    /// correct: [`Cost::is_none`].
    pub async fn settle(&self, key: &LimitKey, taken: Cost, used: Option<&Usage>) {
        if taken.is_none() {
            return;
        }
        let used = reported(used);
        let [_, _, input, output] = taken.0;
        let taken = Cost::tokens(input, output);
        let used = match used {
            Some(usage) => Cost::tokens(usage.input_tokens, usage.output_tokens),
            None => Cost::tokens(input, 0),
        };
        if taken == used {
            return;
        }
        let limits = self.limits.of(&key.provider, &key.model);
        if let Err(error) = self.limiter.record(key, &limits, taken, used).await {
            tracing::warn!(%key, %error, "rate limiter unreachable");
        }
    }

    /// Longest wait awaited in place.
    pub fn max_wait(&self) -> Duration {
        self.limits.max_wait()
    }
}

/// The usage a provider reported, if it reported any (all zeros: none).
fn reported(used: Option<&Usage>) -> Option<&Usage> {
    used.filter(|usage| usage.input_tokens > 0 || usage.output_tokens > 0)
}

/// A stand-in count (characters / 4) for a request whose caller counted
/// nothing; the reported usage corrects it.
fn rough_input_tokens(request: &ModelRequest) -> u64 {
    let chars: usize = request.system.len()
        + request
            .messages
            .iter()
            .map(|m| {
                m.content()
                    .iter()
                    .map(|b| match b {
                        deepfleet_proto::ContentBlock::Text { text } => text.len(),
                        deepfleet_proto::ContentBlock::Image { .. } => 340,
                    })
                    .sum::<usize>()
            })
            .sum::<usize>();
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use reqwest::header::HeaderValue;

    use super::*;
    use crate::ratelimit::{InProcessLimiter, LimitKey, LimiterError, Limits, Observed};

    #[test]
    fn accounts_hash_keys_and_name_keyless_hosts() {
        let account = account_of(Some("sk-secret"), "https://api.openai.com/v1");
        assert_eq!(account.len(), 16);
        assert!(!account.contains("secret"));
        assert_eq!(account, account_of(Some("sk-secret"), "elsewhere"));
        assert_ne!(account, account_of(Some("sk-other"), "elsewhere"));
        assert_eq!(
            account_of(None, "http://localhost:11434/"),
            "http://localhost:11434"
        );
    }

    /// The in-process limiter, counting the acquisitions that reach it.
    #[derive(Debug, Default)]
    struct Counting {
        inner: InProcessLimiter,
        acquired: AtomicUsize,
    }

    #[async_trait]
    impl RateLimiter for Counting {
        async fn acquire(
            &self,
            key: &LimitKey,
            limits: &Limits,
            cost: Cost,
            claim: Option<&str>,
            max_wait: Duration,
        ) -> Result<Acquired, LimiterError> {
            self.acquired.fetch_add(1, Ordering::Relaxed);
            self.inner.acquire(key, limits, cost, claim, max_wait).await
        }

        async fn record(
            &self,
            key: &LimitKey,
            limits: &Limits,
            taken: Cost,
            used: Cost,
        ) -> Result<(), LimiterError> {
            self.inner.record(key, limits, taken, used).await
        }

        async fn observe(
            &self,
            key: &LimitKey,
            limits: &Limits,
            observed: &Observed,
        ) -> Result<[Option<f64>; 4], LimiterError> {
            self.inner.observe(key, limits, observed).await
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: "".into(),
            messages: Vec::new(),
            tools: Arc::new([]),
            max_output_tokens: None,
            cache_key: None,
            cache_breakpoints: Vec::new(),
            purpose: Default::default(),
            sampling: Default::default(),
            rate: Default::default(),
        }
    }

    #[tokio::test]
    async fn an_unmetered_key_skips_the_limiter_until_an_answer_meters_it() {
        let limiter = Arc::new(Counting::default());
        let gate = RateGate::new(
            Arc::clone(&limiter) as Arc<dyn RateLimiter>,
            Default::default(),
        );
        let key = LimitKey {
            provider: "local".into(),
            account: "http://127.0.0.1:8000".into(),
            model: "m".into(),
        };
        for _ in 0..3 {
            assert_eq!(gate.admit(&key, &request()).await, Ok(Cost::default()));
        }
        assert_eq!(limiter.acquired.load(Ordering::Relaxed), 1);
        // The provider starts sending its limits: the next call is metered.
        let mut headers = HeaderMap::new();
        headers.insert("x-ratelimit-limit-requests", HeaderValue::from_static("60"));
        headers.insert(
            "x-ratelimit-remaining-requests",
            HeaderValue::from_static("59"),
        );
        gate.observe(&key, 200, &headers).await;
        let taken = gate.admit(&key, &request()).await.expect("admitted");
        assert_eq!(taken.0[0], 1, "a request is counted once metered");
        assert_eq!(limiter.acquired.load(Ordering::Relaxed), 2);
    }
}
