use super::*;
use crate::backend::Backend;
use crate::sandbox::Outcome;
use crate::sandbox::tree::Changes;
use crate::tools::DynTool;
use crate::tools::tests::{ctx_with, err_text, ok_text};
use pretty_assertions::assert_eq;
use serde_json::json;

fn tool(host: SandboxHost) -> Execute {
    let limits = SandboxSpec {
        timeout_secs: 30,
        max_timeout_secs: 60,
        ..SandboxSpec::default()
    };
    Execute::new(
        Arc::new(host),
        limits,
        Duration::from_secs(300),
        vec!["/memories/".to_owned()],
    )
}

fn ran(output: &str, end: End, truncated: bool) -> Ran {
    Ran {
        outcome: Outcome {
            output: output.as_bytes().to_vec(),
            truncated,
            end,
        },
        changes: Changes::default(),
        hidden: Vec::new(),
    }
}

#[test]
fn results_end_with_the_exit_line_then_the_truncation_line_then_the_notes() {
    let limits = SandboxSpec::default();
    let format = |r: &Ran, notes: &[String]| format_result(r, 7, &limits, notes);
    assert_eq!(
        format(&ran("hi\n", End::Exited(0), false), &[]),
        "hi\n[Command succeeded with exit code 0]"
    );
    assert_eq!(
        format(
            &ran("", End::Exited(2), true),
            &["/x.bin was not kept: binary".to_owned()]
        ),
        "[Command failed with exit code 2]\n[Output was truncated due to size limits]\n[/x.bin was not kept: binary]"
    );
    assert_eq!(
        format(&ran("partial", End::TimedOut, false), &[]),
        "partial\n[Command timed out after 7 seconds and was killed]"
    );
    assert_eq!(
        format(&ran("", End::Exited(152), false), &[]),
        "[Command failed with exit code 152]\n[A process used up its CPU time limit (120 s) and was stopped]"
    );
}

#[tokio::test]
async fn timeouts_default_and_are_checked_before_anything_runs() {
    let tool = tool(SandboxHost::searching("/nonexistent"));
    assert_eq!(tool.timeout(None), Ok(30));
    assert_eq!(tool.timeout(Some(60)), Ok(60));
    let (ctx, _) = ctx_with(&[]);
    for (timeout, expected) in [
        (
            -5,
            "Error: timeout must be a positive number of seconds (got -5).",
        ),
        (
            0,
            "Error: timeout must be a positive number of seconds (got 0).",
        ),
        (61, "Error: timeout 61s exceeds maximum allowed (60s)."),
    ] {
        let args = json!({"command": "true", "timeout": timeout});
        assert_eq!(err_text(&tool, &ctx, args).await, expected);
    }
    let args = json!({"command": "  "});
    assert_eq!(
        err_text(&tool, &ctx, args).await,
        "Error: `command` must not be empty."
    );
}

#[test]
fn the_worker_tool_limit_caps_the_largest_timeout_offered() {
    let limits = SandboxSpec::default();
    let host = Arc::new(SandboxHost::searching("/nonexistent"));
    let tool = Execute::new(host, limits, Duration::from_secs(65), Vec::new());
    assert_eq!((tool.default_timeout, tool.max_timeout), (60, 60));
    let description = DynTool::spec(&tool).description;
    assert!(
        description.contains("(default 60, at most 60)"),
        "{description}"
    );
    assert!(description.contains("there is no network"), "{description}");
}

#[tokio::test]
async fn changes_come_back_into_the_thread_files_but_not_into_routed_paths() {
    let tool = tool(SandboxHost::searching("/nonexistent"));
    let (ctx, backend) = ctx_with(&[("/old.txt", "old"), ("/gone.txt", "x")]);
    let mut done = ran("", End::Exited(0), false);
    done.changes.written = [
        ("/old.txt".to_owned(), "new".to_owned()),
        ("/memories/m.md".to_owned(), "m".to_owned()),
    ]
    .into();
    done.changes.deleted = vec!["/gone.txt".to_owned()];
    let notes = tool
        .write_back(ctx.tool("c").thread_files(), &done)
        .await
        .unwrap();
    assert_eq!(
        notes,
        [
            "/memories/m.md was not kept: /memories/ is not in the sandbox; write it with `write_file`"
        ]
    );
    assert_eq!(backend.read("/old.txt").await.unwrap().content, "new");
    assert_eq!(backend.read("/gone.txt").await, Err(BackendError::NotFound));
    assert_eq!(
        backend.changes().keys().collect::<Vec<_>>(),
        ["/gone.txt", "/old.txt"]
    );
}

/// The whole call on this machine's sandbox, when it has one.
#[tokio::test]
async fn a_command_reads_what_write_file_wrote_and_its_files_come_back() {
    let host = SandboxHost::system();
    if let Err(reason) = host.available().await {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "needs bubblewrap: {reason}"
        );
        return;
    }
    let tool = Execute::new(
        host,
        SandboxSpec::default(),
        Duration::from_secs(300),
        Vec::new(),
    );
    let (ctx, backend) = ctx_with(&[]);
    backend
        .write("/src/count.sh", "wc -l < /data.txt\n")
        .await
        .unwrap();
    backend.write("/data.txt", "a\nb\nc\n").await.unwrap();
    let args = json!({"command": "mkdir /out && sh /src/count.sh > /out/count.txt && cat /out/count.txt && printf '\\377' > /blob.bin"});
    assert_eq!(
        ok_text(&tool, &ctx, args).await,
        "3\n[Command succeeded with exit code 0]\n[/blob.bin was not kept: it is not UTF-8 text, and only text files flow back into the thread's files]"
    );
    assert_eq!(backend.read("/out/count.txt").await.unwrap().content, "3\n");
    assert_eq!(backend.read("/blob.bin").await, Err(BackendError::NotFound));
}
