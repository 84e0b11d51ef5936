use super::*;
use crate::{CallPurpose, ToolSpec};
use deepfleet_proto::ToolMessage;
use pretty_assertions::assert_eq;
use serde_json::json;

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        system: "Base.\nMemory.\nTodos.".into(),
        messages,
        tools: vec![
            ToolSpec {
                name: "ls".into(),
                description: "List".into(),
                parameters: json!({"type": "object"}).into(),
            },
            ToolSpec {
                name: "read_file".into(),
                description: String::new(),
                parameters:
                    json!({"type": "object", "properties": {"file_path": {"type": "string"}}})
                        .into(),
            },
        ]
        .into(),
        max_output_tokens: None,
        cache_key: Some("thread-1".into()),
        cache_breakpoints: vec![13],
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

#[test]
fn request_layout_with_tools_results_images_and_cache_breakpoints() {
    let messages = vec![
        Message::user("Look at /a.png"),
        Message::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("Reading.")],
            tool_calls: vec![
                ToolCall {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"file_path":"/a.png"}"#.into(),
                },
                ToolCall {
                    id: "toolu_2".into(),
                    name: "ls".into(),
                    arguments: r#"{"path": "#.into(),
                },
            ],
            ..AssistantMessage::default()
        }),
        Message::Tool(ToolMessage {
            tool_call_id: "toolu_1".into(),
            name: "read_file".into(),
            content: vec![ContentBlock::Image {
                mime_type: "image/png".into(),
                source: deepfleet_proto::ImageSource::Base64("AAAA".into()),
            }],
            status: ToolStatus::Success,
        }),
        Message::tool("toolu_2", "ls", "bad JSON", ToolStatus::Error),
    ];
    let wire = serde_json::to_value(to_wire(&request(messages), 64_000, None)).unwrap();
    assert_eq!(
        wire,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 64000,
            "system": [
                {"type": "text", "text": "Base.\nMemory.", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "\nTodos."}
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Look at /a.png"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                     "input": {"file_path": "/a.png"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                     "data": "AAAA"}}
                    ]},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                     "content": [{"type": "text", "text": "bad JSON"}],
                     "cache_control": {"type": "ephemeral"}}
                ]}
            ],
            "tools": [
                {"name": "ls", "description": "List", "input_schema": {"type": "object"}},
                {"name": "read_file", "input_schema": {"type": "object", "properties":
                    {"file_path": {"type": "string"}}}, "cache_control": {"type": "ephemeral"}}
            ]
        })
    );
}

#[test]
fn system_blocks_split_at_valid_breakpoints_and_cache_the_last_two() {
    let cached = |text: &str| TextBlock {
        kind: "text".into(),
        text: text.into(),
        cache_control: Some(CacheControl::ephemeral()),
    };
    let plain = |text: &str| TextBlock {
        cache_control: None,
        ..cached(text)
    };
    assert_eq!(system_blocks("", &[]), vec![]);
    assert_eq!(system_blocks("abc", &[]), vec![cached("abc")]);
    // 0, past the end and inside "é" are ignored; duplicates collapse.
    assert_eq!(
        system_blocks("abéd", &[2, 0, 3, 9, 2]),
        vec![cached("ab"), plain("éd")]
    );
    assert_eq!(system_blocks("abcd", &[4]), vec![cached("abcd")]);
    assert_eq!(
        system_blocks("abcdef", &[5, 1, 3]),
        vec![plain("a"), cached("bc"), cached("de"), plain("f")]
    );
}

#[test]
fn consecutive_user_content_merges_and_empty_messages_vanish() {
    let messages = vec![
        Message::user("one"),
        Message::assistant(""),
        Message::user("two"),
    ];
    let mut request = request(messages);
    request.tools = Vec::new().into();
    request.system = "".into();
    request.max_output_tokens = Some(10);
    let wire = serde_json::to_value(to_wire(&request, 64_000, None)).unwrap();
    assert_eq!(
        wire,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two", "cache_control": {"type": "ephemeral"}}
            ]}]
        })
    );
}

/// A recorded Messages answer: text then a tool call, with cache usage.
fn recorded() -> serde_json::Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "text", "text": "I'll read it."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "read_file",
             "input": {"file_path": "/todo.md", "limit": 20}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 2000, "output_tokens": 40,
                  "service_tier": "standard"}
    })
}

#[test]
fn response_maps_text_tool_use_usage_and_finish() {
    let response = from_wire(serde_json::from_value(recorded()).unwrap());
    let usage = Usage {
        input_tokens: 2112,
        output_tokens: 40,
        cached_input_tokens: 2000,
    };
    assert_eq!(
        response,
        ModelResponse {
            message: AssistantMessage {
                content: vec![ContentBlock::text("I'll read it.")],
                tool_calls: vec![ToolCall {
                    id: "toolu_01A09q90qw90lq917835lq9".into(),
                    name: "read_file".into(),
                    arguments: r#"{"file_path":"/todo.md","limit":20}"#.into(),
                }],
                usage: Some(usage),
                model: Some("claude-sonnet-4-5-20250929".into()),
            },
            usage,
            finish: FinishReason::ToolCalls,
        }
    );
}

#[test]
fn unknown_blocks_are_skipped_and_stop_reasons_map() {
    let mut body = recorded();
    body["content"] = json!([{"type": "thinking", "thinking": "hmm", "signature": "x"},
                             {"type": "text", "text": "done"}]);
    body["stop_reason"] = json!("end_turn");
    let response = from_wire(serde_json::from_value(body).unwrap());
    assert_eq!(response.message.content, vec![ContentBlock::text("done")]);
    assert_eq!(response.finish, FinishReason::Stop);
    let cases = [
        (Some("end_turn"), false, FinishReason::Stop),
        (Some("max_tokens"), true, FinishReason::Length),
        (Some("refusal"), false, FinishReason::ContentFilter),
        (Some("pause_turn"), true, FinishReason::ToolCalls),
        (None, false, FinishReason::Stop),
    ];
    for (reason, calls, expected) in cases {
        assert_eq!(finish_reason(reason, calls), expected, "{reason:?}");
    }
}

#[test]
fn a_tool_use_without_an_id_parses_with_an_empty_one() {
    let mut body = recorded();
    body["content"] = json!([{"type": "tool_use", "name": "ls", "input": {}},
                             {"type": "tool_use", "id": "", "name": "ls", "input": {}}]);
    let response = from_wire(serde_json::from_value(body).unwrap());
    let ids: Vec<&str> = response
        .message
        .tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["", ""]);
}

/// Issue #14: a `tool_use` without a name is the harness's to answer (an
/// unknown-tool error the model reads), not an undecodable answer.
#[test]
fn a_tool_use_without_a_name_decodes_with_an_empty_name() {
    let response: MessagesResponse = serde_json::from_value(serde_json::json!({
        "id": "msg", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_1", "input": {}}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1}
    }))
    .unwrap();
    let calls = from_wire(response).message.tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("toolu_1", "")
    );
}

#[test]
fn sampling_settings_are_sent_in_messages_terms_without_thinking() {
    let mut request = request(vec![Message::user("Hi")]);
    request.sampling = crate::Sampling {
        temperature: Some(0.3),
        top_p: Some(0.9),
        reasoning_effort: Some(crate::ReasoningEffort::High),
    };
    request.max_output_tokens = Some(700);
    let wire = serde_json::to_value(to_wire(&request, 64_000, None)).unwrap();
    assert_eq!(
        (&wire["temperature"], &wire["top_p"], &wire["max_tokens"]),
        (&json!(0.3), &json!(0.9), &json!(700))
    );
    assert!(wire.get("thinking").is_none(), "{wire}");
    let wire = serde_json::to_value(to_wire(&super::tests::request(vec![]), 64_000, None)).unwrap();
    assert!(
        wire.get("temperature").is_none() && wire.get("top_p").is_none(),
        "{wire}"
    );
}
