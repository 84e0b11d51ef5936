//! [`Wire`]: the wire protocols deepfleet speaks, by name, and building a
//! client that speaks one.
//!
//! This is the one place a protocol becomes a client type; everything
//! below it is the shared [`HttpClient`].

use std::sync::Arc;

use crate::ModelError;
use crate::anthropic::Messages;
use crate::gemini::GenerateContent;
use crate::openai::ChatCompletions;
use crate::transport::{HttpClient, HttpModel, TransportConfig};

/// A wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI Chat Completions (and every compatible host).
    ChatCompletions,
    /// Anthropic Messages.
    Messages,
    /// Gemini `generateContent`.
    GenerateContent,
}

impl Wire {
    /// A client speaking this protocol over `http`'s connection pool.
    pub(crate) fn client(
        self,
        http: reqwest::Client,
        config: TransportConfig,
    ) -> Result<Arc<dyn HttpModel>, ModelError> {
        Ok(match self {
            Wire::ChatCompletions => {
                Arc::new(HttpClient::with_http(http, ChatCompletions, config)?)
            }
            Wire::Messages => Arc::new(HttpClient::with_http(http, Messages, config)?),
            Wire::GenerateContent => {
                Arc::new(HttpClient::with_http(http, GenerateContent, config)?)
            }
        })
    }
}
