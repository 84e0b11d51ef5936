//! A Redis of one test: its own port and data directory.

use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::process::{Group, free_port, wait_closed, wait_listening};

/// How long a server may take to start and load its data.
const BOOT_LIMIT: Duration = Duration::from_secs(60);
/// How long a server may take to shut down before it is killed.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// How a private Redis is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct RedisOptions {
    /// Keeps an append-only file, fsynced on every write
    /// (`appendfsync always`), so even a SIGKILL loses nothing the server
    /// acknowledged. Without it the data lives in memory only.
    pub aof: bool,
}

/// A Redis of this test alone. Dropping it kills the server and removes
/// its directory.
pub struct PrivateRedis {
    group: Option<Group>,
    port: u16,
    options: RedisOptions,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for PrivateRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateRedis")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl PrivateRedis {
    /// Whether `redis-server` is installed.
    pub fn installed() -> bool {
        Command::new("redis-server")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Starts a server and waits until it answers.
    pub async fn start(options: RedisOptions) -> anyhow::Result<PrivateRedis> {
        let dir = tempfile::Builder::new()
            .prefix("deepfleet-redis-")
            .tempdir()
            .context("creating the server's directory")?;
        let mut redis = PrivateRedis {
            group: None,
            port: free_port()?,
            options,
            dir,
        };
        redis.boot().await?;
        Ok(redis)
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (SIGTERM: it writes out its data) and waits until
    /// it is gone.
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(group) = self.group.take() {
            group.stop(STOP_LIMIT).await?;
        }
        wait_closed(self.port, STOP_LIMIT).await
    }

    /// SIGKILLs the server, as a crash would.
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        if let Some(mut group) = self.group.take() {
            group.kill();
        }
        wait_closed(self.port, STOP_LIMIT).await
    }

    /// Starts the server again on the same port and directory (it loads
    /// its append-only file, if it keeps one); waits until it answers.
    pub async fn start_again(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.group.is_none(), "the server is running");
        self.boot().await
    }

    /// [`PrivateRedis::stop`] then [`PrivateRedis::start_again`]; returns
    /// how long the server was away.
    pub async fn restart(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.stop().await?;
        self.start_again().await?;
        Ok(started.elapsed())
    }

    async fn boot(&mut self) -> anyhow::Result<()> {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--daemonize", "no"])
            .arg("--dir")
            .arg(self.dir.path());
        if self.options.aof {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        let log = self.dir.path().join("server.log");
        let mut group = Group::spawn(cmd, "redis-server", &log)?;
        let listening = wait_listening(&mut group, self.port, BOOT_LIMIT).await;
        self.group = Some(group);
        listening?;
        self.wait_loaded().await
    }

    /// Waits until `PING` answers `PONG`: while a server loads its data it
    /// takes connections but answers `-LOADING`.
    async fn wait_loaded(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + BOOT_LIMIT;
        loop {
            if ping(self.port).await.unwrap_or(false) {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "redis on {} did not answer PING within {BOOT_LIMIT:?}",
                self.port
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Whether the server on `port` answers `PING` with `PONG`.
async fn ping(port: u16) -> std::io::Result<bool> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream.write_all(b"PING\r\n").await?;
    let mut reply = [0_u8; 7];
    let n = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut reply))
        .await
        .map_err(|_| std::io::Error::other("no answer"))??;
    Ok(reply[..n].starts_with(b"+PONG"))
}
