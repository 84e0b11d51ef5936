//! A RabbitMQ node of one test: its own node name, AMQP, distribution
//! and epmd ports, and its own data and log directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use tokio::time::Instant;

use super::process::{Group, free_port, wait_closed, wait_listening};

/// How long a node may take to boot (a first boot creates its schema;
/// on a loaded machine that takes many seconds).
const BOOT_LIMIT: Duration = Duration::from_secs(120);
/// How long a node may take to shut down before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(60);

/// Where Debian and Ubuntu keep the real start script: the one on the
/// `PATH` there (`/usr/sbin/rabbitmq-server`) switches to the `rabbitmq`
/// user, dropping the environment that points the node at its own
/// directories.
const PACKAGED_SCRIPT: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

/// How a private node is configured.
#[derive(Debug, Clone, Default)]
pub struct RabbitOptions {
    /// The broker's `consumer_timeout`: a consumer that holds a delivery
    /// unacknowledged for longer has its channel closed. The node checks
    /// every second, rather than every minute, so the timeout takes
    /// effect promptly. `None` keeps the broker's default (30 minutes).
    pub consumer_timeout: Option<Duration>,
}

/// A RabbitMQ node of this test alone (`guest`/`guest` on loopback).
/// Dropping it kills the node and its epmd and removes its directory.
pub struct PrivateRabbit {
    group: Option<Group>,
    node: String,
    port: u16,
    dist_port: u16,
    epmd_port: u16,
    script: PathBuf,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for PrivateRabbit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateRabbit")
            .field("node", &self.node)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl PrivateRabbit {
    /// The start script, if RabbitMQ is installed.
    pub fn script() -> Option<PathBuf> {
        let packaged = Path::new(PACKAGED_SCRIPT);
        if packaged.exists() {
            return Some(packaged.to_owned());
        }
        let found = Command::new("sh")
            .args(["-c", "command -v rabbitmq-server"])
            .output()
            .ok()?;
        let path = String::from_utf8(found.stdout).ok()?;
        let path = path.trim();
        (found.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
    }

    /// Starts a node and waits until it takes connections.
    pub async fn start(options: RabbitOptions) -> anyhow::Result<PrivateRabbit> {
        let script = Self::script().context(
            "rabbitmq-server is not installed (the Debian package `rabbitmq-server` provides it)",
        )?;
        let dir = tempfile::Builder::new()
            .prefix("deepfleet-rabbit-")
            .tempdir()
            .context("creating the node's directory")?;
        write_config(dir.path(), &options)?;
        let mut rabbit = PrivateRabbit {
            group: None,
            node: format!(
                "deepfleet-{}@localhost",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            port: free_port()?,
            dist_port: free_port()?,
            epmd_port: free_port()?,
            script,
            dir,
        };
        rabbit.boot().await?;
        Ok(rabbit)
    }

    /// The AMQP URL of the node.
    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    /// The AMQP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the node logged so far (its log files, concatenated), to check
    /// that it saw what a test made happen.
    pub fn log(&self) -> String {
        let Ok(entries) = std::fs::read_dir(self.dir.path().join("log")) else {
            return String::new();
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        paths.sort();
        paths
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    }

    /// Stops the node as an operator would (SIGTERM: clients are told the
    /// broker is shutting down) and waits until it is gone.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(group) = self.group.take() {
            group.stop(STOP_LIMIT).await?;
        }
        wait_closed(self.port, STOP_LIMIT).await
    }

    /// SIGKILLs the node, as a crash or an OOM kill would: clients see
    /// their connections drop.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut group) = self.group.take() {
            group.kill();
        }
        wait_closed(self.port, STOP_LIMIT).await
    }

    /// Starts the node again, on the same ports and data, after
    /// [`PrivateRabbit::stop`] or [`PrivateRabbit::kill`]; waits until it
    /// takes connections.
    pub async fn start_again(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.group.is_none(), "the node is running");
        self.boot().await
    }

    /// [`PrivateRabbit::stop`] then [`PrivateRabbit::start_again`];
    /// returns how long the broker was away.
    pub async fn restart(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.stop().await?;
        self.start_again().await?;
        Ok(started.elapsed())
    }

    async fn boot(&mut self) -> anyhow::Result<()> {
        let dir = self.dir.path();
        let mut cmd = Command::new(&self.script);
        cmd.current_dir(dir)
            // The Erlang cookie is written to, and read from, $HOME.
            .env("HOME", dir)
            .env("RABBITMQ_NODENAME", &self.node)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("ERL_EPMD_PORT", self.epmd_port.to_string())
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", dir.join("log"))
            .env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", dir.join("advanced.config"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
            .env("RABBITMQ_CONF_ENV_FILE", dir.join("rabbitmq-env.conf"))
            .env("RABBITMQ_PID_FILE", dir.join("pid"));
        let mut group = Group::spawn(cmd, "rabbitmq-server", &dir.join("server.log"))?;
        let listening = wait_listening(&mut group, self.port, BOOT_LIMIT).await;
        self.group = Some(group);
        listening.with_context(|| {
            format!(
                "booting RabbitMQ node {} (see {})",
                self.node,
                self.dir.path().join("server.log").display()
            )
        })
    }
}

impl Drop for PrivateRabbit {
    fn drop(&mut self) {
        if let Some(mut group) = self.group.take() {
            group.kill();
        }
        stop_epmd(self.epmd_port);
    }
}

/// Stops the epmd a node started on `port`: it outlives the node unless
/// told to go, and refuses to go while it still lists the node, which it
/// notices gone a moment after the node died.
fn stop_epmd(port: u16) {
    let port = port.to_string();
    for _ in 0..50 {
        let still_there = Command::new("epmd")
            .args(["-port", &port, "-names"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !still_there {
            return;
        }
        let _ = Command::new("epmd")
            .args(["-port", &port, "-kill"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The node's configuration: no plugins, and the consumer timeout.
fn write_config(dir: &Path, options: &RabbitOptions) -> anyhow::Result<()> {
    let mut conf = String::from("loopback_users.guest = true\n");
    let mut advanced = String::from("[{rabbit, [");
    if let Some(timeout) = options.consumer_timeout {
        conf.push_str(&format!("consumer_timeout = {}\n", timeout.as_millis()));
        advanced.push_str("{channel_tick_interval, 1000}");
    }
    advanced.push_str("]}].\n");
    std::fs::write(dir.join("rabbitmq.conf"), conf)?;
    std::fs::write(dir.join("advanced.config"), advanced)?;
    std::fs::write(dir.join("enabled_plugins"), "[].\n")?;
    std::fs::write(dir.join("rabbitmq-env.conf"), "")?;
    Ok(())
}
