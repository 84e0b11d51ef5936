//! The testkit's integration tests, one binary: the scripted server
//! driven by the real provider clients.
// Test support helpers are not `#[test]` fns, so the test exemption of
// clippy.toml does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod protocols;
mod scripted_server;
