//! What the test needs from the machine, provided where it can be: the
//! chart's tools venv (`scripts/helm.sh tools`), and under `CI=true`
//! podman and bubblewrap (`scripts/image.sh --tools`, from Debian).
//! Anything still missing skips the test with a note, and fails it under
//! `CI=true`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The venv's Python, when it imports the Helm SDK.
fn chart_python() -> Option<PathBuf> {
    let venv = std::env::var_os("VENV_K8S").map_or_else(|| root().join(".venv-k8s"), PathBuf::from);
    let python = venv.join("bin/python");
    let python = if venv.is_relative() {
        root().join(python)
    } else {
        python
    };
    runs(python.to_str()?, &["-c", "import helm_python, yaml"]).then_some(python)
}

/// The Python that renders the chart; `None` when something is missing
/// outside CI (the test is then skipped).
pub fn provide() -> Option<PathBuf> {
    if chart_python().is_none() {
        let _ = Command::new(root().join("scripts/helm.sh"))
            .arg("tools")
            .status();
    }
    let sandbox = || runs("podman", &["--version"]) && runs("bwrap", &["--version"]);
    if !sandbox() && in_ci() {
        let _ = Command::new(root().join("scripts/image.sh"))
            .arg("--tools")
            .status();
    }
    let python = chart_python();
    let have = [
        (
            "RabbitMQ on 127.0.0.1:5672 (scripts/services.sh)",
            TcpStream::connect("127.0.0.1:5672").is_ok(),
        ),
        (
            "the redis-server binary",
            runs("redis-server", &["--version"]),
        ),
        (
            "podman (scripts/image.sh --tools)",
            runs("podman", &["--version"]),
        ),
        (
            "bwrap (scripts/image.sh --tools)",
            runs("bwrap", &["--version"]),
        ),
        (
            "the chart's tools in .venv-k8s (scripts/helm.sh tools)",
            python.is_some(),
        ),
    ];
    let missing: Vec<&str> = have
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(what, _)| *what)
        .collect();
    if missing.is_empty() {
        return python;
    }
    let what = format!("missing: {}", missing.join(", "));
    assert!(!in_ci(), "{what}");
    eprintln!("skipped: {what}");
    None
}
