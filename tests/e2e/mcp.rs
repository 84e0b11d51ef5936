//! Agents calling tools of real MCP servers that no one here wrote,
//! installed pinned from the npm registry into `.mcp-servers/` by
//! `scripts/mcp-servers.sh` (`make test` runs it; a scenario runs it too
//! when the packages are missing): `@modelcontextprotocol/server-everything`
//! over stdio and over streamable HTTP, and
//! `@modelcontextprotocol/server-filesystem` over stdio. Without node,
//! npm or the registry a scenario is skipped with a note, and fails under
//! `CI=true`. Bad arguments, a timeout, a server killed mid-call and a
//! server that never starts each become a tool error the model reads, and
//! the run goes on.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use deepfleet_proto::{ResultStatus, TaskLine};
use deepfleet_testkit::fleet::services;
use deepfleet_testkit::script::{Call, ScriptBuilder, When};
use serde_json::json;
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

use crate::live_scheduler::free_port;
use crate::support::{replay_model, scenario, spec, task};

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";

/// The packages' folder, installed once per test process; `None` (skip)
/// when they cannot be installed outside CI.
async fn packages() -> Option<&'static Path> {
    static INSTALLED: OnceCell<Option<PathBuf>> = OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let prefix = root.join(".mcp-servers");
            // The script checks the pinned versions and installs what is
            // missing; under CI=true it fails when it cannot.
            let ran = Command::new(root.join("scripts/mcp-servers.sh"))
                .stdout(Stdio::null())
                .status()
                .await;
            let ready = [EVERYTHING, FILESYSTEM]
                .iter()
                .all(|p| entry(&prefix, p).exists());
            if ready && ran.as_ref().is_ok_and(|s| s.success()) {
                return Some(prefix);
            }
            let hint = format!(
                "scripts/mcp-servers.sh could not install {EVERYTHING} and {FILESYSTEM} \
                 into .mcp-servers ({ran:?}; are Node 20, npm and the npm registry reachable?)"
            );
            assert!(!services::in_ci(), "{hint}");
            eprintln!("skipping: {hint}");
            None
        })
        .await
        .as_deref()
}

/// A package's server script.
fn entry(prefix: &Path, package: &str) -> PathBuf {
    prefix
        .join("node_modules")
        .join(package)
        .join("dist/index.js")
}

/// The scenario's spec: `servers` (YAML lines under `mcp_servers:`).
fn mcp_spec(name: &str, dir: &Path, script: &str, servers: &str) -> deepfleet_proto::AgentSpec {
    spec(
        name,
        &replay_model(dir, script),
        &format!("mcp_servers:\n{servers}"),
    )
}

/// Each turn checks the last tool result and makes the next call; any
/// surprise ends the run with what the model read.
fn chain(steps: &[(&str, Call)], answer: &str) -> String {
    let mut script = ScriptBuilder::new();
    for (turn, (expect, call)) in steps.iter().enumerate() {
        let when = When::at_turn(u32::try_from(turn).unwrap());
        let when = if expect.is_empty() {
            when
        } else {
            when.last_tool(expect)
        };
        script = script.call(when, [call.clone()]);
    }
    let last = steps.len();
    script
        .answer(
            When::at_turn(u32::try_from(last).unwrap()).last_tool(answer),
            "{{last_tool}}",
        )
        .answer(When::always(), "unexpected: {{last_tool}}")
        .build()
}

scenario!(
    everything_over_stdio_with_bad_arguments_and_context_env,
    |fleet| {
        let Some(prefix) = packages().await else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let script = chain(
            &[
                ("", Call::new("echo", json!({"message": "hello mcp"}))),
                (
                    "^Echo: hello mcp$",
                    Call::new("get-sum", json!({"a": "two", "b": 3})),
                ),
                ("(?i)error", Call::new("get-env", json!({}))),
                (
                    "\"DF_MCP_USER\": \"u-42\"",
                    Call::new("get-sum", json!({"a": 2, "b": 3})),
                ),
            ],
            "sum of 2 and 3 is 5",
        );
        let servers = format!(
            "  everything:\n    command: node\n    args: ['{}', stdio]\n    env: {{DF_MCP_USER: {{context: user}}}}\n",
            entry(prefix, EVERYTHING).display()
        );
        let spec = mcp_spec("mcp-stdio", dir.path(), &script, &servers);
        let line = TaskLine {
            context: Some(json!({"user": "u-42"})),
            ..task("t1", "use the everything server")
        };
        let results = fleet.run(&spec, &[line]).await.unwrap();
        let r = &results[0];
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output, "The sum of 2 and 3 is 5.");
        assert_eq!(r.steps, 5);
    }
);

/// server-everything serving streamable HTTP on a free port, stopped
/// when dropped.
async fn everything_http(prefix: &Path) -> (Child, u16) {
    let port = free_port();
    let child = Command::new("node")
        .arg(entry(prefix, EVERYTHING))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (child, port);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("server-everything did not listen on port {port}");
}

scenario!(everything_over_streamable_http, |fleet| {
    let Some(prefix) = packages().await else {
        return;
    };
    let (_server, port) = everything_http(prefix).await;
    let dir = tempfile::tempdir().unwrap();
    let script = chain(
        &[
            ("", Call::new("echo", json!({"message": "over http"}))),
            // An image with text around it: the text is what the replay
            // model matches, the image goes to the model as a block.
            ("^Echo: over http$", Call::new("get-tiny-image", json!({}))),
            (
                "Here's the image you requested",
                Call::new("get-resource-reference", json!({"resourceId": 2})),
            ),
            // An embedded resource reads as its URI and text.
            (
                "\\[resource demo://resource/dynamic/text/2\\]\\nResource 2: This is a plaintext",
                Call::new("get-structured-content", json!({"location": "New York"})),
            ),
            (
                "\"temperature\"",
                Call::new("get-sum", json!({"a": 40, "b": 2})),
            ),
        ],
        "is 42",
    );
    let servers = format!(
        "  remote:\n    url: 'http://127.0.0.1:{port}/mcp'\n    headers: {{X-Deepfleet-Test: yes}}\n    \
         tools: [echo, get-sum, get-tiny-image, get-resource-reference, get-structured-content]\n"
    );
    let spec = mcp_spec("mcp-http", dir.path(), &script, &servers);
    let results = fleet.run(&spec, &[task("t1", "over http")]).await.unwrap();
    let r = &results[0];
    assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
    assert_eq!(r.output, "The sum of 40 and 2 is 42.");
});

// A result past the offload limit is saved under /large_tool_results/ and
// the model reads the stub with a preview, as for any tool.
scenario!(
    a_large_mcp_result_is_offloaded_like_any_tool_result,
    |fleet| {
        let Some(prefix) = packages().await else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let big = (0..3000)
            .map(|i| format!("row {i}: the quick brown fox jumps over the lazy dog"))
            .collect::<Vec<_>>()
            .join("\n");
        let script = chain(
            &[("", Call::new("echo", json!({"message": big})))],
            "^Tool result too large",
        );
        let servers = format!(
            "  everything:\n    command: node\n    args: ['{}', stdio]\n    tools: [echo]\n",
            entry(prefix, EVERYTHING).display()
        );
        let spec = mcp_spec("mcp-offload", dir.path(), &script, &servers);
        let results = fleet.run(&spec, &[task("t1", "echo a lot")]).await.unwrap();
        let r = &results[0];
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        let (path, saved) = r
            .files
            .iter()
            .find(|(path, _)| path.starts_with("/large_tool_results/"))
            .expect("the offloaded result");
        assert!(
            r.output.contains(path.as_str()),
            "{}",
            &r.output[..300.min(r.output.len())]
        );
        assert!(
            r.output.len() < 10_000,
            "the model read a preview, not the result"
        );
        assert_eq!(saved.trim_end(), format!("Echo: {big}"));
    }
);

scenario!(
    filesystem_tools_collide_with_built_ins_and_are_prefixed,
    |fleet| {
        let Some(prefix) = packages().await else {
            return;
        };
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("notes.txt"), "hello from disk\n").unwrap();
        let notes = root.path().join("notes.txt");
        let dir = tempfile::tempdir().unwrap();
        let script = chain(
            &[
                (
                    "",
                    Call::new("list_directory", json!({"path": root.path()})),
                ),
                (
                    "\\[FILE\\] notes.txt",
                    Call::new("fs__read_text_file", json!({"path": notes})),
                ),
            ],
            "hello from disk",
        );
        let servers = format!(
            "  fs:\n    command: node\n    args: ['{}', '{}']\n",
            entry(prefix, FILESYSTEM).display(),
            root.path().display()
        );
        let spec = mcp_spec("mcp-fs", dir.path(), &script, &servers);
        let results = fleet.run(&spec, &[task("t1", "read notes")]).await.unwrap();
        let r = &results[0];
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output.trim_end(), "hello from disk");
    }
);

scenario!(
    timeouts_deaths_and_servers_that_never_start_are_errors_the_model_reads,
    |fleet| {
        let Some(prefix) = packages().await else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let long = |duration: u32| json!({"duration": duration, "steps": 1});
        let script = chain(
            &[
                (
                    "",
                    Call::new("slow__trigger-long-running-operation", long(5)),
                ),
                (
                    "did not answer within 1 s",
                    Call::new("broken__echo", json!({"message": "x"})),
                ),
                (
                    "could not be started",
                    Call::new("dying__trigger-long-running-operation", long(20)),
                ),
                (
                    "stopped during the call",
                    Call::new("dying__echo", json!({"message": "back"})),
                ),
            ],
            "^Echo: back$",
        );
        let index = entry(prefix, EVERYTHING);
        let servers = format!(
            "  slow: {{command: node, args: ['{index}', stdio], timeout_secs: 1}}\n\
         \x20 dying: {{command: '{relay}', args: ['{index}']}}\n\
         \x20 broken: {{command: /nonexistent/mcp-server, tools: [echo]}}\n",
            index = index.display(),
            relay = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/e2e/mcp/dies_mid_call.sh")
                .display()
        );
        let spec = mcp_spec("mcp-failures", dir.path(), &script, &servers);
        let results = fleet.run(&spec, &[task("t1", "survive")]).await.unwrap();
        let r = &results[0];
        assert_eq!(r.status, ResultStatus::Success, "{:?}", r.error);
        assert_eq!(r.output, "Echo: back");
        assert_eq!(r.steps, 5);
    }
);
