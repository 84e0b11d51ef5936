//! The queue crate's integration tests, one binary: the `Queue` contract
//! on every back end, and riding out a lost broker.
// Test support helpers are not `#[test]` fns, so the test exemption of
// clippy.toml does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod contract;
mod recovery;
