//! The model crate's integration tests, one binary: each provider's
//! client against a local HTTP server speaking its wire, and the bounds
//! every client keeps on what it waits for and reads.
// Test support helpers are not `#[test]` fns, so the test exemption of
// clippy.toml does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic_http;
mod bounds;
mod gemini_http;
mod openai_http;
mod openai_stream;
mod support;
