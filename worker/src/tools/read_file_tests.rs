use pretty_assertions::assert_eq;
use serde_json::json;

use super::{ReadFile, split_lines};
use crate::context::StepContext;
use crate::tools::ToolOutput;
use crate::tools::format::OUTPUT_LIMIT;
use crate::tools::tests::{call, ctx_with, err_text, ok_text};
use crate::tools::write_file::WriteFile;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

async fn read(ctx: &StepContext, args: serde_json::Value) -> String {
    ok_text(&ReadFile, ctx, args).await
}

#[tokio::test]
async fn write_then_read_returns_raw_lines_under_a_header() {
    let (ctx, _) = ctx_with(&[]);
    let content = "# Notes\n- alpha\n- beta\n- gamma\n";
    let args = json!({"file_path": "/notes.md", "content": content});
    assert_eq!(
        ok_text(&WriteFile, &ctx, args).await,
        "Updated file /notes.md"
    );
    assert_eq!(
        read(&ctx, json!({"file_path": "/notes.md"})).await,
        "@@ lines 1-4 of 4 @@\n# Notes\n- alpha\n- beta\n- gamma"
    );
    let args = json!({"file_path": "/notes.md", "content": "replaced"});
    assert_eq!(
        ok_text(&WriteFile, &ctx, args).await,
        "Updated file /notes.md"
    );
    assert_eq!(
        read(&ctx, json!({"file_path": "notes.md"})).await,
        "@@ lines 1-1 of 1 @@\nreplaced"
    );
}

#[tokio::test]
async fn pages_through_long_files() {
    let content = numbered(300);
    let (ctx, _) = ctx_with(&[("/big.txt", &content)]);
    let first = read(&ctx, json!({"file_path": "/big.txt"})).await;
    let expected: Vec<String> = (1..=100).map(|i| format!("line {i}")).collect();
    assert_eq!(
        first,
        format!(
            "@@ lines 1-100 of 300 | next offset 100 @@\n{}",
            expected.join("\n")
        )
    );
    let page = read(
        &ctx,
        json!({"file_path": "/big.txt", "offset": 100, "limit": 50}),
    )
    .await;
    let expected: Vec<String> = (101..=150).map(|i| format!("line {i}")).collect();
    assert_eq!(
        page,
        format!(
            "@@ lines 101-150 of 300 | next offset 150 @@\n{}",
            expected.join("\n")
        )
    );
    let last = read(
        &ctx,
        json!({"file_path": "/big.txt", "offset": 290, "limit": 50}),
    )
    .await;
    assert!(
        last.starts_with("@@ lines 291-300 of 300 @@\nline 291\n"),
        "{last}"
    );
    assert!(last.ends_with("line 300"));
}

#[tokio::test]
async fn offset_past_the_end_missing_and_empty_files() {
    let (ctx, _) = ctx_with(&[
        ("/three.txt", "a\nb\nc"),
        ("/empty.txt", ""),
        ("/blank.txt", " \n\n"),
    ]);
    assert_eq!(
        err_text(
            &ReadFile,
            &ctx,
            json!({"file_path": "/three.txt", "offset": 10})
        )
        .await,
        "Error: Line offset 10 exceeds file length (3 lines)"
    );
    assert_eq!(
        err_text(
            &ReadFile,
            &ctx,
            json!({"file_path": "/three.txt", "offset": 3})
        )
        .await,
        "Error: Line offset 3 exceeds file length (3 lines)"
    );
    assert_eq!(
        err_text(&ReadFile, &ctx, json!({"file_path": "/missing.txt"})).await,
        "Error: File '/missing.txt' not found"
    );
    for path in ["/empty.txt", "/blank.txt"] {
        assert_eq!(
            read(&ctx, json!({"file_path": path})).await,
            "System reminder: File exists but has empty contents"
        );
    }
    assert_eq!(
        err_text(&ReadFile, &ctx, json!({"file_path": "C:\\notes.md"})).await,
        "Error: Windows absolute paths are not supported: C:\\notes.md. Please use virtual paths starting with / (e.g., /workspace/file.txt)"
    );
}

#[tokio::test]
async fn negative_offset_and_non_positive_limit() {
    let (ctx, _) = ctx_with(&[("/three.txt", "a\r\nb\rc\n")]);
    assert_eq!(
        read(
            &ctx,
            json!({"file_path": "/three.txt", "offset": -3, "limit": 2})
        )
        .await,
        "[Requested offset -3 is before the start of the file; read from line 1 instead.]\n@@ lines 1-2 of 3 | next offset 2 @@\na\nb"
    );
    let text = read(&ctx, json!({"file_path": "/three.txt", "limit": 0})).await;
    assert!(
        text.starts_with("System reminder: no lines were read because `limit` was 0."),
        "{text}"
    );
}

#[tokio::test]
async fn cuts_large_windows_at_the_last_whole_line() {
    // 100 lines of 1,000 chars: about 100,000 chars, over the cap.
    let line = "x".repeat(999);
    let content: String = (0..100).map(|i| format!("{i:03}{line}\n")).collect();
    let (ctx, _) = ctx_with(&[("/wide.txt", &content)]);
    let text = read(&ctx, json!({"file_path": "/wide.txt"})).await;
    assert!(text.chars().count() < OUTPUT_LIMIT);
    let mut lines = text.lines();
    let notice = lines.next().unwrap_or_default();
    assert!(
        notice.starts_with('[') && notice.contains("/wide.txt"),
        "{notice}"
    );
    assert_eq!(
        lines.next(),
        Some("@@ lines 1-79 of 100 | next offset 79 | truncated due to size @@")
    );
    let body: Vec<&str> = lines.collect();
    assert_eq!(body.len(), 79);
    assert!(body.iter().all(|l| l.len() == 1_002), "a line was split");
    assert!(body[78].starts_with("078"));
    let next = read(&ctx, json!({"file_path": "/wide.txt", "offset": 79})).await;
    assert!(
        next.starts_with("@@ lines 80-100 of 100 @@\n079"),
        "{}",
        &next[..40]
    );
}

#[tokio::test]
async fn cuts_a_single_huge_line_mid_line() {
    let content = "y".repeat(200_000);
    let (ctx, _) = ctx_with(&[("/one.json", &content)]);
    let text = read(&ctx, json!({"file_path": "/one.json"})).await;
    assert_eq!(text.chars().count(), OUTPUT_LIMIT - 1);
    let mut lines = text.lines();
    let notice = lines.next().unwrap_or_default();
    assert!(
        notice.starts_with('[') && notice.contains("/one.json"),
        "{notice}"
    );
    let header = lines.next().unwrap_or_default();
    let body = lines.next().unwrap_or_default();
    assert_eq!(
        header,
        format!(
            "@@ lines 1-1 of 1 | truncated mid-line | {} of 200000 chars @@",
            body.len()
        )
    );
    assert!(body.chars().all(|c| c == 'y'));
}

#[tokio::test]
async fn images_come_back_as_image_blocks() {
    let (ctx, backend) = ctx_with(&[]);
    let mut files = backend.snapshot();
    let mut png = deepfleet_proto::FileData::text("iVBORw0KGgo=", chrono::Utc::now());
    png.encoding = deepfleet_proto::Encoding::Base64;
    files.insert("/pic.png".to_owned(), png.clone());
    files.insert("/doc.pdf".to_owned(), png);
    let mut ctx = ctx;
    ctx.backend = std::sync::Arc::new(crate::backend::StateBackend::new(files));
    let result = call(&ReadFile, &ctx, json!({"file_path": "/pic.png"})).await;
    assert_eq!(
        result,
        Ok(ToolOutput::Content(vec![
            deepfleet_proto::ContentBlock::Image {
                mime_type: "image/png".to_owned(),
                source: deepfleet_proto::ImageSource::Base64("iVBORw0KGgo=".to_owned()),
            }
        ]))
    );
    assert_eq!(
        err_text(&ReadFile, &ctx, json!({"file_path": "/doc.pdf"})).await,
        "Error: '/doc.pdf' is a binary file and cannot be read as text."
    );
}

#[test]
fn splits_lines_like_python_splitlines() {
    assert_eq!(split_lines("a\nb\r\nc\rd"), ["a", "b", "c", "d"]);
    assert_eq!(split_lines("a\n"), ["a"]);
    assert_eq!(split_lines("a\n\n"), ["a", ""]);
    assert!(split_lines("").is_empty());
}

#[test]
fn schema_carries_defaults_and_descriptions() {
    let spec = crate::tools::DynTool::spec(&ReadFile);
    let props = &spec.parameters["properties"];
    assert_eq!(props["limit"]["default"], json!(100));
    assert_eq!(props["offset"]["default"], json!(0));
    assert!(props["file_path"]["description"].is_string());
    assert_eq!(spec.parameters["required"], json!(["file_path"]));
}
