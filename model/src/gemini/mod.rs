//! The Google Gemini API (`generateContent`, `streamGenerateContent`):
//! wire types, conversions, the stream reader and the HTTP client.

mod client;
pub mod convert;
mod stream;
pub mod wire;

pub use client::{GeminiClient, GeminiConfig};
