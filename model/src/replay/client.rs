//! [`ReplayClient`]: the scripted model behind the [`ModelClient`] trait.

use std::sync::Arc;

use async_trait::async_trait;

use super::engine::ReplayEngine;
use crate::classify::classify_status;
use crate::openai::convert::{from_wire, to_wire};
use crate::retry::RetryPolicy;
use crate::{ModelClient, ModelError, ModelRequest, ModelResponse};

/// Answers from a [`ReplayEngine`] in process.
///
/// Requests go through the real Chat Completions conversions, and scripted
/// errors through the HTTP client's classification and retry policy, so a
/// scripted run behaves like one against a provider.
#[derive(Debug, Clone)]
pub struct ReplayClient {
    engine: Arc<ReplayEngine>,
    retry: RetryPolicy,
}

impl ReplayClient {
    /// A client over `engine` with the default retry policy.
    pub fn new(engine: Arc<ReplayEngine>) -> Self {
        ReplayClient {
            engine,
            retry: RetryPolicy::default(),
        }
    }

    /// Uses `retry` instead of the default policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The engine (for its counters' sake, shared with other clients).
    pub fn engine(&self) -> &Arc<ReplayEngine> {
        &self.engine
    }

    fn answer(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        match self.engine.answer(&to_wire(request)) {
            Ok(response) => from_wire(response),
            Err(scripted) => {
                // Classify the body exactly as it would arrive over HTTP.
                let body = serde_json::to_string(&scripted.body).unwrap_or_default();
                Err(classify_status(
                    scripted.status,
                    &body,
                    scripted.retry_after,
                ))
            }
        }
    }
}

#[async_trait]
impl ModelClient for ReplayClient {
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.retry.run(|| async { self.answer(request) }).await
    }
}
