use super::*;
use crate::backend::StateBackend;
use pretty_assertions::assert_eq;

#[test]
fn ids_are_sanitized() {
    assert_eq!(sanitize_id("call_8"), "call_8");
    assert_eq!(sanitize_id("a.b/c\\d"), "a_b_c_d");
    let long = "x".repeat(129);
    let hashed = sanitize_id(&long);
    assert!(hashed.starts_with("call-"), "{hashed}");
    assert_eq!(hashed.len(), 5 + 64);
    assert_eq!(sanitize_id(&long), hashed);
    let unknown = sanitize_id("");
    assert!(
        unknown.starts_with("unknown-") && unknown.len() == 16,
        "{unknown}"
    );
    assert_eq!(result_path("call_8"), "/large_tool_results/call_8");
}

#[test]
fn short_texts_preview_whole() {
    let (text, omitted, clipped) = preview("a\nb\nc");
    assert_eq!(text, "1  a\n2  b\n3  c");
    assert!(!omitted && !clipped);
}

#[test]
fn long_texts_preview_head_and_tail() {
    let rows: Vec<String> = (0..3000).map(|i| format!("row {i}")).collect();
    let (text, omitted, clipped) = preview(&rows.join("\n"));
    assert_eq!(
        text,
        "1  row 0\n2  row 1\n3  row 2\n4  row 3\n5  row 4\n\
         ... [2990 lines truncated] ...\n\
         2996  row 2995\n2997  row 2996\n2998  row 2997\n2999  row 2998\n3000  row 2999"
    );
    assert!(omitted && !clipped);
}

#[test]
fn long_lines_are_clipped() {
    let (text, _, clipped) = preview(&"z".repeat(1_500));
    assert!(clipped);
    assert_eq!(text.len(), "1  ".len() + 1_000);
}

// deepagents conformance §13.2 item 10: a user tool's 3,000-line result
// is offloaded to `/large_tool_results/call_8` with a 5+5 preview; the same
// size from a file tool is not.
#[tokio::test]
async fn large_results_are_offloaded_with_a_stub() {
    let rows: Vec<String> = (0..3000)
        .map(|i| format!("row {i}: the quick brown fox jumps over the lazy dog {i}"))
        .collect();
    let text = rows.join("\n");
    let backend = StateBackend::new(Default::default());
    let output = ToolOutput::Text(text.clone());
    let done = offload_tool_result(&backend, "fetch", "call_8", &output)
        .await
        .unwrap();
    let ToolOutput::Text(stub) = done.output() else {
        panic!("{:?}", done.output());
    };
    assert!(stub.starts_with(
        "Tool result too large, the result of this tool call call_8 was saved in the filesystem at this path: /large_tool_results/call_8\n"
    ));
    assert!(stub.contains("Here is a preview showing the head and tail of the result"));
    assert!(stub.contains("):\n1  row 0: the quick"), "{stub}");
    assert!(stub.contains("... [2990 lines truncated] ..."));
    assert!(stub.contains("3000  row 2999: the quick"));
    assert!(done.tokens_before > TOOL_RESULT_TOKEN_LIMIT);
    assert!(done.tokens_after < 1_000);
    assert_eq!(
        backend
            .read("/large_tool_results/call_8")
            .await
            .unwrap()
            .content,
        text
    );
    assert_eq!(
        offload_tool_result(&backend, "read_file", "call_9", &output).await,
        None
    );
    let small = ToolOutput::Text("fine".into());
    assert_eq!(
        offload_tool_result(&backend, "fetch", "call_10", &small).await,
        None
    );
}

#[test]
fn long_ids_are_shortened_in_the_stub() {
    let id = "c".repeat(40);
    let stub = tool_result_stub(&id, "/p", "x");
    assert!(stub.contains(&format!("tool call {}... was saved", "c".repeat(32))));
    assert!(stub.ends_with("Here is a preview of the result:\n1  x"));
}

#[test]
fn user_stub_names_the_file() {
    let stub = user_message_stub("/conversation_history/u.md", "hello");
    assert!(stub.starts_with(
        "Message content too large and was saved to the filesystem at: /conversation_history/u.md\n"
    ));
    assert!(!user_message_too_large("hello"));
}
