use super::*;
use crate::openai::wire::{Choice, PromptTokensDetails, ResponseMessage};
use crate::{CallPurpose, ToolSpec};
use deepfleet_proto::{ToolStatus, UserMessage};
use pretty_assertions::assert_eq;
use serde_json::json;

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "gpt-test".into(),
        system: "Be brief.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "ls".into(),
            description: "List files".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}})
                .into(),
        }]
        .into(),
        max_output_tokens: Some(256),
        cache_key: Some("thread-1".into()),
        cache_breakpoints: Vec::new(),
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

fn png(data: &str) -> ContentBlock {
    ContentBlock::Image {
        mime_type: "image/png".into(),
        source: ImageSource::Base64(data.into()),
    }
}

#[test]
fn request_has_the_chat_completions_shape() {
    let messages = vec![
        Message::user("List /"),
        Message::Assistant(AssistantMessage {
            content: vec![],
            tool_calls: vec![ToolCall {
                id: "call_0_0".into(),
                name: "ls".into(),
                arguments: r#"{"path": "/"}"#.into(),
            }],
            ..AssistantMessage::default()
        }),
        Message::tool("call_0_0", "ls", "a.txt", ToolStatus::Success),
    ];
    let wire = serde_json::to_value(to_wire(&request(messages), None)).unwrap();
    assert_eq!(
        wire,
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "List /"},
                {"role": "assistant", "tool_calls": [
                    {"id": "call_0_0", "type": "function",
                     "function": {"name": "ls", "arguments": "{\"path\": \"/\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_0_0", "content": "a.txt"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "ls", "description": "List files",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}
            }}],
            "tool_choice": "auto",
            "max_completion_tokens": 256,
            "prompt_cache_key": "thread-1"
        })
    );
}

#[test]
fn empty_system_prompt_and_no_tools_are_left_out() {
    let mut req = request(vec![Message::user("hi")]);
    req.system = "".into();
    req.tools = Vec::new().into();
    req.max_output_tokens = None;
    req.cache_key = None;
    assert_eq!(
        serde_json::to_value(to_wire(&req, None)).unwrap(),
        json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
    );
}

#[test]
fn user_images_become_image_url_parts() {
    let user = Message::User(UserMessage {
        content: vec![
            ContentBlock::text("What is this?"),
            png("AAAA"),
            ContentBlock::Image {
                mime_type: "image/jpeg".into(),
                source: ImageSource::Url("https://example.invalid/a.jpg".into()),
            },
        ],
        source: None,
    });
    let wire = serde_json::to_value(to_wire(&request(vec![user]), None)).unwrap();
    assert_eq!(
        wire["messages"][1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "https://example.invalid/a.jpg"}}
        ]})
    );
}

#[test]
fn tool_images_follow_the_tool_batch_in_one_user_message() {
    let tool_with_image = |id: &str, data: &str| {
        Message::Tool(ToolMessage {
            tool_call_id: id.into(),
            name: "read_file".into(),
            content: vec![ContentBlock::text("ok"), png(data)],
            status: ToolStatus::Success,
        })
    };
    let messages = vec![
        Message::user("look"),
        tool_with_image("c1", "AAAA"),
        Message::tool("c2", "ls", "x", ToolStatus::Error),
        tool_with_image("c3", "BBBB"),
        Message::assistant("seen"),
    ];
    let wire = serde_json::to_value(to_wire(&request(messages), None)).unwrap();
    let note = "ok\n[1 image(s) attached in the next user message]";
    assert_eq!(
        wire["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "look"},
            {"role": "tool", "tool_call_id": "c1", "content": note},
            {"role": "tool", "tool_call_id": "c2", "content": "x"},
            {"role": "tool", "tool_call_id": "c3", "content": note},
            {"role": "user", "content": [
                {"type": "text", "text": "Images returned by tool call c1 (read_file):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "Images returned by tool call c3 (read_file):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}
            ]},
            {"role": "assistant", "content": "seen"}
        ])
    );
}

#[test]
fn wire_request_survives_a_json_round_trip() {
    let messages = vec![
        Message::user("a"),
        Message::assistant("b"),
        Message::tool("c", "ls", "d", ToolStatus::Success),
    ];
    let wire = to_wire(&request(messages), None);
    let json = serde_json::to_string(&wire).unwrap();
    assert_eq!(serde_json::from_str::<ChatRequest>(&json).unwrap(), wire);
}

#[test]
fn response_maps_tool_calls_usage_and_finish() {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test-2025",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": "call_a", "type": "function",
                            "function": {"name": "ls", "arguments": "{\"path\":"}}]
        }, "logprobs": null}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
                  "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0}},
        "system_fingerprint": "fp"
    });
    let response = from_wire(serde_json::from_value(body).unwrap()).unwrap();
    let usage = Usage {
        input_tokens: 120,
        output_tokens: 7,
        cached_input_tokens: 64,
    };
    assert_eq!(
        response,
        ModelResponse {
            message: AssistantMessage {
                content: vec![],
                tool_calls: vec![ToolCall {
                    id: "call_a".into(),
                    name: "ls".into(),
                    arguments: "{\"path\":".into(),
                }],
                usage: Some(usage),
                model: Some("gpt-test-2025".into()),
            },
            usage,
            finish: FinishReason::ToolCalls,
        }
    );
}

#[test]
fn finish_reasons_map_and_default_sensibly() {
    let response = |reason: Option<&str>, calls: bool| ChatResponse {
        id: String::new(),
        object: String::new(),
        created: 0,
        model: String::new(),
        choices: vec![Choice {
            index: 0,
            message: ResponseMessage {
                role: "assistant".into(),
                content: Some("t".into()),
                tool_calls: if calls {
                    vec![WireToolCall {
                        id: "i".into(),
                        kind: "function".into(),
                        function: FunctionCall {
                            name: "n".into(),
                            arguments: "{}".into(),
                        },
                    }]
                } else {
                    vec![]
                },
            },
            finish_reason: reason.map(str::to_owned),
        }],
        usage: Some(WireUsage {
            prompt_tokens: 1,
            completion_tokens: 2,
            total_tokens: 3,
            prompt_tokens_details: Some(PromptTokensDetails { cached_tokens: 0 }),
        }),
    };
    let cases = [
        (Some("stop"), false, FinishReason::Stop),
        (Some("length"), false, FinishReason::Length),
        (Some("content_filter"), false, FinishReason::ContentFilter),
        (Some("tool_calls"), true, FinishReason::ToolCalls),
        (Some("function_call"), true, FinishReason::ToolCalls),
        (None, true, FinishReason::ToolCalls),
        (Some("eos"), false, FinishReason::Stop),
        (None, false, FinishReason::Stop),
    ];
    for (reason, calls, finish) in cases {
        let mapped = from_wire(response(reason, calls)).unwrap();
        assert_eq!(mapped.finish, finish, "{reason:?}");
        assert_eq!(mapped.message.content, vec![ContentBlock::text("t")]);
        assert_eq!(mapped.message.model, None);
    }
}

#[test]
fn a_response_without_choices_is_invalid() {
    let response: ChatResponse = serde_json::from_value(json!({"choices": []})).unwrap();
    assert_eq!(
        from_wire(response).unwrap_err().kind,
        ErrorKind::InvalidResponse
    );
}

#[test]
fn a_tool_call_without_an_id_parses_with_an_empty_one() {
    // The harness names it (worker `step::call_ids`); failing the whole
    // turn here would fail the step on every redelivery.
    let body = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant",
        "tool_calls": [{"type": "function", "function": {"name": "ls", "arguments": "{}"}},
                       {"id": "", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    }}]});
    let response = from_wire(serde_json::from_value(body).unwrap()).unwrap();
    let ids: Vec<&str> = response
        .message
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["", ""]);
}

/// Issue #14: a call without a name is the harness's to answer (an
/// unknown-tool error the model reads), not an undecodable answer.
#[test]
fn a_tool_call_without_a_name_decodes_with_an_empty_name() {
    let response: ChatResponse = serde_json::from_value(json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"arguments": "{}"}}]}}]
    }))
    .unwrap();
    let calls = from_wire(response).unwrap().message.tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_1", "")
    );
}

#[test]
fn sampling_settings_are_sent_in_chat_completions_terms() {
    let mut request = request(vec![Message::user("Hi")]);
    request.sampling = crate::Sampling {
        temperature: Some(0.3),
        top_p: Some(0.9),
        reasoning_effort: Some(crate::ReasoningEffort::High),
    };
    let wire = serde_json::to_value(to_wire(&request, None)).unwrap();
    assert_eq!(
        (
            &wire["temperature"],
            &wire["top_p"],
            &wire["reasoning_effort"],
            &wire["max_completion_tokens"]
        ),
        (&json!(0.3), &json!(0.9), &json!("high"), &json!(256))
    );
    // Unset settings stay out of the body: the provider's defaults.
    let wire = serde_json::to_value(to_wire(&super::tests::request(vec![]), None)).unwrap();
    for key in ["temperature", "top_p", "reasoning_effort"] {
        assert!(wire.get(key).is_none(), "{key}: {wire}");
    }
}
