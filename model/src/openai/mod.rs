//! The OpenAI Chat Completions protocol: wire types, conversions, the
//! stream reader and the HTTP client.
//!
//! OpenAI, OpenRouter, Fireworks, Baseten, Ollama and any compatible host
//! speak this protocol, and so does the replay model.

mod client;
pub mod convert;
mod stream;
pub mod wire;

pub use crate::http::DEFAULT_TIMEOUT;
pub use client::{OpenAiClient, OpenAiConfig};
