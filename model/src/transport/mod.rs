//! The HTTP model transport: one [`TransportConfig`] and one
//! [`HttpClient`], generic over a [`WireProtocol`].
//!
//! A protocol (Chat Completions, Messages, `generateContent`) only says
//! where a call goes, which header carries the key, and how requests,
//! answers and streamed events map to its wire types. Sending, retries,
//! error classification with `Retry-After`, key redaction, the bounds of
//! an answer's body (bytes and idle time), SSE framing and streamed
//! assembly are the transport's, so a setting added here (HTTP/2, a proxy,
//! a rate limiter: see `HttpClient::attempt`) reaches every provider.

mod body;
mod client;
mod config;
mod http;
mod protocol;
mod shared_parts;
mod sse;

pub use client::{HttpClient, HttpModel};
pub use config::{
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT, TransportConfig,
};
pub use http::HTTP2_CONNECTION_WINDOW;
pub(crate) use http::http_client;
pub use protocol::{StreamDecoder, WireProtocol};
