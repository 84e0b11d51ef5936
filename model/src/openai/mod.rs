//! The OpenAI Chat Completions protocol: wire types, conversions, error
//! classification and the HTTP client.
//!
//! Every provider deepfleet supports speaks this protocol (OpenAI,
//! OpenRouter, Fireworks, Baseten, Ollama), and so does the replay model.

pub mod classify;
mod client;
pub mod convert;
pub mod wire;

pub(crate) use client::http_client;
pub use client::{DEFAULT_TIMEOUT, OpenAiClient, OpenAiConfig};
