//! Model clients.
//!
//! [`ModelClient`] takes a provider-neutral [`ModelRequest`] and returns the
//! assistant turn; each provider converts to and from its wire format.
//! Errors keep the HTTP status and `Retry-After` as data
//! ([`ModelError`]), so the retry policy and the fleet's redelivery can
//! decide without parsing text.
//!
//! - [`transport`]: the one HTTP client ([`transport::HttpClient`]) and its
//!   config, generic over a [`transport::WireProtocol`]: sending, retries,
//!   error classification, key redaction and streamed assembly.
//! - [`openai`]: the Chat Completions protocol
//!   ([`openai::ChatCompletions`]), used for every OpenAI-compatible
//!   provider.
//! - [`anthropic`]: the Messages protocol ([`anthropic::Messages`]).
//! - [`gemini`]: Gemini `generateContent` ([`gemini::GenerateContent`]).
//! - [`stream`]: streamed deltas ([`DeltaEvent`]) and their assembly into
//!   the same [`ModelResponse`] a non-streamed call returns.
//! - [`profiles`]: known models' input and output limits.
//! - [`ratelimit`]: the fleet-wide rate limiter every attempt passes
//!   (requests and tokens per minute per provider account and model).
//! - [`retry`]: backoff with jitter, honouring `Retry-After`.
//! - [`Providers`]: resolves `provider:model` strings to clients; the
//!   known hosts are one table (`hosts.rs`), and the embedding code
//!   registers providers of its own ([`ProviderFactory`], e.g. the
//!   `deepfleet-replay` crate's scripted model).
#![warn(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod anthropic;
pub mod classify;
mod error;
mod factory;
pub mod gemini;
mod hosts;
pub mod openai;
pub mod profiles;
mod protocols;
pub mod ratelimit;
mod registry;
pub mod retry;
mod schema;
pub mod stream;
mod tool_list;
pub mod transport;

use std::sync::Arc;

use async_trait::async_trait;
pub use deepfleet_proto::ReasoningEffort;
use deepfleet_proto::{AssistantMessage, ContentBlock, Message, ToolCall, Usage};
use serde::{Deserialize, Serialize};

pub use error::{ErrorKind, ModelError};
pub use factory::ProviderFactory;
pub use registry::{ProviderConfig, Providers, ResolvedModel};
pub use stream::{Delta, DeltaEvent, DeltaSink};
pub use tool_list::ToolList;

pub use ratelimit::RateGate;
pub use schema::Schema;

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments, shared: every request offering the
    /// tool, and every provider's wire form of it, points at one tree,
    /// serialized once.
    pub parameters: Schema,
}

/// Why a call is made, so usage and streamed tokens can be told apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallPurpose {
    /// An agent step.
    #[default]
    Agent,
    /// A summary of older messages (context compression).
    Summarization,
}

/// One model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model name as the provider knows it (no `provider:` prefix).
    pub model: String,
    /// The system prompt (empty = none), shared by the request's copies
    /// (a middleware keeps one to retry the call) and by an agent's
    /// requests while its text stays the same; the transport shares its
    /// bytes in the bodies by the same token.
    pub system: Arc<str>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call, shared with the agent that offers them
    /// (a request copies no schema).
    pub tools: Arc<[ToolSpec]>,
    /// Completion token cap, if any.
    pub max_output_tokens: Option<u64>,
    /// Provider prompt-cache key (the thread id), where supported.
    pub cache_key: Option<String>,
    /// Byte offsets into `system` where a cacheable block ends (e.g. after
    /// the memory section), ascending; empty = the whole system prompt is
    /// one block. Providers with explicit cache breakpoints (Anthropic)
    /// split the system prompt there; the others ignore them.
    pub cache_breakpoints: Vec<usize>,
    /// Why the call is made.
    pub purpose: CallPurpose,
    /// Temperature, top_p and reasoning effort; each provider sends them
    /// in its own terms.
    pub sampling: Sampling,
    /// What the rate limiter is told of this call.
    pub rate: RateHint,
}

/// What the caller tells the rate limiter of a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateHint {
    /// Input tokens as the caller counted them (the worker counts each
    /// message once); `None` = a rough count of characters.
    pub estimated_input_tokens: Option<u64>,
    /// A name stable across redeliveries of the step making the call: a
    /// wait too long to await keeps its slot under it, and the step finds
    /// it when it comes back. `None` = the call awaits any wait.
    pub claim: Option<String>,
}

/// Sampling settings of one call (the spec's `model_params` but the
/// token cap, which is [`ModelRequest::max_output_tokens`]); `None` is
/// the provider's default.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    pub top_p: Option<f64>,
    /// How hard a reasoning model thinks.
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the turn.
    #[default]
    Stop,
    /// The turn asks for tool calls.
    ToolCalls,
    /// The completion hit its token cap.
    Length,
    /// The provider filtered the output.
    ContentFilter,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The assistant turn (its `usage` is filled in).
    pub message: AssistantMessage,
    /// Tokens of this call.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish: FinishReason,
}

impl ModelResponse {
    /// The answer every protocol's conversion (streamed or not) builds, in
    /// one shape: one text block when there is text, the calls in the
    /// order given, the usage on the message too, and the model name only
    /// when the provider sent one.
    pub fn assemble(
        text: String,
        tool_calls: Vec<ToolCall>,
        usage: Usage,
        model: Option<String>,
        finish: FinishReason,
    ) -> Self {
        let content = if text.is_empty() {
            Vec::new()
        } else {
            vec![ContentBlock::text(text)]
        };
        ModelResponse {
            message: AssistantMessage {
                content,
                tool_calls,
                usage: Some(usage),
                model: model.filter(|name| !name.is_empty()),
            },
            usage,
            finish,
        }
    }
}

/// A model provider.
///
/// Implementations retry transient failures themselves within a small
/// budget (see [`retry`]) and return the last error otherwise; the caller
/// decides whether to redeliver the step.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// Runs one completion.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError>;

    /// Runs one completion, handing text and tool-call deltas to `sink` as
    /// they arrive (each tagged with the request's [`CallPurpose`]); returns
    /// the same response [`ModelClient::complete`] would.
    ///
    /// Implementations retry only until the first delta was delivered: a
    /// retry after that would show the sink a second, different answer.
    /// The default makes a non-streamed call and delivers no delta.
    async fn stream(
        &self,
        request: &ModelRequest,
        sink: &dyn DeltaSink,
    ) -> Result<ModelResponse, ModelError> {
        let _ = sink;
        self.complete(request).await
    }

    /// Checks that the provider takes this client's key with one cheap
    /// call (listing its models), no retries; clients that call no
    /// remote service have nothing to check.
    async fn check_access(&self) -> Result<(), ModelError> {
        Ok(())
    }
}
