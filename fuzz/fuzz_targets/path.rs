//! Virtual path validation: what every file tool, seed file and backend
//! route accepts.
//!
//! The check is `deepfleet_fuzzing::path::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::path::check(data));
