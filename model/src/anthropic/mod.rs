//! The Anthropic Messages protocol: wire types, conversions (with prompt
//! cache breakpoints), the stream reader and [`Messages`], the protocol on
//! the shared transport ([`crate::transport::HttpClient`]).

pub mod convert;
mod protocol;
mod stream;
pub mod wire;

pub use protocol::{API_VERSION, Messages};
