//! The `sandbox:` section of an agent spec: declaring it is what offers
//! the agent the `execute` tool, and its fields bound every command.
//!
//! Each limit has an absolute cap a spec cannot exceed, as the run limits
//! do, so no spec lets a command hold a worker without bound.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec_error::SpecError;

/// The largest `sandbox.max_timeout_secs`.
pub const MAX_TIMEOUT_SECS: u32 = 3_600;
/// The largest `sandbox.memory_mb`.
pub const MAX_MEMORY_MB: u32 = 65_536;
/// The smallest `sandbox.memory_mb`: less does not start a shell.
pub const MIN_MEMORY_MB: u32 = 16;
/// The largest `sandbox.max_processes`.
pub const MAX_PROCESSES: u32 = 4_096;
/// The largest `sandbox.cpu_secs`.
pub const MAX_CPU_SECS: u32 = 86_400;
/// The largest `sandbox.max_output_bytes`.
pub const MAX_OUTPUT_BYTES: u32 = 10 * 1024 * 1024;

/// Where and how `execute` runs commands: in a bubblewrap sandbox on the
/// worker, over a copy of the thread's files (see `docs/sandbox.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxSpec {
    /// Lets commands use the worker's network. Off by default: a command
    /// then has a loopback interface of its own and nothing else.
    pub network: bool,
    /// Seconds a command may run when the call gives no `timeout`.
    pub timeout_secs: u32,
    /// The largest `timeout` a call may ask for; at most 3600.
    pub max_timeout_secs: u32,
    /// Address space of each process of a command, in MiB (16 to 65536).
    pub memory_mb: u32,
    /// Processes and threads a command may run at once (at most 4096).
    pub max_processes: u32,
    /// CPU seconds each process of a command may use (at most 86400).
    pub cpu_secs: u32,
    /// Bytes of a command's output kept; the rest is dropped with a notice
    /// (at most 10 MiB).
    pub max_output_bytes: u32,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        SandboxSpec {
            network: false,
            timeout_secs: 120,
            max_timeout_secs: 600,
            memory_mb: 1_024,
            max_processes: 64,
            cpu_secs: 120,
            max_output_bytes: 100_000,
        }
    }
}

impl SandboxSpec {
    /// Checks each limit against its bounds; errors name the field.
    pub fn validate(&self) -> Result<(), SpecError> {
        for (field, value, min, max) in [
            (
                "max_timeout_secs",
                self.max_timeout_secs,
                1,
                MAX_TIMEOUT_SECS,
            ),
            ("timeout_secs", self.timeout_secs, 1, self.max_timeout_secs),
            ("memory_mb", self.memory_mb, MIN_MEMORY_MB, MAX_MEMORY_MB),
            ("max_processes", self.max_processes, 1, MAX_PROCESSES),
            ("cpu_secs", self.cpu_secs, 1, MAX_CPU_SECS),
            (
                "max_output_bytes",
                self.max_output_bytes,
                1,
                MAX_OUTPUT_BYTES,
            ),
        ] {
            if !(min..=max).contains(&value) {
                let bound = if field == "timeout_secs" {
                    format!("at most max_timeout_secs ({max})")
                } else {
                    format!("at most {max}")
                };
                return Err(SpecError::field(
                    format!("sandbox.{field}"),
                    format!("must be at least {min} and {bound} (got {value})"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AgentSpec;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_empty_section_enables_the_defaults_and_no_section_nothing() {
        let spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\nsandbox: {}\n").unwrap();
        assert_eq!(spec.sandbox, Some(SandboxSpec::default()));
        let spec = AgentSpec::from_yaml("name: a\nmodel: openai:x\n").unwrap();
        assert_eq!(spec.sandbox, None);
    }

    #[test]
    fn limits_out_of_bounds_name_the_field_and_line() {
        for (yaml, field) in [
            ("sandbox: {timeout_secs: 0}", "sandbox.timeout_secs"),
            (
                "sandbox: {timeout_secs: 700, max_timeout_secs: 600}",
                "sandbox.timeout_secs",
            ),
            (
                "sandbox: {max_timeout_secs: 3601}",
                "sandbox.max_timeout_secs",
            ),
            ("sandbox: {memory_mb: 8}", "sandbox.memory_mb"),
            ("sandbox: {max_processes: 0}", "sandbox.max_processes"),
            ("sandbox: {cpu_secs: 100000}", "sandbox.cpu_secs"),
            ("sandbox: {max_output_bytes: 0}", "sandbox.max_output_bytes"),
        ] {
            let src = format!("name: a\nmodel: openai:x\n{yaml}\n");
            let err = AgentSpec::from_yaml(&src).unwrap_err();
            assert_eq!((err.field.as_str(), err.line), (field, Some(3)), "{err}");
        }
        let err = AgentSpec::from_yaml("name: a\nmodel: openai:x\nsandbox: {netwrok: true}\n")
            .unwrap_err();
        assert!(err.message.contains("unknown field `netwrok`"), "{err}");
    }
}
