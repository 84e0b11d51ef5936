//! Provider-style rate limits of the scripted server: requests and tokens
//! per minute per API key and model, metered as providers meter them (a
//! bucket per limit holding one minute's worth, refilled continuously).
//!
//! A call that fits is answered with OpenAI's `x-ratelimit-*` headers
//! (limit, remaining, reset); one that does not gets a 429 with the same
//! headers and `Retry-After`, takes nothing, and is counted, so a test or
//! benchmark can say how many calls the server refused. A call's tokens
//! are its answer's reported usage (input and output), taken when it
//! arrives.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// Limits per API key and model; `None` = not limited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerLimits {
    /// Requests per minute.
    pub requests_per_minute: Option<u64>,
    /// Input plus output tokens per minute.
    pub tokens_per_minute: Option<u64>,
}

/// The server's buckets and its count of refusals.
#[derive(Debug)]
pub struct Enforcer {
    limits: ServerLimits,
    start: Instant,
    /// Each key and model's levels, and when they were brought up to date.
    buckets: Mutex<HashMap<(String, String), Levels>>,
    refused: AtomicU64,
    admitted: AtomicU64,
}

/// A key and model's levels (requests, tokens), and when they were
/// brought up to date.
type Levels = ([f64; 2], Duration);

/// A call's verdict: the headers to send, and whether it was refused
/// (with `Retry-After` among the headers).
pub struct Verdict {
    /// The rate-limit headers of the answer.
    pub headers: HeaderMap,
    /// Whether the answer is a 429.
    pub refused: bool,
}

impl Enforcer {
    /// Enforces `limits`, every bucket full.
    pub fn new(limits: ServerLimits) -> Self {
        Enforcer {
            limits,
            start: Instant::now(),
            buckets: Mutex::new(HashMap::new()),
            refused: AtomicU64::new(0),
            admitted: AtomicU64::new(0),
        }
    }

    /// Calls answered with a 429 so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// Calls admitted so far.
    pub fn admitted(&self) -> u64 {
        self.admitted.load(Ordering::SeqCst)
    }

    /// Meters one call of `tokens` by `key` to `model`.
    pub fn admit(&self, key: &str, model: &str, tokens: u64) -> Verdict {
        let caps = [
            self.limits.requests_per_minute,
            self.limits.tokens_per_minute,
        ]
        .map(|cap| cap.filter(|&c| c > 0).map(|c| c as f64));
        let costs = [1.0, tokens as f64];
        let now = self.start.elapsed();
        let id = (key.to_owned(), model.to_owned());
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let (levels, updated) = buckets
            .entry(id)
            .or_insert_with(|| (caps.map(|cap| cap.unwrap_or(0.0)), now));
        let last = std::mem::replace(updated, now);
        let elapsed_min = now.saturating_sub(last).as_secs_f64() / 60.0;
        let mut short_secs: f64 = 0.0;
        for d in 0..2 {
            if let Some(cap) = caps[d] {
                levels[d] = (levels[d] + elapsed_min * cap).min(cap);
                let cost = costs[d].min(cap);
                if cost > levels[d] {
                    short_secs = short_secs.max((cost - levels[d]) * 60.0 / cap);
                }
            }
        }
        let refused = short_secs > 0.0;
        if refused {
            self.refused.fetch_add(1, Ordering::SeqCst);
        } else {
            self.admitted.fetch_add(1, Ordering::SeqCst);
            for d in 0..2 {
                if let Some(cap) = caps[d] {
                    levels[d] -= costs[d].min(cap);
                }
            }
        }
        let mut headers = HeaderMap::new();
        for (d, suffix) in ["requests", "tokens"].into_iter().enumerate() {
            let Some(cap) = caps[d] else {
                continue;
            };
            let level = levels[d].max(0.0);
            let reset = (cap - level) * 60.0 / cap;
            put(
                &mut headers,
                &format!("x-ratelimit-limit-{suffix}"),
                format!("{cap:.0}"),
            );
            put(
                &mut headers,
                &format!("x-ratelimit-remaining-{suffix}"),
                format!("{:.0}", level.floor()),
            );
            put(
                &mut headers,
                &format!("x-ratelimit-reset-{suffix}"),
                format!("{reset:.3}s"),
            );
        }
        if refused {
            put(
                &mut headers,
                "retry-after",
                format!("{}", short_secs.ceil().max(1.0)),
            );
        }
        Verdict { headers, refused }
    }
}

fn put(headers: &mut HeaderMap, name: &str, value: String) {
    if let (Ok(name), Ok(value)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(&value),
    ) {
        headers.insert(name, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_of_requests_then_a_429_with_headers() {
        let enforcer = Enforcer::new(ServerLimits {
            requests_per_minute: Some(3),
            tokens_per_minute: Some(1_000),
        });
        for _ in 0..3 {
            assert!(!enforcer.admit("k", "m", 10).refused);
        }
        let verdict = enforcer.admit("k", "m", 10);
        assert!(verdict.refused);
        assert_eq!(verdict.headers["x-ratelimit-remaining-requests"], "0");
        assert_eq!(verdict.headers["x-ratelimit-limit-tokens"], "1000");
        assert!(verdict.headers.contains_key("retry-after"));
        // Another key has its own buckets.
        assert!(!enforcer.admit("other", "m", 10).refused);
        assert_eq!((enforcer.admitted(), enforcer.refused()), (4, 1));
    }

    #[test]
    fn tokens_are_metered_too() {
        let enforcer = Enforcer::new(ServerLimits {
            requests_per_minute: None,
            tokens_per_minute: Some(100),
        });
        assert!(!enforcer.admit("k", "m", 90).refused);
        let verdict = enforcer.admit("k", "m", 20);
        assert!(verdict.refused);
        assert!(!verdict.headers.contains_key("x-ratelimit-limit-requests"));
    }
}
