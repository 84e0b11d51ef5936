//! Conversation messages: as the checkpoint log stores them, as Agent
//! Server clients read them, and as a run's `input` brings them.
//!
//! The check is `deepfleet_fuzzing::message::check`, which the workspace's
//! tests also replay over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| deepfleet_fuzzing::message::check(data));
