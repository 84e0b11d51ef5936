//! [`RedisRateLimiter`]: the fleet-wide rate limiter's buckets in Redis,
//! one hash per provider account and model, every operation one call of
//! `rate_limit.lua`, so all worker processes share the buckets atomically
//! and on one clock (the server's).
//!
//! Keys: `{prefix}:ratelimit:{<account>|<model>}` holds the buckets, and
//! `{prefix}:ratelimit:{<account>|<model>}:claim:<claim>` a slot kept for
//! a deferred step; the hash tag puts both in one cluster slot. Idle
//! buckets and claims expire after an hour.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use deepfleet_model::ratelimit::{
    Acquired, Cost, LimitKey, LimiterError, Limits, Observed, RateLimiter,
};
use redis::Script;

use super::RedisStore;
use super::conn::{Conn, Retry};
use super::scripts::Call;

static RATE_LIMIT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("../../lua/rate_limit.lua")));

/// The buckets of every account and model, in the fleet's Redis.
#[derive(Clone)]
pub struct RedisRateLimiter {
    conn: Conn,
    prefix: String,
}

impl std::fmt::Debug for RedisRateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateLimiter")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A rate limiter on this store's connection, under its key prefix.
    pub fn rate_limiter(&self) -> RedisRateLimiter {
        RedisRateLimiter {
            conn: self.conn().clone(),
            prefix: self.keys().prefix().to_owned(),
        }
    }
}

impl RedisRateLimiter {
    fn state_key(&self, key: &LimitKey) -> String {
        // Braces would end the hash tag early.
        let tag =
            format!("{}|{}|{}", key.provider, key.account, key.model).replace(['{', '}'], "_");
        format!("{}:ratelimit:{{{tag}}}", self.prefix)
    }

    async fn run<T: redis::FromRedisValue + Send>(
        &self,
        what: &str,
        call: Call<'_>,
    ) -> Result<T, LimiterError> {
        // Not retried: a lost call may have taken its cost already.
        self.conn
            .call(what, Retry::Never, |conn| call.invoke(conn))
            .await
            .map_err(|e| LimiterError(e.to_string()))
    }
}

/// The configured limits as the script takes them (0 = none).
fn limit_args<'s>(call: Call<'s>, op: &str, limits: &Limits) -> Call<'s> {
    let mut call = call.arg(op);
    for limit in limits.as_array() {
        call = call.arg(limit.unwrap_or(0).to_string());
    }
    call
}

fn cost_args(mut call: Call<'_>, cost: Cost) -> Call<'_> {
    for n in cost.0 {
        call = call.arg(n.to_string());
    }
    call
}

fn optional_args<T: ToString>(
    mut call: Call<'_>,
    values: impl IntoIterator<Item = Option<T>>,
) -> Call<'_> {
    for value in values {
        call = call.arg(value.map_or_else(|| "-1".to_owned(), |v| v.to_string()));
    }
    call
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn acquire(
        &self,
        key: &LimitKey,
        limits: &Limits,
        cost: Cost,
        claim: Option<&str>,
        max_wait: Duration,
    ) -> Result<Acquired, LimiterError> {
        let state = self.state_key(key);
        let claim_key = format!("{state}:claim:{}", claim.unwrap_or_default());
        let call = limit_args(
            Call::new(&RATE_LIMIT, vec![state, claim_key]),
            "acquire",
            limits,
        );
        let call = cost_args(call, cost)
            .arg(millis(max_wait).to_string())
            .arg(if claim.is_some() { "1" } else { "0" });
        let (go, wait): (i64, u64) = self.run("rate limit acquire", call).await?;
        let wait = Duration::from_millis(wait);
        Ok(match go {
            1 => Acquired::Go(wait),
            2 => Acquired::Unmetered,
            _ => Acquired::Later(wait),
        })
    }

    async fn record(
        &self,
        key: &LimitKey,
        limits: &Limits,
        taken: Cost,
        used: Cost,
    ) -> Result<(), LimiterError> {
        let state = self.state_key(key);
        let claim_key = format!("{state}:claim:");
        let call = limit_args(
            Call::new(&RATE_LIMIT, vec![state, claim_key]),
            "record",
            limits,
        );
        let call = cost_args(cost_args(call, taken), used);
        let _: i64 = self.run("rate limit record", call).await?;
        Ok(())
    }

    async fn observe(
        &self,
        key: &LimitKey,
        limits: &Limits,
        observed: &Observed,
    ) -> Result<[Option<f64>; 4], LimiterError> {
        let state = self.state_key(key);
        let claim_key = format!("{state}:claim:");
        let call = limit_args(
            Call::new(&RATE_LIMIT, vec![state, claim_key]),
            "observe",
            limits,
        );
        let call = optional_args(call, observed.limit);
        let call = optional_args(call, observed.remaining);
        let call = optional_args(call, observed.reset.map(|r| r.map(millis)));
        let call = optional_args(call, [observed.blocked_for.map(millis)]);
        let levels: Vec<String> = self.run("rate limit observe", call).await?;
        let mut out = [None; 4];
        for (slot, level) in out.iter_mut().zip(levels) {
            *slot = level.parse().ok();
        }
        Ok(out)
    }
}
