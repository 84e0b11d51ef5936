//! Agent specs, as `deepfleet run --agent`, the scheduler and the workers
//! load them.
//!
//! The check is `deepfleet_fuzzing::spec::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::spec::check(data));
