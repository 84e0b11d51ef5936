//! Configuration: defaults, then an optional TOML file, then
//! `DEEPFLEET__...` environment variables, then command-line flags.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use deepfleet_model::ProviderConfig;
use serde::Deserialize;

/// Everything configurable.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// RabbitMQ URL of the distributed mode.
    pub queue: Option<String>,
    /// Redis URL of the distributed mode.
    pub store: Option<String>,
    /// Name of the step queue.
    pub queue_name: String,
    /// Prefix of every Redis key.
    pub key_prefix: String,
    /// Seconds a command waits to connect to RabbitMQ or Redis before it
    /// fails naming the server (`DEEPFLEET__CONNECT_TIMEOUT_SECS`).
    pub connect_timeout_secs: u64,
    /// Worker tuning.
    pub worker: WorkerSettings,
    /// The scheduler's HTTP server.
    pub scheduler: SchedulerSettings,
    /// OTLP/HTTP collector base URL for traces; none = the standard
    /// `OTEL_EXPORTER_OTLP_*` variables decide (no export without them).
    pub otlp_endpoint: Option<String>,
    /// Where a worker (or an embedded run) serves `/metrics`, `/healthz`
    /// and `/readyz` (`DEEPFLEET__METRICS_LISTEN`, e.g. `0.0.0.0:9464`).
    pub metrics_listen: Option<String>,
    /// Model providers by name (`[providers.openai]`).
    #[serde(default)]
    pub providers: HashMap<String, ProviderConfig>,
    /// The fleet's key for runtime context: base64 of 32 bytes
    /// (`DEEPFLEET__CONTEXT_KEY`). Every scheduler and worker of a fleet
    /// shares it; contexts are stored and queued only sealed with it.
    pub context_key: Option<String>,
    /// A file holding the context key, as `deepfleet keygen --out` writes
    /// it (`DEEPFLEET__CONTEXT_KEY_FILE`), for processes that share a
    /// volume rather than a variable; `context_key` wins when both are set.
    pub context_key_file: Option<PathBuf>,
    /// Harness profiles by `provider:model` or `provider`
    /// (`[profiles."openai:gpt-5"]`): prompt and tool adjustments per model;
    /// a spec's own `profiles` lie on top.
    #[serde(default)]
    pub profiles: std::collections::BTreeMap<String, deepfleet_proto::harness::HarnessProfile>,
}

/// Worker tuning.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    /// Steps one worker runs at once (its prefetch).
    pub concurrency: u16,
    /// Deliveries of a failing step before its run fails.
    pub max_attempts: u32,
    /// Seconds to let steps in flight finish on shutdown.
    pub grace_secs: u64,
    /// First backoff of a failed step, in milliseconds.
    pub retry_base_ms: u64,
    /// Longest backoff of a failed step, in milliseconds.
    pub retry_max_ms: u64,
    /// Seconds one tool call may take before it is stopped and the model
    /// reads a timeout error (`DEEPFLEET__WORKER__TOOL_TIMEOUT_SECS`).
    pub tool_timeout_secs: u64,
    /// Seconds one step may take before it is abandoned and retried
    /// (`DEEPFLEET__WORKER__STEP_TIMEOUT_SECS`); keep it under RabbitMQ's
    /// `consumer_timeout` (30 minutes by default).
    pub step_timeout_secs: u64,
}

/// The scheduler's HTTP server.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSettings {
    /// Address of the API, `/metrics`, `/healthz` and `/readyz`
    /// (`DEEPFLEET__SCHEDULER__LISTEN`; loopback by default, `0.0.0.0:2024`
    /// in a pod).
    pub listen: String,
    /// Seconds open requests (streams, waits) may take to finish after
    /// SIGTERM before the scheduler exits anyway.
    pub grace_secs: u64,
}

impl WorkerSettings {
    /// The step retry policy these settings describe.
    pub fn retry(&self) -> deepfleet_worker::RetryConfig {
        deepfleet_worker::RetryConfig {
            max_attempts: self.max_attempts,
            base_delay: std::time::Duration::from_millis(self.retry_base_ms),
            max_delay: std::time::Duration::from_millis(self.retry_max_ms),
        }
    }

    /// The step and tool-call time limits these settings describe.
    pub fn time_limits(&self) -> deepfleet_worker::TimeLimits {
        deepfleet_worker::TimeLimits {
            step: std::time::Duration::from_secs(self.step_timeout_secs),
            tool_call: std::time::Duration::from_secs(self.tool_timeout_secs),
        }
    }
}

impl Settings {
    /// How long connecting to RabbitMQ or Redis may take.
    pub fn connect_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.connect_timeout_secs)
    }

    /// The configured context key, if any; a malformed one, or a key file
    /// that cannot be read, is an error.
    pub fn context_key(&self) -> anyhow::Result<Option<deepfleet_store::sealed::ContextKey>> {
        use deepfleet_store::sealed::ContextKey;
        if let Some(key) = self.context_key.as_deref() {
            return ContextKey::from_base64(key)
                .map(Some)
                .context("context_key (DEEPFLEET__CONTEXT_KEY)");
        }
        let Some(path) = &self.context_key_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "reading context_key_file {} (DEEPFLEET__CONTEXT_KEY_FILE)",
                path.display()
            )
        })?;
        ContextKey::from_base64(text.trim())
            .map(Some)
            .with_context(|| format!("the key in {}", path.display()))
    }

    /// Loads settings from `file` (if any) and the environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut builder = config::Config::builder()
            .set_default("queue_name", "deepfleet.steps")?
            .set_default("key_prefix", "deepfleet")?
            .set_default("connect_timeout_secs", 10)?
            .set_default("worker.concurrency", 64)?
            .set_default("worker.max_attempts", 5)?
            .set_default("worker.grace_secs", 30)?
            .set_default("worker.retry_base_ms", 1_000)?
            .set_default("worker.retry_max_ms", 60_000)?
            .set_default("worker.tool_timeout_secs", 300)?
            .set_default("worker.step_timeout_secs", 1_200)?
            .set_default("scheduler.listen", "127.0.0.1:2024")?
            .set_default("scheduler.grace_secs", 20)?;
        if let Some(file) = file {
            builder = builder.add_source(config::File::from(file).required(true));
        }
        builder
            .add_source(
                config::Environment::with_prefix("DEEPFLEET")
                    .prefix_separator("__")
                    .separator("__")
                    .try_parsing(true),
            )
            .build()
            .and_then(config::Config::try_deserialize)
            .context("reading configuration")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_profiles_load_from_toml() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(
            &file,
            "[profiles.\"openai:gpt-4.1\"]\nsystem_prompt_suffix = \"Be terse.\"\nexcluded_tools = [\"grep\"]\n\n\
             [profiles.openai.tool_description_overrides]\nls = \"List a directory.\"\n",
        )
        .unwrap();
        let settings = Settings::load(Some(&file)).unwrap();
        let exact = &settings.profiles["openai:gpt-4.1"];
        assert_eq!(exact.system_prompt_suffix.as_deref(), Some("Be terse."));
        assert!(exact.excluded_tools.contains("grep"));
        assert_eq!(
            settings.profiles["openai"].tool_description_overrides["ls"],
            "List a directory."
        );
    }

    #[test]
    fn listen_addresses_and_grace_come_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(
            &file,
            "metrics_listen = \"0.0.0.0:9464\"\n[scheduler]\nlisten = \"0.0.0.0:2024\"\ngrace_secs = 5\n",
        )
        .unwrap();
        let settings = Settings::load(Some(&file)).unwrap();
        assert_eq!(settings.scheduler.listen, "0.0.0.0:2024");
        assert_eq!(settings.scheduler.grace_secs, 5);
        assert_eq!(settings.metrics_listen.as_deref(), Some("0.0.0.0:9464"));
    }

    #[test]
    fn the_context_key_can_come_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let key_file = dir.path().join("fleet.key");
        let key = deepfleet_store::sealed::ContextKey::generate_base64();
        std::fs::write(&key_file, format!("{key}\n")).unwrap();
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(
            &file,
            format!("context_key_file = {:?}\n", key_file.display().to_string()),
        )
        .unwrap();
        let settings = Settings::load(Some(&file)).unwrap();
        assert!(settings.context_key().unwrap().is_some());

        std::fs::write(&key_file, "not a key").unwrap();
        let err = format!("{:#}", settings.context_key().unwrap_err());
        assert!(err.contains("fleet.key"), "{err}");
        std::fs::remove_file(&key_file).unwrap();
        let err = format!("{:#}", settings.context_key().unwrap_err());
        assert!(err.contains("DEEPFLEET__CONTEXT_KEY_FILE"), "{err}");
    }

    #[test]
    fn time_limits_default_and_come_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.toml");
        std::fs::write(&empty, "").unwrap();
        let defaults = Settings::load(Some(&empty)).unwrap().worker.time_limits();
        assert_eq!(defaults, deepfleet_worker::TimeLimits::default());
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(
            &file,
            "[worker]\ntool_timeout_secs = 30\nstep_timeout_secs = 600\n",
        )
        .unwrap();
        let set = Settings::load(Some(&file)).unwrap().worker.time_limits();
        assert_eq!(set.tool_call, std::time::Duration::from_secs(30));
        assert_eq!(set.step, std::time::Duration::from_secs(600));
    }

    #[test]
    fn the_scheduler_listens_on_loopback_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("empty.toml");
        std::fs::write(&file, "").unwrap();
        let settings = Settings::load(Some(&file)).unwrap();
        assert_eq!(settings.scheduler.listen, "127.0.0.1:2024");
        assert_eq!(settings.scheduler.grace_secs, 20);
    }
}
