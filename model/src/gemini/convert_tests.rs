use super::*;
use crate::{CallPurpose, ToolSpec};
use pretty_assertions::assert_eq;

fn request(model: &str, messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        system: "Be brief.".into(),
        messages,
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read".into(),
            parameters: json!({"type": "object", "additionalProperties": false}).into(),
        }]
        .into(),
        max_output_tokens: Some(512),
        cache_key: None,
        cache_breakpoints: vec![],
        purpose: CallPurpose::Agent,
        sampling: Default::default(),
        rate: Default::default(),
    }
}

fn history() -> Vec<Message> {
    vec![
        Message::User(deepfleet_proto::UserMessage {
            content: vec![
                ContentBlock::text("What is in /a.png?"),
                ContentBlock::Image {
                    mime_type: "image/png".into(),
                    source: ImageSource::Url("gs://bucket/a.png".into()),
                },
            ],
            source: None,
        }),
        Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall {
                id: "call_0_0".into(),
                name: "read_file".into(),
                arguments: r#"{"file_path":"/a.png"}"#.into(),
            }],
            ..AssistantMessage::default()
        }),
        Message::Tool(ToolMessage {
            tool_call_id: "call_0_0".into(),
            name: "read_file".into(),
            content: vec![
                ContentBlock::text("image"),
                ContentBlock::Image {
                    mime_type: "image/png".into(),
                    source: ImageSource::Base64("AAAA".into()),
                },
            ],
            status: ToolStatus::Success,
        }),
        Message::tool("call_0_1", "ls", "no such dir", ToolStatus::Error),
    ]
}

#[test]
fn request_layout_with_function_calls_responses_and_images() {
    let wire =
        serde_json::to_value(to_wire(&request("gemini-2.5-flash", history()), None)).unwrap();
    assert_eq!(
        wire,
        json!({
            "contents": [
                {"role": "user", "parts": [
                    {"text": "What is in /a.png?"},
                    {"fileData": {"mimeType": "image/png", "fileUri": "gs://bucket/a.png"}}
                ]},
                {"role": "model", "parts": [
                    {"functionCall": {"id": "call_0_0", "name": "read_file",
                                      "args": {"file_path": "/a.png"}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "call_0_0", "name": "read_file",
                                          "response": {"result": "image"}}},
                    {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                    {"functionResponse": {"id": "call_0_1", "name": "ls",
                                          "response": {"error": "no such dir"}}}
                ]}
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{"name": "read_file", "description": "Read",
                "parametersJsonSchema": {"type": "object", "additionalProperties": false}}]}],
            "generationConfig": {"maxOutputTokens": 512}
        })
    );
}

#[test]
fn gemini_3_calls_carry_a_thought_signature() {
    let wire = to_wire(&request("models/gemini-3-pro-preview", history()), None);
    let part = &wire.contents[1].parts[0];
    assert_eq!(
        part.thought_signature.as_deref(),
        Some("skip_thought_signature_validator")
    );
}

/// A recorded answer: a thought, text and two calls, the second with an id.
fn recorded() -> serde_json::Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "thinking...", "thought": true},
                {"text": "Reading both."},
                {"functionCall": {"name": "read_file", "args": {"file_path": "/a"}},
                 "thoughtSignature": "CiQB"},
                {"functionCall": {"id": "fc_9", "name": "ls", "args": {}}}
            ]},
            "finishReason": "STOP", "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 3000, "candidatesTokenCount": 25,
                          "thoughtsTokenCount": 5, "cachedContentTokenCount": 2048,
                          "totalTokenCount": 3030,
                          "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 3000}]},
        "modelVersion": "gemini-2.5-flash", "responseId": "abc"
    })
}

#[test]
fn response_maps_parts_usage_and_finish() {
    let response = from_wire(serde_json::from_value(recorded()).unwrap(), 2);
    let usage = Usage {
        input_tokens: 3000,
        output_tokens: 30,
        cached_input_tokens: 2048,
    };
    assert_eq!(
        response,
        ModelResponse {
            message: AssistantMessage {
                content: vec![ContentBlock::text("Reading both.")],
                tool_calls: vec![
                    ToolCall {
                        id: "call_2_0".into(),
                        name: "read_file".into(),
                        arguments: r#"{"file_path":"/a"}"#.into(),
                    },
                    ToolCall {
                        id: "fc_9".into(),
                        name: "ls".into(),
                        arguments: "{}".into(),
                    },
                ],
                usage: Some(usage),
                model: Some("gemini-2.5-flash".into()),
            },
            usage,
            finish: FinishReason::ToolCalls,
        }
    );
}

#[test]
fn blocked_and_truncated_answers_map() {
    let blocked: GenerateContentResponse =
        serde_json::from_value(json!({"promptFeedback": {"blockReason": "SAFETY"}})).unwrap();
    let response = from_wire(blocked, 0);
    assert_eq!(response.finish, FinishReason::ContentFilter);
    assert!(response.message.content.is_empty());
    let cases = [
        (Some("MAX_TOKENS"), false, FinishReason::Length),
        (Some("SAFETY"), false, FinishReason::ContentFilter),
        (Some("STOP"), true, FinishReason::ToolCalls),
        (Some("STOP"), false, FinishReason::Stop),
    ];
    for (reason, calls, expected) in cases {
        assert_eq!(finish_reason(reason, calls), expected, "{reason:?}");
    }
}

/// Issue #14: a `functionCall` without a name is the harness's to answer
/// (an unknown-tool error the model reads), not an undecodable answer.
#[test]
fn a_function_call_without_a_name_decodes_with_an_empty_name() {
    let response: GenerateContentResponse = serde_json::from_value(serde_json::json!({
        "candidates": [{"content": {"role": "model",
            "parts": [{"functionCall": {"args": {}}}]}, "finishReason": "STOP"}]
    }))
    .unwrap();
    let calls = from_wire(response, 0).message.tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "");
}

#[test]
fn sampling_settings_are_sent_as_generation_config() {
    let sampled = |model: &str, effort| {
        let mut request = request(model, vec![Message::user("Hi")]);
        request.sampling = crate::Sampling {
            temperature: Some(0.3),
            top_p: Some(0.9),
            reasoning_effort: Some(effort),
        };
        serde_json::to_value(to_wire(&request, None)).unwrap()["generationConfig"].clone()
    };
    assert_eq!(
        sampled("gemini-2.5-flash", ReasoningEffort::Medium),
        json!({"maxOutputTokens": 512, "temperature": 0.3, "topP": 0.9,
               "thinkingConfig": {"thinkingBudget": 8192}})
    );
    assert_eq!(
        sampled("gemini-3-pro-preview", ReasoningEffort::Low)["thinkingConfig"],
        json!({"thinkingLevel": "low"})
    );
    let mut plain = request("gemini-2.5-flash", vec![Message::user("Hi")]);
    plain.max_output_tokens = None;
    let wire = serde_json::to_value(to_wire(&plain, None)).unwrap();
    assert!(wire.get("generationConfig").is_none(), "{wire}");
}
