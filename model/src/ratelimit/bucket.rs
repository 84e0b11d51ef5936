//! [`Buckets`]: the token buckets of one account and model, as plain
//! arithmetic on a clock in milliseconds. The in-process limiter applies
//! it under a lock; `deepfleet-store`'s `rate_limit.lua` is the same
//! arithmetic in Redis, and its tests check the two agree.

use super::{Cost, Limits, Observed};

/// Milliseconds a bucket takes to refill from empty: limits are per
/// minute.
const WINDOW_MS: f64 = 60_000.0;

/// The part of a limit a bucket never holds: one second of refill. The
/// provider's bucket starts filling when the first call arrives, later
/// than this one's, and calls reach it with varying latency; this
/// headroom keeps the limiter below the provider for any latency jitter
/// under a second.
const HEADROOM: f64 = 1.0 / 60.0;

/// What a bucket of limit `cap` holds at most.
fn ceiling(cap: f64) -> f64 {
    cap * (1.0 - HEADROOM)
}

/// The buckets of one account and model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Buckets {
    /// What each dimension holds; below zero, what is promised to calls
    /// already given a later slot. `None` until the dimension has a limit.
    level: [Option<f64>; 4],
    /// The limits the provider's headers reported.
    learned: [Option<u64>; 4],
    /// When `level` was last brought up to date.
    updated_ms: u64,
    /// No call goes before this (a 429's `Retry-After`).
    blocked_until_ms: u64,
}

impl Buckets {
    /// Each dimension's limit: the lower of the configured and the
    /// learned one.
    fn caps(&self, limits: &Limits) -> [Option<f64>; 4] {
        let configured = limits.as_array();
        let mut caps = [None; 4];
        for (d, cap) in caps.iter_mut().enumerate() {
            *cap = match (configured[d], self.learned[d]) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
            .filter(|&c| c > 0)
            .map(|c| c as f64);
        }
        caps
    }

    /// Whether anything meters these buckets at `now_ms`: a limit,
    /// configured or learned, or a 429's block.
    pub fn meters(&self, limits: &Limits, now_ms: u64) -> bool {
        self.blocked_until_ms > now_ms || self.caps(limits).iter().any(Option::is_some)
    }

    /// Refills each bucket for the time since the last update.
    fn refill(&mut self, caps: &[Option<f64>; 4], now_ms: u64) {
        let elapsed = now_ms.saturating_sub(self.updated_ms) as f64;
        for (d, cap) in caps.iter().enumerate() {
            self.level[d] = cap.map(|cap| {
                let level = self.level[d].unwrap_or(ceiling(cap));
                (level + elapsed * cap / WINDOW_MS).min(ceiling(cap))
            });
        }
        self.updated_ms = self.updated_ms.max(now_ms);
    }

    /// Takes `cost` and returns how many milliseconds from `now_ms` the
    /// call must wait for it (a cost above a limit takes the whole limit:
    /// it could never fit otherwise).
    pub fn take(&mut self, limits: &Limits, cost: Cost, now_ms: u64) -> u64 {
        let caps = self.caps(limits);
        self.refill(&caps, now_ms);
        let mut wait = self.blocked_until_ms.saturating_sub(now_ms) as f64;
        for (d, cap) in caps.iter().enumerate() {
            let (Some(cap), Some(level)) = (cap, self.level[d]) else {
                continue;
            };
            let cost = (cost.0[d] as f64).min(*cap);
            let short = cost - level;
            if short > 0.0 {
                wait = wait.max(short * WINDOW_MS / cap);
            }
            self.level[d] = Some(level - cost);
        }
        wait.ceil() as u64
    }

    /// Gives back what `taken` took beyond `used` (or takes the
    /// shortfall).
    pub fn give(&mut self, limits: &Limits, taken: Cost, used: Cost, now_ms: u64) {
        let caps = self.caps(limits);
        self.refill(&caps, now_ms);
        for (d, cap) in caps.iter().enumerate() {
            let (Some(cap), Some(level)) = (cap, self.level[d]) else {
                continue;
            };
            let delta = taken.0[d] as f64 - used.0[d] as f64;
            self.level[d] = Some((level + delta).min(ceiling(*cap)));
        }
    }

    /// Applies a provider's report and returns the levels afterwards.
    pub fn observe(
        &mut self,
        limits: &Limits,
        observed: &Observed,
        now_ms: u64,
    ) -> [Option<f64>; 4] {
        for (d, limit) in observed.limit.iter().enumerate() {
            if let Some(limit) = limit.filter(|&l| l > 0) {
                self.learned[d] = Some(limit);
            }
        }
        let caps = self.caps(limits);
        self.refill(&caps, now_ms);
        for (d, remaining) in observed.remaining.iter().enumerate() {
            let Some(remaining) = *remaining else {
                continue;
            };
            match self.level[d] {
                // The provider counted calls this limiter did not (another
                // client of the key, a drifted estimate): follow it.
                Some(level) => self.level[d] = Some(level.min(remaining as f64)),
                // No limit to refill by: an exhausted dimension blocks
                // until the provider's reset.
                None if remaining == 0 => {
                    if let Some(reset) = observed.reset[d] {
                        self.block(now_ms, reset.as_millis());
                    }
                }
                None => {}
            }
        }
        if let Some(blocked) = observed.blocked_for {
            self.block(now_ms, blocked.as_millis());
        }
        self.level
    }

    fn block(&mut self, now_ms: u64, for_ms: u128) {
        let until = now_ms.saturating_add(u64::try_from(for_ms).unwrap_or(u64::MAX));
        self.blocked_until_ms = self.blocked_until_ms.max(until);
    }

    /// When no call may go before (a 429's block), in the same clock.
    pub fn blocked_until_ms(&self) -> u64 {
        self.blocked_until_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::time::Duration;

    fn rpm(n: u64) -> Limits {
        Limits {
            requests_per_minute: Some(n),
            ..Limits::default()
        }
    }

    #[test]
    fn a_full_bucket_grants_a_minute_then_paces_at_the_rate() {
        let limits = rpm(600);
        let mut buckets = Buckets::default();
        // A minute's worth but a second's refill of headroom.
        for _ in 0..590 {
            assert_eq!(buckets.take(&limits, Cost::call(0, 0), 0), 0);
        }
        // 10 a second: each further call is promised the next 100 ms.
        assert_eq!(buckets.take(&limits, Cost::call(0, 0), 0), 100);
        assert_eq!(buckets.take(&limits, Cost::call(0, 0), 0), 200);
        // A second later ten more have refilled: the promised two are paid.
        assert_eq!(buckets.take(&limits, Cost::call(0, 0), 1_000), 0);
    }

    #[test]
    fn tokens_pace_by_the_scarcer_dimension_and_corrections_move_them() {
        let limits = Limits {
            tokens_per_minute: Some(6_000),
            ..rpm(600)
        };
        let mut buckets = Buckets::default();
        // 5,900 held (100 of headroom): 100 left.
        assert_eq!(buckets.take(&limits, Cost::call(4_900, 900), 0), 0);
        // 900 more refill in 9 s.
        assert_eq!(buckets.take(&limits, Cost::call(900, 100), 0), 9_000);
        // The first call used only half its estimate.
        buckets.give(
            &limits,
            Cost::tokens(4_900, 900),
            Cost::tokens(2_000, 400),
            0,
        );
        assert_eq!(buckets.take(&limits, Cost::call(1_000, 0), 0), 0);
    }

    #[test]
    fn no_limit_means_no_wait() {
        let mut buckets = Buckets::default();
        for _ in 0..10_000 {
            assert_eq!(
                buckets.take(&Limits::default(), Cost::call(100_000, 0), 0),
                0
            );
        }
    }

    #[test]
    fn headers_teach_limits_lower_levels_and_a_429_blocks() {
        let mut buckets = Buckets::default();
        let observed = Observed {
            limit: [Some(60), None, None, None],
            remaining: [Some(0), None, None, None],
            ..Observed::default()
        };
        let levels = buckets.observe(&Limits::default(), &observed, 0);
        assert_eq!(levels[0], Some(0.0));
        // 60 a minute: one refills in a second.
        assert_eq!(buckets.take(&Limits::default(), Cost::call(0, 0), 0), 1_000);
        let throttled = Observed {
            blocked_for: Some(Duration::from_secs(30)),
            ..Observed::default()
        };
        buckets.observe(&Limits::default(), &throttled, 0);
        assert_eq!(
            buckets.take(&Limits::default(), Cost::call(0, 0), 0),
            30_000
        );
        assert_eq!(buckets.blocked_until_ms(), 30_000);
    }

    #[test]
    fn an_exhausted_unknown_limit_blocks_until_its_reset() {
        let mut buckets = Buckets::default();
        let observed = Observed {
            remaining: [None, Some(0), None, None],
            reset: [None, Some(Duration::from_secs(6)), None, None],
            ..Observed::default()
        };
        buckets.observe(&Limits::default(), &observed, 1_000);
        assert_eq!(
            buckets.take(&Limits::default(), Cost::call(10, 0), 1_000),
            6_000
        );
    }

    #[test]
    fn the_configured_limit_wins_when_lower_than_the_learned_one() {
        let mut buckets = Buckets::default();
        let observed = Observed {
            limit: [Some(6_000), None, None, None],
            ..Observed::default()
        };
        buckets.observe(&rpm(60), &observed, 0);
        for _ in 0..59 {
            assert_eq!(buckets.take(&rpm(60), Cost::call(0, 0), 0), 0);
        }
        assert_eq!(buckets.take(&rpm(60), Cost::call(0, 0), 0), 1_000);
    }
}
