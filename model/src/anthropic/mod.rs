//! The Anthropic Messages protocol: wire types, conversions (with prompt
//! cache breakpoints), the stream reader and the HTTP client.

mod client;
pub mod convert;
mod stream;
pub mod wire;

pub use client::{API_VERSION, AnthropicClient, AnthropicConfig};
