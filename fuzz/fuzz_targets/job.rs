//! Step messages from the queue, as a worker takes them.
//!
//! The check is `deepfleet_fuzzing::job::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::job::check(data));
