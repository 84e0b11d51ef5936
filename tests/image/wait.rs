//! Bounded waits: every wait of the test has a deadline and says what it
//! waited for when it passes.

use std::time::{Duration, Instant};

pub fn wait_for(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("timed out after {within:?} waiting for {what}");
}
