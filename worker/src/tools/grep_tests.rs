use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Grep, looks_like_regex};
use crate::tools::format::{OUTPUT_LIMIT, TRUNCATION_GUIDANCE};
use crate::tools::tests::{ctx_with, err_text, ok_text};

const FILES: &[(&str, &str)] = &[
    ("/a.txt", "foo\nbar\nfoo again"),
    ("/notes.md", "alpha\nbeta\nbeta (edited)"),
    ("/src/lib.py", "import foo"),
];

#[tokio::test]
async fn files_with_matches_is_the_default() {
    let (ctx, _) = ctx_with(FILES);
    assert_eq!(
        ok_text(&Grep, &ctx, json!({"pattern": "foo"})).await,
        "/a.txt\n/src/lib.py"
    );
    assert_eq!(
        ok_text(&Grep, &ctx, json!({"pattern": "foo", "path": "/src"})).await,
        "/src/lib.py"
    );
    assert_eq!(
        ok_text(&Grep, &ctx, json!({"pattern": "foo", "glob": "*.txt"})).await,
        "/a.txt"
    );
}

#[tokio::test]
async fn count_and_content_modes() {
    let (ctx, _) = ctx_with(FILES);
    assert_eq!(
        ok_text(
            &Grep,
            &ctx,
            json!({"pattern": "foo", "output_mode": "count"})
        )
        .await,
        "/a.txt: 2\n/src/lib.py: 1"
    );
    assert_eq!(
        ok_text(
            &Grep,
            &ctx,
            json!({"pattern": "(edited)", "output_mode": "content"})
        )
        .await,
        "/notes.md:\n  3: beta (edited)"
    );
    assert_eq!(
        ok_text(
            &Grep,
            &ctx,
            json!({"pattern": "foo", "output_mode": "content"})
        )
        .await,
        "/a.txt:\n  1: foo\n  3: foo again\n/src/lib.py:\n  1: import foo"
    );
}

#[tokio::test]
async fn no_match_notes_that_matching_is_literal() {
    let (ctx, _) = ctx_with(FILES);
    assert_eq!(
        ok_text(&Grep, &ctx, json!({"pattern": "zzz"})).await,
        "No matches found"
    );
    let text = ok_text(&Grep, &ctx, json!({"pattern": "foo|bar"})).await;
    assert!(
        text.starts_with("No matches found\n\nNote: grep matches"),
        "{text}"
    );
    assert!(
        text.contains("literal") && text.contains("'foo|bar'"),
        "{text}"
    );
}

#[tokio::test]
async fn stops_at_the_default_cap_with_a_note() {
    let content = "hit\n".repeat(1_500);
    let (ctx, _) = ctx_with(&[("/many.txt", &content)]);
    let text = ok_text(
        &Grep,
        &ctx,
        json!({"pattern": "hit", "output_mode": "content"}),
    )
    .await;
    let (body, note) = text.split_once("\n\n").unwrap_or_default();
    assert_eq!(body.lines().count(), 1 + 1_000);
    assert!(body.ends_with("  1000: hit"));
    assert!(
        note.starts_with("[Search stopped early after 1000 matches"),
        "{note}"
    );

    let text = ok_text(
        &Grep,
        &ctx,
        json!({"pattern": "hit", "output_mode": "count", "max_count": 10}),
    )
    .await;
    assert!(
        text.starts_with("/many.txt: 10\n\n[Search stopped early after 10 matches"),
        "{text}"
    );
    assert_eq!(
        err_text(&Grep, &ctx, json!({"pattern": "hit", "max_count": 0})).await,
        "Error: max_count must be a positive integer."
    );
}

#[tokio::test]
async fn caps_output_size_before_appending_the_note() {
    let line = format!("hit {}", "z".repeat(200));
    let content = format!("{line}\n").repeat(1_200);
    let (ctx, _) = ctx_with(&[("/wide.txt", &content)]);
    let text = ok_text(
        &Grep,
        &ctx,
        json!({"pattern": "hit", "output_mode": "content"}),
    )
    .await;
    let (body, note) = text
        .split_once(&format!("\n{TRUNCATION_GUIDANCE}"))
        .unwrap_or_default();
    assert_eq!(body.chars().count(), OUTPUT_LIMIT);
    assert!(
        note.starts_with("\n\n[Search stopped early after 1000 matches"),
        "{note}"
    );
}

#[tokio::test]
async fn rejects_bad_paths() {
    let (ctx, _) = ctx_with(FILES);
    assert_eq!(
        err_text(&Grep, &ctx, json!({"pattern": "x", "path": "../up"})).await,
        "Error: Path traversal not allowed: ../up"
    );
}

#[test]
fn regex_heuristic() {
    for pattern in ["a|b", "foo.*bar", "x.+", "\\d+", "\\(call\\)", "\\bword"] {
        assert!(looks_like_regex(pattern), "{pattern}");
    }
    for pattern in ["plain text", "a.b", "C:\\path", "fn main()"] {
        assert!(!looks_like_regex(pattern), "{pattern}");
    }
}

#[test]
fn schema_matches_the_deepagents_parameters() {
    let spec = crate::tools::DynTool::spec(&Grep);
    let params = &spec.parameters;
    assert_eq!(params["required"], json!(["pattern"]));
    let mode = serde_json::to_string(&params["$defs"]["OutputMode"]).unwrap_or_default();
    assert!(
        mode.contains(r#"["files_with_matches","content","count"]"#),
        "{mode}"
    );
    assert_eq!(
        params["properties"]["output_mode"]["default"],
        json!("files_with_matches")
    );
    assert_eq!(params["properties"]["max_count"]["minimum"], json!(1));
}
