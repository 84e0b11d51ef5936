//! Running the sandbox process: stdout and stderr through one pipe (so
//! the output interleaves as in a terminal), read up to a byte cap, and a
//! wall-clock limit past which the sandbox is killed.
//!
//! Killing `bwrap` is enough: its init in the sandbox's pid namespace gets
//! `SIGKILL` when `bwrap` dies (`--die-with-parent`), and with that init
//! the kernel kills every process of the namespace, background and
//! double-forked ones included. The child is also killed when its future
//! is dropped (a tool call past the worker's limit).

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

/// How long output is still read after a kill (the namespace is gone in
/// milliseconds; this only bounds a stuck pipe).
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited with this status (a shell reports a signal `N` as
    /// `128 + N`).
    Exited(i32),
    /// The sandbox itself was killed by this signal.
    Signaled(i32),
    /// It ran past its time limit and was killed.
    TimedOut,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Exited(code) => write!(f, "exit code {code}"),
            End::Signaled(signal) => write!(f, "killed by signal {signal}"),
            End::TimedOut => f.write_str("timed out"),
        }
    }
}

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Combined stdout and stderr, at most the cap.
    pub output: Vec<u8>,
    /// Whether output past the cap was dropped.
    pub truncated: bool,
    /// How it ended.
    pub end: End,
}

/// One process to run.
pub struct Spawn<'a> {
    /// The program.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [OsString],
    /// Where it starts.
    pub cwd: &'a Path,
    /// The uid and gid it runs as, when not the worker's own.
    pub user: Option<u32>,
    /// Its wall-clock limit.
    pub timeout: Duration,
    /// Bytes of output kept.
    pub max_output: usize,
}

/// Runs `spawn` to its end or its time limit.
pub async fn run(spawn: Spawn<'_>) -> io::Result<Outcome> {
    let (reader, writer) = io::pipe()?;
    let mut command = tokio::process::Command::new(spawn.program);
    command
        .args(spawn.args)
        .current_dir(spawn.cwd)
        .env_clear()
        .stdin(Stdio::null())
        .stderr(Stdio::from(writer.try_clone()?))
        .stdout(Stdio::from(writer))
        .kill_on_drop(true);
    if let Some(id) = spawn.user {
        command.uid(id).gid(id);
    }
    let mut child = command.spawn()?;
    // Our copies of the write end go with the command, so the pipe ends
    // when the sandbox's processes are gone.
    drop(command);
    let mut output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let mut captured = Captured::new(spawn.max_output);
    let finished = tokio::time::timeout(spawn.timeout, async {
        captured.read_all(&mut output).await?;
        child.wait().await
    })
    .await;
    let end = match finished {
        Ok(status) => {
            let status = status?;
            match status.code() {
                Some(code) => End::Exited(code),
                None => End::Signaled(status.signal().unwrap_or(0)),
            }
        }
        Err(_) => {
            child.start_kill()?;
            child.wait().await?;
            // What was written before the kill is still in the pipe.
            let _ = tokio::time::timeout(DRAIN_AFTER_KILL, captured.read_all(&mut output)).await;
            End::TimedOut
        }
    };
    Ok(Outcome {
        output: captured.bytes,
        truncated: captured.dropped,
        end,
    })
}

/// Output read so far; what comes past the cap is read and dropped, so
/// the command never blocks on a full pipe.
struct Captured {
    bytes: Vec<u8>,
    cap: usize,
    dropped: bool,
}

impl Captured {
    fn new(cap: usize) -> Self {
        Captured {
            bytes: Vec::new(),
            cap,
            dropped: false,
        }
    }

    async fn read_all(&mut self, pipe: &mut pipe::Receiver) -> io::Result<()> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = pipe.read(&mut buf).await?;
            if n == 0 {
                return Ok(());
            }
            let room = self.cap.saturating_sub(self.bytes.len());
            self.bytes.extend_from_slice(&buf[..n.min(room)]);
            if n > room {
                self.dropped = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn sh(
        script: &str,
        timeout: Duration,
        max_output: usize,
    ) -> (std::path::PathBuf, Vec<OsString>, Duration, usize) {
        (
            "/bin/sh".into(),
            vec!["-c".into(), script.into()],
            timeout,
            max_output,
        )
    }

    async fn run_sh(script: &str, timeout: Duration, max_output: usize) -> Outcome {
        let (program, args, timeout, max_output) = sh(script, timeout, max_output);
        run(Spawn {
            program: &program,
            args: &args,
            cwd: Path::new("/"),
            user: None,
            timeout,
            max_output,
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn stdout_and_stderr_interleave_and_the_status_is_kept() {
        let out = run_sh(
            "echo one; echo two >&2; echo three; exit 3",
            Duration::from_secs(10),
            1_000,
        )
        .await;
        assert_eq!(
            out,
            Outcome {
                output: b"one\ntwo\nthree\n".to_vec(),
                truncated: false,
                end: End::Exited(3),
            }
        );
    }

    #[tokio::test]
    async fn output_past_the_cap_is_dropped_and_the_command_still_finishes() {
        let out = run_sh(
            "head -c 500000 /dev/zero; echo done >&2",
            Duration::from_secs(10),
            100,
        )
        .await;
        assert_eq!(
            (out.output.len(), out.truncated, out.end),
            (100, true, End::Exited(0))
        );
    }

    #[tokio::test]
    async fn a_command_past_its_time_is_killed_with_what_it_printed() {
        let started = std::time::Instant::now();
        let out = run_sh("echo started; sleep 30", Duration::from_secs(2), 1_000).await;
        assert_eq!(out.end, End::TimedOut);
        assert_eq!(out.output, b"started\n");
        // The orphaned `sleep` (no pid namespace here) keeps the pipe open:
        // the drain gives up on it.
        assert!(started.elapsed() < Duration::from_secs(8));
    }
}
