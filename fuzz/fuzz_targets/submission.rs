//! Messages on the submission queue, as the scheduler's queue intake
//! takes them.
//!
//! The check is `deepfleet_fuzzing::submission::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::submission::check(data));
