//! Lines of a batch tasks file (`deepfleet run`/`submit`), decoded as the
//! CLI decodes them and submitted as the scheduler submits them.
//!
//! The check is `deepfleet_fuzzing::task_line::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::task_line::check(data));
