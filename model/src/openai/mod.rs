//! The OpenAI Chat Completions protocol: wire types, conversions, the
//! stream reader and [`ChatCompletions`], the protocol on the shared
//! transport ([`crate::transport::HttpClient`]).
//!
//! OpenAI, OpenRouter, Fireworks, Baseten, Ollama and any compatible host
//! speak this protocol, and so does the replay model.

pub mod convert;
mod protocol;
mod stream;
pub mod wire;

pub use protocol::ChatCompletions;
