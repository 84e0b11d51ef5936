//! [`Unmetered`]: the keys the limiter last found unmetered, so that a
//! call on one skips the limiter's store for a moment.
//!
//! A provider that sends no rate-limit headers, called with no limit
//! configured, is metered by nothing: asking the fleet's buckets before
//! and after each of its calls costs two round trips and two scripts on
//! the store, and they change nothing. The answer holds for
//! [`RECHECK`]: a limit learned or a 429 met by another worker reaches
//! this one within that time, and what this worker's own answers teach
//! reaches it at once ([`Unmetered::forget`]).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::LimitKey;

/// How long an unmetered answer is taken as still true.
pub const RECHECK: Duration = Duration::from_secs(1);

/// When each key found unmetered was found so (one entry per account and
/// model the process calls).
#[derive(Debug, Default)]
pub struct Unmetered {
    found: Mutex<HashMap<LimitKey, Instant>>,
}

impl Unmetered {
    /// Whether `key` was found unmetered less than [`RECHECK`] ago.
    pub fn holds(&self, key: &LimitKey) -> bool {
        self.found()
            .get(key)
            .is_some_and(|at| at.elapsed() < RECHECK)
    }

    /// Notes that the limiter just found `key` unmetered.
    pub fn found_now(&self, key: &LimitKey) {
        self.found().insert(key.clone(), Instant::now());
    }

    /// Drops what was found of `key`: an answer just said something of
    /// its capacity.
    pub fn forget(&self, key: &LimitKey) {
        self.found().remove(key);
    }

    fn found(&self) -> std::sync::MutexGuard<'_, HashMap<LimitKey, Instant>> {
        self.found.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(model: &str) -> LimitKey {
        LimitKey {
            provider: "local".into(),
            account: "http://127.0.0.1:8000".into(),
            model: model.into(),
        }
    }

    #[test]
    fn an_answer_holds_for_its_key_until_forgotten() {
        let unmetered = Unmetered::default();
        assert!(!unmetered.holds(&key("m")));
        unmetered.found_now(&key("m"));
        assert!(unmetered.holds(&key("m")));
        assert!(!unmetered.holds(&key("other")));
        unmetered.forget(&key("m"));
        assert!(!unmetered.holds(&key("m")));
    }
}
