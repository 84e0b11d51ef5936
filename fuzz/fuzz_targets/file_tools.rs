//! The file tools with arguments as a model could send them, run against
//! the three kinds of backend a step can route to.
//!
//! The check is `deepfleet_fuzzing::file_tools::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::file_tools::check(data));
