//! When a failed delivery is tried again: exponential backoff (each wait
//! three times the last, from `initial` up to `max`) with jitter, so the
//! retries of many deliveries to one receiver that was down spread out
//! instead of arriving together when it comes back.

use std::time::Duration;

/// How much longer each wait is than the one before.
const FACTOR: u32 = 3;
/// The jitter: a wait is its nominal length times a factor drawn from
/// `1 ± JITTER`.
const JITTER: f64 = 0.2;

/// The waits between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Backoff {
    /// The nominal wait after `failures` failed attempts (1 for the
    /// first): `initial * 3^(failures - 1)`, at most `max`.
    pub fn nominal(&self, failures: u32) -> Duration {
        let growth = FACTOR.checked_pow(failures.saturating_sub(1));
        growth
            .and_then(|g| self.initial.checked_mul(g))
            .map_or(self.max, |wait| wait.min(self.max))
    }

    /// The wait after `failures` failed attempts, jittered by `unit` (a
    /// draw from `0..1`: `0.5` is the nominal wait).
    pub fn wait(&self, failures: u32, unit: f64) -> Duration {
        let factor = 1.0 + JITTER * (2.0 * unit.clamp(0.0, 1.0) - 1.0);
        self.nominal(failures).mul_f64(factor)
    }

    /// [`Backoff::wait`] with a random draw.
    pub fn jittered(&self, failures: u32) -> Duration {
        self.wait(failures, rand::random::<f64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn waits_grow_threefold_up_to_the_cap() {
        let backoff = Backoff {
            initial: Duration::from_secs(5),
            max: Duration::from_secs(3600),
        };
        let waits: Vec<u64> = (1..=9).map(|n| backoff.nominal(n).as_secs()).collect();
        assert_eq!(waits, vec![5, 15, 45, 135, 405, 1215, 3600, 3600, 3600]);
        // Past any power that fits: the cap, never an overflow.
        assert_eq!(backoff.nominal(u32::MAX), backoff.max);
        assert_eq!(backoff.nominal(0), backoff.initial);
    }

    #[test]
    fn jitter_stays_within_a_fifth() {
        let backoff = Backoff {
            initial: Duration::from_secs(10),
            max: Duration::from_secs(60),
        };
        assert_eq!(backoff.wait(1, 0.0), Duration::from_secs(8));
        assert_eq!(backoff.wait(1, 0.5), Duration::from_secs(10));
        assert_eq!(backoff.wait(1, 1.0), Duration::from_secs(12));
        for _ in 0..100 {
            let wait = backoff.jittered(2);
            assert!(wait >= Duration::from_secs(24) && wait <= Duration::from_secs(36));
        }
    }
}
