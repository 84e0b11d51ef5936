//! Issue #14: a model answer is bounded in bytes and in time, on every
//! protocol, streamed or not. A 50 MB answer ends the call with
//! `ResponseTooLarge` after the client read no more than its cap (the
//! server counts what it could send); an answer that stalls after its
//! first bytes ends with `Timeout` once no byte came for the idle timeout,
//! long before the whole-request timeout.

use crate::support;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use deepfleet_model::anthropic::Messages;
use deepfleet_model::gemini::GenerateContent;
use deepfleet_model::openai::ChatCompletions;
use deepfleet_model::retry::RetryPolicy;
use deepfleet_model::transport::{HttpClient, TransportConfig, WireProtocol};
use deepfleet_model::{CallPurpose, ErrorKind, ModelClient, ModelError, ModelRequest};
use deepfleet_proto::Message;
use futures::stream::{self, StreamExt};
use serde_json::{Value, json};
use support::serve;

/// What the server sends: 50 MB, far past the default cap.
const HUGE: usize = 50 * 1024 * 1024;
/// Text per streamed event or body chunk.
const PIECE: usize = 64 * 1024;
/// A generous bound on any one call here: far below the request timeout,
/// far above what a bounded call takes.
const DEADLINE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy)]
enum Protocol {
    OpenAi,
    Anthropic,
    Gemini,
}

const PROTOCOLS: [Protocol; 3] = [Protocol::OpenAi, Protocol::Anthropic, Protocol::Gemini];

impl Protocol {
    /// A whole non-streamed answer carrying `text`.
    fn answer(self, text: &str) -> Value {
        match self {
            Protocol::OpenAi => json!({
                "id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            }),
            Protocol::Anthropic => json!({
                "id": "msg", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": null,
                "usage": {"input_tokens": 1, "output_tokens": 1}
            }),
            Protocol::Gemini => json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}
            }),
        }
    }

    /// The events opening a stream, before any text.
    fn opening(self) -> String {
        match self {
            Protocol::OpenAi => sse(
                "",
                &json!({"id": "c", "object": "chat.completion.chunk",
                "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": {"role": "assistant"}}]}),
            ),
            Protocol::Anthropic => {
                let start = json!({"type": "message_start", "message": {"id": "msg",
                    "type": "message", "role": "assistant", "model": "m", "content": [],
                    "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}});
                let block = json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}});
                sse("message_start", &start) + &sse("content_block_start", &block)
            }
            Protocol::Gemini => String::new(),
        }
    }

    /// One streamed event carrying `text`.
    fn text_event(self, text: &str) -> String {
        match self {
            Protocol::OpenAi => sse(
                "",
                &json!({"id": "c", "object": "chat.completion.chunk",
                "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": {"content": text}}]}),
            ),
            Protocol::Anthropic => sse(
                "content_block_delta",
                &json!({"type": "content_block_delta",
                "index": 0, "delta": {"type": "text_delta", "text": text}}),
            ),
            Protocol::Gemini => sse(
                "",
                &json!({"candidates": [{"content": {"role": "model",
                "parts": [{"text": text}]}}]}),
            ),
        }
    }

    /// The events closing a stream.
    fn closing(self) -> String {
        match self {
            Protocol::OpenAi => {
                sse(
                    "",
                    &json!({"id": "c", "object": "chat.completion.chunk", "created": 1,
                    "model": "m", "choices": [{"index": 0, "delta": {},
                    "finish_reason": "stop"}]}),
                ) + "data: [DONE]\n\n"
            }
            Protocol::Anthropic => {
                sse(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": 0}),
                ) + &sse(
                    "message_delta",
                    &json!({"type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                        "usage": {"output_tokens": 1}}),
                ) + &sse("message_stop", &json!({"type": "message_stop"}))
            }
            Protocol::Gemini => sse(
                "",
                &json!({"candidates": [{"content": {"role": "model",
                "parts": [{"text": ""}]}, "finishReason": "STOP"}]}),
            ),
        }
    }

    fn client(self, root: &str, stream: bool, idle: Option<Duration>) -> Arc<dyn ModelClient> {
        let base = match self {
            Protocol::OpenAi => format!("{root}/v1"),
            Protocol::Anthropic | Protocol::Gemini => root.to_owned(),
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let defaults = TransportConfig::new(base);
        let config = TransportConfig {
            api_key: Some("k".into()),
            timeout: Duration::from_secs(120),
            idle_timeout: idle.unwrap_or(defaults.idle_timeout),
            retry: RetryPolicy::none(),
            stream,
            ..defaults
        };
        fn built<P: WireProtocol>(p: P, config: TransportConfig) -> Arc<dyn ModelClient> {
            Arc::new(HttpClient::new(p, config).unwrap())
        }
        match self {
            Protocol::OpenAi => built(ChatCompletions, config),
            Protocol::Anthropic => built(Messages, config),
            Protocol::Gemini => built(GenerateContent, config),
        }
    }
}

fn sse(name: &str, data: &Value) -> String {
    let mut event = String::new();
    if !name.is_empty() {
        event.push_str(&format!("event: {name}\n"));
    }
    event.push_str(&format!("data: {data}\n\n"));
    event
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "m".into(),
        system: "".into(),
        messages: vec![Message::user("Say a lot.")],
        tools: vec![].into(),
        max_output_tokens: None,
        cache_key: None,
        cache_breakpoints: vec![],
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

/// A server answering every request with the chunks `body` makes,
/// counting the bytes it handed to the connection.
async fn server(
    content_type: &'static str,
    body: impl Fn() -> Vec<Bytes> + Clone + Send + Sync + 'static,
    stall: bool,
) -> (String, Arc<AtomicUsize>) {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let app = Router::new().fallback(move || {
        let (body, sent) = (body.clone(), Arc::clone(&counter));
        async move {
            let chunks = stream::iter(body()).map(move |chunk| {
                sent.fetch_add(chunk.len(), Ordering::SeqCst);
                Ok::<_, Infallible>(chunk)
            });
            let body = if stall {
                Body::from_stream(chunks.chain(stream::pending()))
            } else {
                Body::from_stream(chunks)
            };
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
    });
    (serve(app).await, sent)
}

/// 50 MB of text as one JSON answer, sent in pieces.
fn huge_json(protocol: Protocol) -> Vec<Bytes> {
    let text = "a".repeat(HUGE);
    let body = protocol.answer(&text).to_string().into_bytes();
    body.chunks(PIECE).map(Bytes::copy_from_slice).collect()
}

/// 50 MB of text as a well-formed stream of many events.
fn huge_stream(protocol: Protocol) -> Vec<Bytes> {
    let piece = "a".repeat(PIECE);
    let mut chunks = vec![Bytes::from(protocol.opening())];
    chunks.extend((0..HUGE / PIECE).map(|_| Bytes::from(protocol.text_event(&piece))));
    chunks.push(Bytes::from(protocol.closing()));
    chunks
}

async fn bounded_call(client: &dyn ModelClient) -> ModelError {
    let called = tokio::time::timeout(DEADLINE, client.complete(&request()))
        .await
        .expect("the call is bounded");
    match called {
        // Never print the answer: it may be 50 MB long.
        Ok(answer) => panic!(
            "the call succeeded with {} bytes of text",
            deepfleet_proto::message::joined_text(&answer.message.content).len()
        ),
        Err(error) => error,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_answer_ends_the_call_with_the_cap_error() {
    for protocol in PROTOCOLS {
        for stream in [false, true] {
            let (content_type, body): (_, fn(Protocol) -> Vec<Bytes>) = if stream {
                ("text/event-stream", huge_stream)
            } else {
                ("application/json", huge_json)
            };
            let (root, sent) = server(content_type, move || body(protocol), false).await;
            let client = protocol.client(&root, stream, None);
            let error = bounded_call(&*client).await;
            let case = format!("{protocol:?} stream={stream}: {error}");
            assert_eq!(error.kind, ErrorKind::ResponseTooLarge, "{case}");
            assert!(error.message.contains("max_response_bytes"), "{case}");
            assert!(!error.is_retryable(), "{case}");
            // The client stopped reading at its cap (16 MiB by default): what
            // the server could hand over is that plus the socket buffers.
            let sent = sent.load(Ordering::SeqCst);
            assert!(
                sent < 40 * 1024 * 1024,
                "{case}: the server sent {sent} bytes"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_length_over_the_cap_is_refused_before_reading() {
    let app = Router::new().fallback(|| async {
        let body = vec![b' '; 17 * 1024 * 1024];
        Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, body.len())
            .body(Body::from(body))
            .unwrap()
    });
    let root = serve(app).await;
    let client = Protocol::OpenAi.client(&root, false, None);
    let error = bounded_call(&*client).await;
    assert_eq!(error.kind, ErrorKind::ResponseTooLarge, "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_stalls_ends_at_the_idle_timeout() {
    for protocol in PROTOCOLS {
        for stream in [false, true] {
            let body = move || {
                if stream {
                    vec![
                        Bytes::from(protocol.opening()),
                        Bytes::from(protocol.text_event("Hel")),
                    ]
                } else {
                    let answer = protocol.answer("Hello").to_string();
                    vec![Bytes::from(answer[..answer.len() / 2].to_owned())]
                }
            };
            let content_type = if stream {
                "text/event-stream"
            } else {
                "application/json"
            };
            let (root, _) = server(content_type, body, true).await;
            let client = protocol.client(&root, stream, Some(Duration::from_millis(300)));
            let error = bounded_call(&*client).await;
            let case = format!("{protocol:?} stream={stream}: {error}");
            assert_eq!(error.kind, ErrorKind::Timeout, "{case}");
            assert!(error.message.contains("idle_timeout_secs"), "{case}");
            assert!(error.is_retryable(), "{case}");
        }
    }
}
