//! `execute`: run a shell command in the sandbox, over the thread's files.
//!
//! deepagents' shape: `command` and an optional `timeout`, and the output
//! followed by the exit code line and, when capped, the truncation line.
//! What the command did to the files is written back to the thread's
//! state backend, so the step commits it with everything else; what could
//! not be kept is said in the output, one bracketed line each.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deepfleet_proto::SandboxSpec;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolError, ToolOutput, ToolResult};
use crate::backend::{Backend, BackendError, StateBackend};
use crate::context::ToolView;
use crate::sandbox::bwrap::MAX_FILE_BYTES;
use crate::sandbox::{End, Ran, Request, SandboxHost};

/// A shell's exit status for a process killed by `SIGXCPU`.
const EXIT_CPU_LIMIT: i32 = 128 + 24;
/// A shell's exit status for a process killed by `SIGXFSZ`.
const EXIT_FILE_LIMIT: i32 = 128 + 25;

/// Runs commands in the spec's sandbox.
pub struct Execute {
    host: Arc<SandboxHost>,
    limits: SandboxSpec,
    /// The `timeout` a call gets when it names none, in seconds.
    default_timeout: u32,
    /// The largest `timeout` a call may name.
    max_timeout: u32,
    /// Path prefixes the spec routes elsewhere (the store, a local
    /// directory): commands cannot write those.
    routed: Vec<String>,
}

impl Execute {
    /// The tool over `host` under `limits`. A call's time is bounded by the
    /// worker's own tool-call limit too, so the largest timeout offered
    /// leaves `margin` of it for copying the files in and out.
    pub fn new(
        host: Arc<SandboxHost>,
        limits: SandboxSpec,
        tool_timeout: Duration,
        routed: Vec<String>,
    ) -> Self {
        let margin = Duration::from_secs(5);
        let worker_max = u32::try_from(tool_timeout.saturating_sub(margin).as_secs())
            .unwrap_or(u32::MAX)
            .max(1);
        let max_timeout = limits.max_timeout_secs.min(worker_max);
        Execute {
            host,
            default_timeout: limits.timeout_secs.min(max_timeout),
            max_timeout,
            limits,
            routed,
        }
    }

    /// The timeout of a call that asked for `asked` seconds.
    fn timeout(&self, asked: Option<i64>) -> Result<u32, ToolError> {
        let Some(asked) = asked else {
            return Ok(self.default_timeout);
        };
        if asked < 1 {
            return Err(ToolError::Model(format!(
                "Error: timeout must be a positive number of seconds (got {asked})."
            )));
        }
        match u32::try_from(asked) {
            Ok(secs) if secs <= self.max_timeout => Ok(secs),
            _ => Err(ToolError::Model(format!(
                "Error: timeout {asked}s exceeds maximum allowed ({}s).",
                self.max_timeout
            ))),
        }
    }

    fn routed(&self, path: &str) -> Option<&str> {
        self.routed
            .iter()
            .find(|prefix| path.starts_with(prefix.as_str()))
            .map(String::as_str)
    }

    /// Writes what the command changed into the thread's files; returns
    /// notes on what it could not.
    async fn write_back(&self, files: &StateBackend, ran: &Ran) -> Result<Vec<String>, ToolError> {
        let mut notes = Vec::new();
        for (path, text) in &ran.changes.written {
            if let Some(prefix) = self.routed(path) {
                notes.push(format!(
                    "{path} was not kept: {prefix} is not in the sandbox; write it with `write_file`"
                ));
                continue;
            }
            files.write(path, text).await.map_err(fatal)?;
        }
        for path in &ran.changes.deleted {
            match files.delete(path).await {
                Ok(()) | Err(BackendError::NotFound) => {}
                Err(e) => return Err(fatal(e)),
            }
        }
        Ok(notes)
    }
}

fn fatal(error: BackendError) -> ToolError {
    ToolError::Fatal(format!("writing back the sandbox's files: {error}"))
}

/// Arguments of [`Execute`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExecuteArgs {
    /// The shell command to run, as `/bin/sh -c` takes it; it starts in
    /// `/`, where the thread's files are.
    pub command: String,
    /// Seconds the command may run before it is killed: a positive whole
    /// number, at most the maximum the tool description gives. Leave it out
    /// for the default.
    #[serde(default)]
    pub timeout: Option<i64>,
}

#[async_trait]
impl Tool for Execute {
    const NAME: &'static str = "execute";
    type Args = ExecuteArgs;

    fn description(&self) -> String {
        let limits = &self.limits;
        let network = if limits.network {
            "the network is reachable"
        } else {
            "there is no network: no address, the worker's own localhost included, can be reached"
        };
        format!(
            "Runs a shell command in an isolated sandbox and returns its output.\n\n\
             The command runs with `/bin/sh -c` in `/`, and the sandbox's filesystem is this \
             thread's files: a file written with `write_file` at `/src/app.py` is \
             `/src/app.py` for the command, and the files a command creates, changes or deletes \
             are the thread's files afterwards, for the file tools and for later commands. \
             Only UTF-8 text files of at most {max_file} bytes are kept: a binary, a symbolic \
             link or a larger file is not, and the output says so. `/tmp` is scratch space, \
             empty at every call. `/usr`, `/bin`, `/lib` and `/etc` are the system's and \
             read-only; thread files under them, or under `/tmp`, are hidden from commands. \
             Every call starts afresh: no process, environment variable or directory change \
             carries over to the next. Files are not executable: run scripts through their \
             interpreter (`sh /run.sh`, `python3 /main.py`).\n\n\
             Limits: {network}; {memory} MiB of memory per process; {processes} processes at \
             once; {cpu} s of CPU time per process. A command still running after `timeout` \
             seconds (default {default}, at most {max}) is killed with everything it started.\n\n\
             Output: stdout and stderr together, then `[Command succeeded with exit code 0]` or \
             `[Command failed with exit code N]`. Past {output} bytes the rest of the output is \
             dropped and `[Output was truncated due to size limits]` follows. A long output is \
             saved to a file under `/large_tool_results/`, and you get a preview.\n\n\
             Use it to run code, tests, builds and data processing. To read, search or edit \
             files, prefer the file tools.",
            max_file = MAX_FILE_BYTES,
            memory = limits.memory_mb,
            processes = limits.max_processes,
            cpu = limits.cpu_secs,
            default = self.default_timeout,
            max = self.max_timeout,
            output = limits.max_output_bytes,
        )
    }

    async fn call(&self, ctx: &ToolView<'_>, args: ExecuteArgs) -> ToolResult {
        if args.command.trim().is_empty() {
            return Err(ToolError::Model(
                "Error: `command` must not be empty.".to_owned(),
            ));
        }
        let timeout = self.timeout(args.timeout)?;
        let files = ctx.thread_files();
        let request = Request {
            command: &args.command,
            timeout: Duration::from_secs(u64::from(timeout)),
            limits: &self.limits,
            files: &files.snapshot(),
        };
        let ran = self
            .host
            .run(request)
            .await
            .map_err(|e| ToolError::Model(format!("Error: {e}")))?;
        let mut notes = ran.hidden.clone();
        notes.extend(ran.changes.notes.iter().cloned());
        notes.extend(self.write_back(files, &ran).await?);
        Ok(ToolOutput::Text(format_result(
            &ran,
            timeout,
            &self.limits,
            &notes,
        )))
    }
}

/// The output, then how the command ended, the truncation line and the
/// notes, one line each.
fn format_result(ran: &Ran, timeout: u32, limits: &SandboxSpec, notes: &[String]) -> String {
    let output = String::from_utf8_lossy(&ran.outcome.output);
    let mut lines: Vec<String> = Vec::new();
    if !output.is_empty() {
        lines.push(output.strip_suffix('\n').unwrap_or(&output).to_owned());
    }
    match ran.outcome.end {
        End::Exited(0) => lines.push("[Command succeeded with exit code 0]".to_owned()),
        End::Exited(code) => {
            lines.push(format!("[Command failed with exit code {code}]"));
            if code == EXIT_CPU_LIMIT {
                lines.push(format!(
                    "[A process used up its CPU time limit ({} s) and was stopped]",
                    limits.cpu_secs
                ));
            } else if code == EXIT_FILE_LIMIT {
                lines.push(format!(
                    "[A process wrote past the file size limit ({MAX_FILE_BYTES} bytes) and was stopped]"
                ));
            }
        }
        End::Signaled(signal) => lines.push(format!(
            "[Command failed: the sandbox was killed by signal {signal}]"
        )),
        End::TimedOut => lines.push(format!(
            "[Command timed out after {timeout} seconds and was killed]"
        )),
    }
    if ran.outcome.truncated {
        lines.push("[Output was truncated due to size limits]".to_owned());
    }
    lines.extend(notes.iter().map(|note| format!("[{note}]")));
    lines.join("\n")
}

#[cfg(test)]
#[path = "execute_tests.rs"]
mod tests;
