//! The Agent Chat UI (LangChain's agent-chat-ui, scaffolded by
//! `create-agent-chat-app` from the npm registry and built with `next
//! build`) served from its own origin, in headless Chromium, against a
//! live `deepfleet scheduler` and two `deepfleet worker` processes on
//! RabbitMQ and Redis: `chat_ui/drive.cjs` sends a message and sees the
//! streamed answer, the file the agent wrote, and approves a gated call
//! in the agent inbox. A screenshot per stage lands in
//! `target/chat-ui-artifacts/`.
//!
//! `scripts/chat-ui.sh` (run by `make test`) installs chromium and
//! prepares the app under `target/chat-ui/`; this test reruns it (a no-op
//! once done) without installing chromium. Skipped with a note without
//! chromium, node or the registry, failed under `CI=true`, like a missing
//! RabbitMQ or Redis.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use deepfleet_testkit::fleet::services;
use tokio::process::Command;

use crate::live_scheduler::{fixtures, free_port, listening, run_client};
use crate::support::{distributed, fleet};

/// What the driver needs: the browser, the built app and puppeteer-core.
struct ChatUi {
    chromium: PathBuf,
    app: PathBuf,
    driver_modules: PathBuf,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `None` (skip) when something is missing outside CI; fails under CI.
fn skip(hint: &str) -> Option<ChatUi> {
    assert!(!services::in_ci(), "{hint}");
    eprintln!("skipping: {hint}");
    None
}

/// Chromium on the `PATH`, and the app and driver `scripts/chat-ui.sh
/// app` prepares (scaffolding and building take a few minutes the first
/// time).
async fn chat_ui() -> Option<ChatUi> {
    let chromium = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|path| path.is_file())
    });
    let Some(chromium) = chromium else {
        return skip("chromium is not installed (scripts/chat-ui.sh installs it, as root)");
    };
    let prepared = Command::new(root().join("scripts/chat-ui.sh"))
        .arg("app")
        .kill_on_drop(true)
        .status();
    let prepared = tokio::time::timeout(Duration::from_secs(900), prepared).await;
    let app = root().join("target/chat-ui/app");
    let driver_modules = root().join("target/chat-ui/driver/node_modules");
    let ready = matches!(prepared, Ok(Ok(status)) if status.success())
        && app.join(".stamp").is_file()
        && driver_modules.join("puppeteer-core").is_dir();
    if !ready {
        return skip(
            "scripts/chat-ui.sh app could not prepare the Agent Chat UI in target/chat-ui \
             (are node, npm and the registry there?)",
        );
    }
    Some(ChatUi {
        chromium,
        app,
        driver_modules,
    })
}

#[tokio::test]
async fn agent_chat_ui_approves_an_interrupt_in_chromium() {
    let Some(ui) = chat_ui().await else {
        return;
    };
    let Some(fleet) = distributed(fleet(), 2).await else {
        return;
    };
    let artifacts = root().join("target/chat-ui-artifacts");
    let _ = std::fs::remove_dir_all(&artifacts);
    std::fs::create_dir_all(&artifacts).unwrap();

    let ui_addr = format!("127.0.0.1:{}", free_port());
    let (host, port) = ui_addr.split_once(':').unwrap();
    let mut server = Command::new("node")
        .arg(ui.app.join("node_modules/next/dist/bin/next"))
        .args(["start", "--hostname", host, "--port", port])
        .current_dir(&ui.app)
        .env("NEXT_TELEMETRY_DISABLED", "1")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    if !listening(&ui_addr).await {
        let _ = server.kill().await;
        fleet.shutdown().await.unwrap();
        panic!("the Agent Chat UI did not listen on {ui_addr}");
    }

    let drive = root().join("tests/e2e/chat_ui/drive.cjs");
    run_client(
        fleet,
        &fixtures().join("agents"),
        "chat_ui/drive.cjs",
        Duration::from_secs(180),
        |api_url, _| {
            let mut command = Command::new("node");
            command
                .arg(&drive)
                .arg(format!("http://{ui_addr}"))
                .arg(api_url)
                .arg(&artifacts)
                .env("NODE_PATH", &ui.driver_modules)
                .env("CHROMIUM", &ui.chromium);
            command
        },
    )
    .await;
    let _ = server.kill().await;
}
