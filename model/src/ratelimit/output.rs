//! [`OutputEstimate`]: how many output tokens a call is assumed to take
//! before it is sent.
//!
//! Nothing says ahead how long an answer will be. The configured guess
//! stands in until the provider has reported some usage; from then on it
//! is the running average of what this account and model really answered.
//! A fixed guess far above the real answers paces a batch by tokens it
//! never uses: every slot the limiter promises ahead is promised for the
//! guess, and the usage that corrects the bucket arrives after the callers
//! already waiting were given their times.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::LimitKey;

/// How far one reported answer moves the average toward itself: a tenth,
/// so a few dozen calls replace the guess and one long answer does not.
const WEIGHT: f64 = 0.1;

/// The running average of reported output tokens per account and model
/// (one entry per pair the process calls), over a configured first guess.
#[derive(Debug)]
pub struct OutputEstimate {
    guess: u64,
    averages: Mutex<HashMap<LimitKey, f64>>,
}

impl OutputEstimate {
    /// An estimate that assumes `guess` tokens until usage is reported.
    pub fn new(guess: u64) -> Self {
        OutputEstimate {
            guess,
            averages: Mutex::new(HashMap::new()),
        }
    }

    /// The output tokens a call on `key` is assumed to take.
    pub fn expected(&self, key: &LimitKey) -> u64 {
        let averages = self.averages.lock().unwrap_or_else(PoisonError::into_inner);
        averages
            .get(key)
            .map_or(self.guess, |average| average.ceil() as u64)
    }

    /// Folds one call's reported `output` tokens into `key`'s average.
    pub fn learn(&self, key: &LimitKey, output: u64) {
        let mut averages = self.averages.lock().unwrap_or_else(PoisonError::into_inner);
        let average = averages.entry(key.clone()).or_insert(self.guess as f64);
        *average += WEIGHT * (output as f64 - *average);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(model: &str) -> LimitKey {
        LimitKey {
            provider: "openai".into(),
            account: "acct".into(),
            model: model.into(),
        }
    }

    #[test]
    fn the_guess_stands_until_usage_is_reported() {
        let estimate = OutputEstimate::new(1_000);
        assert_eq!(estimate.expected(&key("a")), 1_000);
        estimate.learn(&key("a"), 0);
        assert_eq!(estimate.expected(&key("a")), 900);
        assert_eq!(estimate.expected(&key("b")), 1_000, "per model");
    }

    #[test]
    fn the_average_follows_what_answers_really_take() {
        let estimate = OutputEstimate::new(1_000);
        for _ in 0..60 {
            estimate.learn(&key("a"), 40);
        }
        let expected = estimate.expected(&key("a"));
        assert!((40..=42).contains(&expected), "{expected}");
        estimate.learn(&key("a"), 4_000);
        let after_one_long = estimate.expected(&key("a"));
        assert!((430..=440).contains(&after_one_long), "{after_one_long}");
    }
}
