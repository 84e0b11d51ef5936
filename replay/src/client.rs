//! [`ReplayClient`]: the scripted model behind the [`ModelClient`] trait.

use std::sync::Arc;

use async_trait::async_trait;

use super::engine::ReplayEngine;
use deepfleet_model::classify::classify_status;
use deepfleet_model::openai::convert::{from_wire, to_wire};
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::{
    Delta, DeltaEvent, DeltaSink, ModelClient, ModelError, ModelRequest, ModelResponse,
};

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
        match self.engine.answer(&to_wire(request, None)) {
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
        self.retry
            .run(|| async {
                let latency = self.engine.latency();
                if !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
                self.answer(request)
            })
            .await
    }

    /// Answers as `complete` does, then hands the answer to `sink` in
    /// pieces (text word by word, tool-call arguments a few characters at
    /// a time) [`PIECE_GAP`] apart, as a provider's stream would: scripted
    /// runs exercise token streaming end to end, and return the very same
    /// response.
    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let response = self.complete(request).await?;
        for (i, delta) in pieces(&response).into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(PIECE_GAP).await;
            }
            sink.deliver(DeltaEvent {
                purpose: request.purpose,
                delta,
            });
        }
        Ok(response)
    }
}

/// The pause between streamed pieces: tokens arrive over time, so a
/// follower sees several chunks, not one.
pub const PIECE_GAP: std::time::Duration = std::time::Duration::from_millis(25);

/// Argument characters per streamed tool-call piece.
const ARGUMENT_PIECE: usize = 12;

/// `response` cut into the deltas a streaming provider would send.
fn pieces(response: &ModelResponse) -> Vec<Delta> {
    let text = deepfleet_proto::message::joined_text(&response.message.content);
    let mut out: Vec<Delta> = text
        .split_inclusive(' ')
        .map(|word| Delta::Text {
            text: word.to_owned(),
        })
        .collect();
    for (index, call) in response.message.tool_calls.iter().enumerate() {
        out.push(Delta::ToolCall {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: String::new(),
        });
        let chars: Vec<char> = call.arguments.chars().collect();
        for piece in chars.chunks(ARGUMENT_PIECE) {
            out.push(Delta::ToolCall {
                index,
                id: None,
                name: None,
                arguments: piece.iter().collect(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use deepfleet_proto::Message;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::Script;
    use deepfleet_model::{CallPurpose, DeltaEvent};

    #[tokio::test]
    async fn streamed_pieces_add_up_to_the_answer() {
        let script = Script::from_yaml(
            "rules:\n  - reply:\n      text: 'Two words here.'\n      tool_calls:\n        - {name: write_file, args: {file_path: /a-long-path.md, content: x}}\n",
        )
        .unwrap();
        let client = ReplayClient::new(Arc::new(ReplayEngine::new(script)));
        let request = ModelRequest {
            model: "scripted".into(),
            system: "".into(),
            messages: vec![Message::user("go")],
            tools: vec![].into(),
            max_output_tokens: None,
            cache_key: None,
            cache_breakpoints: Vec::new(),
            purpose: CallPurpose::Summarization,
            sampling: Default::default(),
            rate: Default::default(),
        };
        let seen = Mutex::new(Vec::new());
        let sink = |event: DeltaEvent| seen.lock().unwrap().push(event);
        let streamed = client.stream(&request, &sink).await.unwrap();
        assert_eq!(streamed, client.complete(&request).await.unwrap());
        let seen = seen.into_inner().unwrap();
        assert!(seen.iter().all(|e| e.purpose == CallPurpose::Summarization));
        let mut text = String::new();
        let mut arguments = String::new();
        for event in &seen {
            match &event.delta {
                Delta::Text { text: t } => text.push_str(t),
                Delta::ToolCall { arguments: a, .. } => arguments.push_str(a),
            }
        }
        assert_eq!(text, "Two words here.");
        assert_eq!(arguments, streamed.message.tool_calls[0].arguments);
        assert!(seen.len() > 4, "{seen:?}");
    }
}
