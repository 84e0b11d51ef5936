//! An MCP call's result as a tool result: text stays text, images become
//! image blocks the model sees, embedded resources their text (or a note
//! of their size when binary), audio and resource links a note, and
//! structured content its JSON when the server sent no text. A result
//! with `isError: true` is an error the model reads. Large results are
//! offloaded by the filesystem layer like any tool's.

use deepfleet_proto::{ContentBlock, ImageSource};
use rmcp::model::{CallToolResult, ContentBlock as McpBlock, ResourceContents};

use crate::tools::{ToolError, ToolOutput, ToolResult};

/// `result` of the call of `name`, as the model reads it.
pub fn to_tool_result(name: &str, result: CallToolResult) -> ToolResult {
    let mut blocks: Vec<ContentBlock> = result.content.into_iter().map(block).collect();
    let has_text = blocks
        .iter()
        .any(|b| matches!(b, ContentBlock::Text { .. }));
    if !has_text && let Some(structured) = result.structured_content {
        blocks.push(text(structured.to_string()));
    }
    if result.is_error == Some(true) {
        let message = deepfleet_proto::message::joined_text(&blocks);
        return Err(ToolError::Model(format!(
            "Error: the tool `{name}` failed: {message}"
        )));
    }
    if blocks
        .iter()
        .all(|b| matches!(b, ContentBlock::Text { .. }))
    {
        return Ok(ToolOutput::Text(deepfleet_proto::message::joined_text(
            &blocks,
        )));
    }
    Ok(ToolOutput::Content(blocks))
}

fn text(text: String) -> ContentBlock {
    ContentBlock::Text { text }
}

fn block(content: McpBlock) -> ContentBlock {
    match content {
        McpBlock::Text(t) => text(t.text),
        McpBlock::Image(image) => ContentBlock::Image {
            mime_type: image.mime_type,
            source: ImageSource::Base64(image.data),
        },
        McpBlock::Audio(audio) => text(format!(
            "[audio ({}), {} bytes of base64, not shown]",
            audio.mime_type,
            audio.data.len()
        )),
        McpBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri, text: body, ..
            } => text(format!("[resource {uri}]\n{body}")),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => text(format!(
                "[resource {uri} ({}), {} bytes of base64, not shown]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            )),
            other => text(format!(
                "[resource of a kind this worker does not read: {}]",
                kind(&other)
            )),
        },
        McpBlock::ResourceLink(link) => {
            let about = link
                .description
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            text(format!(
                "[resource link {} ({}){about}]",
                link.uri, link.name
            ))
        }
        other => text(format!(
            "[content of a kind this worker does not read: {}]",
            kind(&other)
        )),
    }
}

/// The `type` of a block newer than this worker, for the note in its place.
fn kind(value: &impl serde::Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_resources_and_structured_content_map_to_what_the_model_reads() {
        let text_only = result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(
            to_tool_result("t", text_only),
            Ok(ToolOutput::Text("a\nb".into()))
        );
        let mixed = result(json!({"content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/gzip", "blob": "AAAA"}}
        ]}));
        assert_eq!(
            to_tool_result("t", mixed),
            Ok(ToolOutput::Content(vec![
                text("look".into()),
                ContentBlock::Image {
                    mime_type: "image/png".into(),
                    source: ImageSource::Base64("iVBO".into())
                },
                text("[resource file:///a.txt]\nhello".into()),
                text(
                    "[resource file:///b.bin (application/gzip), 4 bytes of base64, not shown]"
                        .into()
                ),
            ]))
        );
        let structured = result(json!({"content": [], "structuredContent": {"temperature": 21}}));
        assert_eq!(
            to_tool_result("t", structured),
            Ok(ToolOutput::Text(r#"{"temperature":21}"#.into()))
        );
    }

    #[test]
    fn is_error_results_are_errors_the_model_reads() {
        let failed =
            result(json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}));
        assert_eq!(
            to_tool_result("weather", failed),
            Err(ToolError::Model(
                "Error: the tool `weather` failed: no such city".into()
            ))
        );
    }
}
