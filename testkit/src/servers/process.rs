//! A server process in a group of its own, stopped by signals to the
//! whole group.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::time::Instant;

/// How often a starting or stopping server is looked at.
const POLL: Duration = Duration::from_millis(100);

/// A loopback port that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// A running server: the group leader it was started as.
pub(super) struct Group {
    child: Child,
    what: &'static str,
}

impl Group {
    /// Starts `cmd` as the leader of a new process group, its output
    /// appended to `log`.
    pub(super) fn spawn(
        mut cmd: Command,
        what: &'static str,
        log: &std::path::Path,
    ) -> anyhow::Result<Group> {
        use std::os::unix::process::CommandExt;
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        let err = out.try_clone()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {what}"))?;
        Ok(Group { child, what })
    }

    /// Whether the leader exited; its status if so.
    pub(super) fn exited(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// Sends `signal` (`TERM`, `KILL`, `STOP`, `CONT`) to the whole group.
    pub(super) fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let group = format!("-{}", self.child.id());
        let status = Command::new("kill")
            .args([&format!("-{signal}"), "--", &group])
            .stderr(Stdio::null())
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("kill -{signal} of {} (group {group}) failed", self.what);
        }
        Ok(())
    }

    /// Waits up to `within` for the leader to exit; whether it did.
    pub(super) async fn wait(&mut self, within: Duration) -> anyhow::Result<bool> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.exited()?.is_some() {
                return Ok(true);
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(false)
    }

    /// Asks the group to stop (SIGTERM) and waits up to `within`; then
    /// kills what is left.
    pub(super) async fn stop(mut self, within: Duration) -> anyhow::Result<()> {
        if self.exited()?.is_none() {
            // The group may already be gone; what did not stop in time is
            // killed below.
            let _ = self.signal("TERM");
            self.wait(within).await?;
        }
        self.kill();
        Ok(())
    }

    /// SIGKILLs the group and reaps the leader.
    pub(super) fn kill(&mut self) {
        let _ = self.signal("KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits up to `within` until `127.0.0.1:port` accepts connections;
/// fails early when `group` exits.
pub(super) async fn wait_listening(
    group: &mut Group,
    port: u16,
    within: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if let Some(status) = group.exited()? {
            bail!(
                "{} exited ({status}) before listening on {port}",
                group.what
            );
        }
        if Instant::now() >= deadline {
            bail!("{} did not listen on {port} within {within:?}", group.what);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits up to `within` until nothing listens on `127.0.0.1:port`.
pub(super) async fn wait_closed(port: u16, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_ok()
    {
        if Instant::now() >= deadline {
            bail!("port {port} still accepts connections after {within:?}");
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}
