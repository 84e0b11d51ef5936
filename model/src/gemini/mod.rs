//! The Google Gemini API (`generateContent`, `streamGenerateContent`):
//! wire types, conversions, the stream reader and [`GenerateContent`], the
//! protocol on the shared transport ([`crate::transport::HttpClient`]).

pub mod convert;
mod protocol;
mod stream;
pub mod wire;

pub use protocol::GenerateContent;
