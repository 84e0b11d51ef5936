//! deepfleet's configuration: defaults, then an optional TOML file, then
//! `DEEPFLEET__...` environment variables (the binary's flags win over
//! all three).
//!
//! The types below are the one list of settings: their `Default` impls
//! are the defaults the loader starts from, [`names`] reads every
//! setting's name off them, and the tests hold `docs/configuration.md`
//! and `deploy/deepfleet.example.toml` to both. A library, so a team's
//! own worker binary loads exactly what `deepfleet worker` loads and
//! builds its runner the same way ([`fleet`]).

mod admission;
pub mod api;
mod cors;
mod costs;
mod encryption;
mod error;
pub mod fleet;
mod limits;
pub mod names;
mod project;
pub mod redacted_url;
mod retention;
mod webhooks;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use deepfleet_model::ProviderConfig;
use serde::{Deserialize, Serialize};

pub use admission::AdmissionSettings;
pub use api::{ApiSettings, KeyLine};
pub use cors::CorsSettings;
pub use costs::CostSettings;
pub use encryption::EncryptionSettings;
pub use error::SettingsError;
pub use limits::LimitsSettings;
pub use project::{MANIFEST, RunDefaults, locate};
pub use retention::RetentionSettings;
pub use webhooks::WebhookSettings;

/// The variable naming the configuration file, as `--config` reads it.
pub const CONFIG_VARIABLE: &str = "DEEPFLEET_CONFIG";

/// The prefix of every setting's variable, and the separator of its
/// path's segments (`DEEPFLEET__WORKER__CONCURRENCY`).
const PREFIX: &str = "DEEPFLEET";
const SEPARATOR: &str = "__";

/// Everything configurable. Its `Debug` hides the context key and the
/// URLs' passwords, so printing the settings cannot leak them.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// RabbitMQ URL of the distributed mode (`--queue` wins). Default:
    /// none.
    pub queue: Option<String>,
    /// Redis URL of the distributed mode (`--store` wins). Default: none.
    pub store: Option<String>,
    /// Name of the step queue. Default: `deepfleet.steps`.
    pub queue_name: String,
    /// Prefix of every Redis key. Default: `deepfleet`.
    pub key_prefix: String,
    /// Seconds a command waits to connect to RabbitMQ or Redis before it
    /// fails naming the server. Default: 10.
    pub connect_timeout_secs: u64,
    /// MiB of the threads a process holds from its Redis reads, so that
    /// reading a thread again reads only what changed since (0 holds
    /// none: every load reads the whole thread). Default: 32.
    pub thread_cache_mib: u64,
    /// Worker tuning.
    pub worker: WorkerSettings,
    /// The scheduler's HTTP server.
    pub scheduler: SchedulerSettings,
    /// The HTTP API's keys and limits.
    pub api: ApiSettings,
    /// How long ended runs live, by tenant (`[retention]`).
    pub retention: RetentionSettings,
    /// Sizes of requests, messages and files, and files per thread
    /// (`[limits]`).
    pub limits: LimitsSettings,
    /// Batch admission windows (`[admission]`).
    pub admission: AdmissionSettings,
    /// Model prices and tenants' daily budgets (`[costs]`).
    #[serde(default)]
    pub costs: CostSettings,
    /// Run-completion webhooks: signing secrets and retries
    /// (`[webhooks]`).
    #[serde(default)]
    pub webhooks: WebhookSettings,
    /// Requests and tokens per minute by provider and model
    /// (`[rate_limits]`), shared by every worker of the fleet. Default:
    /// none but what the providers' headers teach.
    pub rate_limits: deepfleet_model::ratelimit::RateLimitsConfig,
    /// OTLP/HTTP collector base URL for traces (`--otlp-endpoint` wins);
    /// none = the standard `OTEL_EXPORTER_OTLP_*` variables decide (no
    /// export without them). Default: none.
    pub otlp_endpoint: Option<String>,
    /// Where a worker (or an embedded run) serves `/metrics`, `/healthz`
    /// and `/readyz`, e.g. `0.0.0.0:9464` (`--metrics-listen` wins).
    /// Default: none (not served).
    pub metrics_listen: Option<String>,
    /// How log lines on stderr look. Default: `auto`.
    pub log_format: LogFormat,
    /// Model providers by name (`[providers.openai]`). Default: none.
    #[serde(default, skip_serializing)]
    pub providers: HashMap<String, ProviderConfig>,
    /// The fleet's key for runtime context: base64 of 32 bytes. Every
    /// scheduler and worker of a fleet shares it; contexts are stored and
    /// queued only sealed with it. Default: none.
    pub context_key: Option<String>,
    /// A file holding the context key, as `deepfleet keygen --out` writes
    /// it, for processes that share a volume rather than a variable;
    /// `context_key` wins when both are set. Default: none.
    pub context_key_file: Option<PathBuf>,
    /// Encryption at rest of the store's values and the embedded state
    /// file (`[encryption]`).
    pub encryption: EncryptionSettings,
    /// Harness profiles by `provider:model` or `provider`
    /// (`[profiles."openai:gpt-5"]`): prompt and tool adjustments per model;
    /// a spec's own `profiles` lie on top. Default: none.
    #[serde(default, skip_serializing)]
    pub profiles: BTreeMap<String, deepfleet_proto::harness::HarnessProfile>,
    /// The project's agents, graph name = spec file (`[agents]`, paths
    /// relative to the configuration file): what `dev` and `scheduler`
    /// serve without `--agents`, and the names `run --agent` takes.
    /// Default: none.
    #[serde(default, skip_serializing)]
    pub agents: BTreeMap<String, PathBuf>,
    /// Variables the processes of the project see (`[env]`), under their
    /// own environment and `env_file`; read by the settings, providers,
    /// `RUST_LOG` and `OTEL_*`. Default: none.
    #[serde(default, skip_serializing)]
    pub env: BTreeMap<String, String>,
    /// A dotenv file (`KEY=value` lines, relative to the configuration
    /// file) of variables like `env`, over it: for what stays out of
    /// version control, such as provider keys. Default: none.
    pub env_file: Option<PathBuf>,
    /// Defaults of `deepfleet run`.
    pub run: RunDefaults,
    /// The variables of `env_file`, read when the settings load.
    #[serde(skip)]
    pub env_file_vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = |u: &Option<String>| u.as_deref().map(crate::redacted_url::redacted);
        f.debug_struct("Settings")
            .field("queue", &url(&self.queue))
            .field("store", &url(&self.store))
            .field("queue_name", &self.queue_name)
            .field("key_prefix", &self.key_prefix)
            .field("connect_timeout_secs", &self.connect_timeout_secs)
            .field("thread_cache_mib", &self.thread_cache_mib)
            .field("worker", &self.worker)
            .field("scheduler", &self.scheduler)
            .field("api", &self.api)
            .field("retention", &self.retention)
            .field("limits", &self.limits)
            .field("admission", &self.admission)
            .field("costs", &self.costs)
            .field("webhooks", &self.webhooks)
            .field("rate_limits", &self.rate_limits)
            .field("otlp_endpoint", &self.otlp_endpoint)
            .field("metrics_listen", &self.metrics_listen)
            .field("log_format", &self.log_format)
            .field("providers", &self.providers)
            .field(
                "context_key",
                &self.context_key.as_ref().map(|_| "[redacted]"),
            )
            .field("context_key_file", &self.context_key_file)
            .field("encryption", &self.encryption)
            .field("profiles", &self.profiles)
            .field("agents", &self.agents)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("env_file", &self.env_file)
            .field("run", &self.run)
            .field(
                "env_file_vars",
                &self.env_file_vars.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Worker tuning.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    /// Steps one worker runs at once (its prefetch; `--concurrency`
    /// wins). Default: 64.
    pub concurrency: u16,
    /// Deliveries of a failing step before its run fails. Default: 5.
    pub max_attempts: u32,
    /// Seconds to let steps in flight finish on shutdown. Default: 30.
    pub grace_secs: u64,
    /// First backoff of a failed step, in milliseconds. Default: 1000.
    pub retry_base_ms: u64,
    /// Longest backoff of a failed step, in milliseconds. Default: 60000.
    pub retry_max_ms: u64,
    /// Seconds one tool call may take before it is stopped and the model
    /// reads a timeout error. Default: 300.
    pub tool_timeout_secs: u64,
    /// Seconds one step may take before it is abandoned and retried; keep
    /// it under RabbitMQ's `consumer_timeout` (30 minutes by default).
    /// Default: 1200.
    pub step_timeout_secs: u64,
    /// Seconds one delivery may keep running its run's next steps itself
    /// before it publishes the next one to the queue (saving each kept
    /// step the hop through the broker); 0 publishes every step. A
    /// delivery is held at most this plus one step. Default: 10.
    pub keep_run_secs: u64,
}

/// The scheduler's HTTP server.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSettings {
    /// Address of the API, `/metrics`, `/healthz` and `/readyz`; loopback
    /// by default, `0.0.0.0:2024` in a pod (`--listen` wins). Default:
    /// `127.0.0.1:2024`.
    pub listen: String,
    /// Seconds open requests (streams, waits) may take to finish after
    /// SIGTERM before the scheduler exits anyway. Default: 20.
    pub grace_secs: u64,
}

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Text when stderr is a terminal, JSON lines otherwise (a pod, a
    /// pipe, a file).
    #[default]
    Auto,
    /// One JSON object per line, for log collectors.
    Json,
    /// Human-readable lines.
    Text,
}

impl LogFormat {
    /// Whether lines are JSON, given whether stderr is a terminal.
    pub fn is_json(self, terminal: bool) -> bool {
        match self {
            LogFormat::Auto => !terminal,
            LogFormat::Json => true,
            LogFormat::Text => false,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            queue: None,
            store: None,
            queue_name: "deepfleet.steps".to_owned(),
            key_prefix: "deepfleet".to_owned(),
            connect_timeout_secs: 10,
            thread_cache_mib: 32,
            worker: WorkerSettings::default(),
            scheduler: SchedulerSettings::default(),
            api: ApiSettings::default(),
            retention: RetentionSettings::default(),
            limits: LimitsSettings::default(),
            admission: AdmissionSettings::default(),
            costs: CostSettings::default(),
            webhooks: WebhookSettings::default(),
            rate_limits: Default::default(),
            otlp_endpoint: None,
            metrics_listen: None,
            log_format: LogFormat::Auto,
            providers: HashMap::new(),
            context_key: None,
            context_key_file: None,
            encryption: EncryptionSettings::default(),
            profiles: BTreeMap::new(),
            agents: BTreeMap::new(),
            env: BTreeMap::new(),
            env_file: None,
            run: RunDefaults::default(),
            env_file_vars: BTreeMap::new(),
        }
    }
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            concurrency: 64,
            max_attempts: 5,
            grace_secs: 30,
            retry_base_ms: 1_000,
            retry_max_ms: 60_000,
            tool_timeout_secs: 300,
            step_timeout_secs: 1_200,
            keep_run_secs: 10,
        }
    }
}

impl Default for SchedulerSettings {
    fn default() -> Self {
        SchedulerSettings {
            listen: "127.0.0.1:2024".to_owned(),
            grace_secs: 20,
        }
    }
}

/// Settings as loaded, with what the loader passed over.
pub struct Loaded {
    /// The settings.
    pub settings: Settings,
    /// `DEEPFLEET__...` variables that name no setting; ignored, so a
    /// variable meant for something else cannot stop a start-up.
    pub unknown: Vec<UnknownVariable>,
}

/// A `DEEPFLEET__...` variable that names no setting.
#[derive(Debug, PartialEq, Eq)]
pub struct UnknownVariable {
    /// The variable.
    pub name: String,
    /// The variable of the nearest setting, when one is near.
    pub suggestion: Option<String>,
}

impl fmt::Display for UnknownVariable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} names no setting and is ignored", self.name)?;
        if let Some(suggestion) = &self.suggestion {
            write!(f, " (did you mean {suggestion}?)")?;
        }
        write!(f, "; settings are listed in docs/configuration.md")
    }
}

/// The variable that sets the setting at `path` (`worker.grace_secs` ->
/// `DEEPFLEET__WORKER__GRACE_SECS`).
pub fn variable(path: &str) -> String {
    format!(
        "{PREFIX}{SEPARATOR}{}",
        path.to_uppercase().replace('.', SEPARATOR)
    )
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
            keep_run: std::time::Duration::from_secs(self.keep_run_secs),
        }
    }

    /// How long steps in flight may take to finish on shutdown.
    pub fn grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.grace_secs)
    }
}

impl Settings {
    /// How long connecting to RabbitMQ or Redis may take.
    pub fn connect_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.connect_timeout_secs)
    }

    /// The configured context key, if any; a malformed one, or a key file
    /// that cannot be read, is an error.
    pub fn context_key(
        &self,
    ) -> Result<Option<deepfleet_store::sealed::ContextKey>, SettingsError> {
        use deepfleet_store::sealed::ContextKey;
        if let Some(key) = self.context_key.as_deref() {
            return ContextKey::from_base64(key)
                .map(Some)
                .map_err(SettingsError::ContextKey);
        }
        let Some(path) = &self.context_key_file else {
            return Ok(None);
        };
        let text =
            std::fs::read_to_string(path).map_err(|source| SettingsError::ContextKeyFile {
                path: path.clone(),
                source,
            })?;
        ContextKey::from_base64(text.trim())
            .map(Some)
            .map_err(|source| SettingsError::KeyInFile {
                path: path.clone(),
                source,
            })
    }

    /// The fleet's context key, which a distributed worker cannot do
    /// without.
    pub fn fleet_context_key(&self) -> Result<deepfleet_store::sealed::ContextKey, SettingsError> {
        self.context_key()?.ok_or(SettingsError::NoContextKey)
    }

    /// Loads settings from `file` (if any) and the process environment.
    pub fn load(file: Option<&Path>) -> Result<Loaded, SettingsError> {
        let vars = std::env::vars_os().filter_map(|(name, value)| {
            Some((
                name.into_string().ok()?,
                value.to_string_lossy().into_owned(),
            ))
        });
        Self::load_from(file, vars)
    }

    /// Loads settings from `file` (if any) and the variables `vars`, over
    /// the variables the file itself gives (`[env]`, `env_file`).
    fn load_from(
        file: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded, SettingsError> {
        let project_vars = match file {
            Some(file) => project::variables(file)?,
            None => project::Variables::default(),
        };
        let mut all: HashMap<String, String> = project_vars.all().collect();
        all.extend(vars);
        let names = names::of::<Settings>().map_err(SettingsError::Names)?;
        let (known, unknown) = sort_variables(all, &names);
        let defaults =
            config::Config::try_from(&Settings::default()).map_err(SettingsError::Defaults)?;
        let mut builder = config::Config::builder().add_source(defaults);
        if let Some(file) = file {
            builder = builder.add_source(config::File::from(file).required(true));
        }
        let mut settings: Settings = builder
            .add_source(
                config::Environment::with_prefix(PREFIX)
                    .prefix_separator(SEPARATOR)
                    .separator(SEPARATOR)
                    .try_parsing(true)
                    .list_separator(",")
                    .with_list_parse_key("api.allowed_hosts")
                    .with_list_parse_key("api.cors.allow_origins")
                    .with_list_parse_key("api.cors.allow_methods")
                    .with_list_parse_key("api.cors.allow_headers")
                    .with_list_parse_key("api.cors.expose_headers")
                    .source(Some(known.clone())),
            )
            .build()
            .and_then(config::Config::try_deserialize)
            .map_err(|e| name_the_variable(e, &known))?;
        if let Some(file) = file {
            settings.resolve_paths(file);
        }
        settings.env_file_vars = project_vars.env_file;
        Ok(Loaded { settings, unknown })
    }

    /// Makes the project sections' paths relative to the working
    /// directory rather than to the configuration `file`.
    fn resolve_paths(&mut self, file: &Path) {
        for path in self.agents.values_mut() {
            *path = project::beside(file, path);
        }
        for path in [
            &mut self.env_file,
            &mut self.run.tasks,
            &mut self.run.out,
            &mut self.api.keys_file,
        ]
        .into_iter()
        .flatten()
        {
            *path = project::beside(file, path);
        }
    }

    /// The variable `name` as the project's processes see it: the
    /// process environment's, else the configuration file's (`env_file`,
    /// then `[env]`).
    pub fn var(&self, name: &str) -> Option<String> {
        self.var_lookup()(name)
    }

    /// [`Settings::var`] as an owned function, for what outlives the
    /// settings (the model providers).
    pub fn var_lookup(&self) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
        let mut project_vars = self.env.clone();
        project_vars.extend(self.env_file_vars.clone());
        move |name| {
            std::env::var(name)
                .ok()
                .or_else(|| project_vars.get(name).cloned())
        }
    }
}

/// The dotted key a `DEEPFLEET__...` variable sets, lowercase as the
/// loader reads it (`DEEPFLEET__WORKER__GRACE_SECS` ->
/// `worker.grace_secs`); `None` for any other variable.
fn key_of(variable: &str) -> Option<String> {
    let prefix = format!("{PREFIX}{SEPARATOR}").to_lowercase();
    let lower = variable.to_lowercase();
    let rest = lower.strip_prefix(&prefix)?;
    Some(rest.replace(SEPARATOR, "."))
}

/// Splits `DEEPFLEET__...` variables into those naming a setting and
/// those naming none (with the nearest setting's variable); other
/// variables are dropped.
fn sort_variables(
    vars: impl IntoIterator<Item = (String, String)>,
    names: &[String],
) -> (HashMap<String, String>, Vec<UnknownVariable>) {
    let mut known = HashMap::new();
    let mut unknown = Vec::new();
    for (name, value) in vars {
        let Some(key) = key_of(&name) else {
            continue;
        };
        if names.iter().any(|setting| names::matches(setting, &key)) {
            known.insert(name, value);
        } else {
            let suggestion = names
                .iter()
                .map(|setting| (strsim::jaro_winkler(setting, &key), setting))
                .filter(|(score, _)| *score >= 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, setting)| variable(setting));
            unknown.push(UnknownVariable { name, suggestion });
        }
    }
    unknown.sort_by(|a, b| a.name.cmp(&b.name));
    (known, unknown)
}

/// A value of the wrong type from the environment is reported with the
/// variable it came from, not only the setting's dotted key.
fn name_the_variable(error: config::ConfigError, vars: &HashMap<String, String>) -> SettingsError {
    let (config::ConfigError::Type { key, origin, .. }
    | config::ConfigError::At { key, origin, .. }) = &error
    else {
        return SettingsError::Read {
            variable: None,
            source: error,
        };
    };
    // Errors of custom deserializers (an unknown `log_format`) keep no
    // origin; as the environment is the last layer, a key a variable sets
    // is that variable's unless the error names another origin.
    let from_elsewhere = origin.as_deref().is_some_and(|o| o != "the environment");
    let name = key.as_deref().filter(|_| !from_elsewhere).and_then(|key| {
        vars.keys()
            .find(|name| key_of(name).as_deref() == Some(key))
            .cloned()
    });
    SettingsError::Read {
        variable: name,
        source: error,
    }
}

#[cfg(test)]
mod reference_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn variables_naming_no_setting_are_ignored_and_reported() {
        let loaded = Settings::load_from(
            None,
            vars(&[
                ("DEEPFLEET__LOG", "debug"),
                ("DEEPFLEET__WORKER__CONCURENCY", "3"),
                ("DEEPFLEET__WORKER__GRACE_SECS", "7"),
                ("DEEPFLEET__PROVIDERS__OPENAI__API_KEY", "sk-test"),
                ("DEEPFLEET_CONFIG", "elsewhere.toml"),
                ("PATH", "/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(loaded.settings.worker.grace_secs, 7);
        assert_eq!(loaded.settings.worker.concurrency, 64);
        assert_eq!(
            loaded.settings.providers["openai"].api_key.as_deref(),
            Some("sk-test")
        );
        assert_eq!(
            loaded.unknown,
            [
                UnknownVariable {
                    name: "DEEPFLEET__LOG".to_owned(),
                    suggestion: Some("DEEPFLEET__LOG_FORMAT".to_owned()),
                },
                UnknownVariable {
                    name: "DEEPFLEET__WORKER__CONCURENCY".to_owned(),
                    suggestion: Some("DEEPFLEET__WORKER__CONCURRENCY".to_owned()),
                },
            ]
        );
        let warning = loaded.unknown[0].to_string();
        assert!(
            warning.contains("DEEPFLEET__LOG names no setting"),
            "{warning}"
        );
    }

    #[test]
    fn a_variable_of_the_wrong_type_is_an_error_naming_it() {
        for (name, value) in [
            ("DEEPFLEET__WORKER__CONCURRENCY", "many"),
            ("DEEPFLEET__LOG_FORMAT", "fancy"),
        ] {
            let Err(err) = Settings::load_from(None, vars(&[(name, value)])) else {
                panic!("{name}={value} loaded");
            };
            let err = format!("{:#}", anyhow::Error::from(err));
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn a_file_key_naming_no_setting_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(&file, "[worker]\nconcurency = 3\n").unwrap();
        let Err(err) = Settings::load_from(Some(&file), []) else {
            panic!("a misspelt key loaded");
        };
        let err = format!("{:#}", anyhow::Error::from(err));
        assert!(err.contains("concurency"), "{err}");
    }

    #[test]
    fn auto_logs_are_text_on_a_terminal_only() {
        assert!(!LogFormat::Auto.is_json(true));
        assert!(LogFormat::Auto.is_json(false));
        assert!(LogFormat::Json.is_json(true));
        assert!(!LogFormat::Text.is_json(false));
    }

    #[test]
    fn the_log_format_is_a_setting() {
        let auto = Settings::load_from(None, []).unwrap().settings.log_format;
        assert_eq!(auto, LogFormat::Auto);
        let json = Settings::load_from(None, vars(&[("DEEPFLEET__LOG_FORMAT", "json")]))
            .unwrap()
            .settings
            .log_format;
        assert_eq!(json, LogFormat::Json);
    }

    #[test]
    fn cors_origins_come_from_a_variable_as_a_list() {
        let settings = Settings::load_from(
            None,
            vars(&[
                (
                    "DEEPFLEET__API__CORS__ALLOW_ORIGINS",
                    "https://chat.example.com,http://localhost:*",
                ),
                ("DEEPFLEET__API__CORS__MAX_AGE_SECS", "60"),
                ("DEEPFLEET__API__TENANT_RUNS_IN_FLIGHT", "5"),
            ]),
        )
        .unwrap()
        .settings;
        assert_eq!(
            settings.api.cors.allow_origins,
            Some(vec![
                "https://chat.example.com".to_owned(),
                "http://localhost:*".to_owned()
            ])
        );
        assert_eq!(settings.api.cors.max_age_secs, Some(60));
        assert_eq!(settings.api.tenant_runs_in_flight, Some(5));
        assert_eq!(settings.api.cors.allow_headers, None);
    }

    #[test]
    fn allowed_hosts_come_from_a_variable_as_a_list() {
        let unset = Settings::load_from(None, []).unwrap().settings;
        assert!(unset.api.allowed_hosts.is_empty());
        let settings = Settings::load_from(
            None,
            vars(&[(
                "DEEPFLEET__API__ALLOWED_HOSTS",
                "deepfleet.internal,10.0.0.5",
            )]),
        )
        .unwrap()
        .settings;
        assert_eq!(
            settings.api.allowed_hosts,
            ["deepfleet.internal", "10.0.0.5"]
        );
    }

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
        let settings = Settings::load(Some(&file)).unwrap().settings;
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
        let settings = Settings::load(Some(&file)).unwrap().settings;
        assert_eq!(settings.scheduler.listen, "0.0.0.0:2024");
        assert_eq!(settings.scheduler.grace_secs, 5);
        assert_eq!(settings.metrics_listen.as_deref(), Some("0.0.0.0:9464"));
    }

    #[test]
    fn printing_the_settings_shows_no_key_or_password() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("deepfleet.toml");
        let key = deepfleet_store::sealed::ContextKey::generate_base64();
        std::fs::write(
            &file,
            format!(
                "queue = \"amqp://u:amqp-pw@mq:5672/%2f\"\nstore = \"redis://:redis-pw@cache:6379\"\n\
                 context_key = \"{key}\"\n[providers.openai]\napi_key = \"sk-provider\"\n"
            ),
        )
        .unwrap();
        let settings = Settings::load(Some(&file)).unwrap().settings;
        let shown = format!("{settings:?}");
        for secret in [key.as_str(), "amqp-pw", "redis-pw", "sk-provider"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("mq:5672") && shown.contains("[redacted]"),
            "{shown}"
        );
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
        let settings = Settings::load(Some(&file)).unwrap().settings;
        assert!(settings.context_key().unwrap().is_some());

        std::fs::write(&key_file, "not a key").unwrap();
        let err = format!(
            "{:#}",
            anyhow::Error::from(settings.context_key().unwrap_err())
        );
        assert!(err.contains("fleet.key"), "{err}");
        std::fs::remove_file(&key_file).unwrap();
        let err = format!(
            "{:#}",
            anyhow::Error::from(settings.context_key().unwrap_err())
        );
        assert!(err.contains("DEEPFLEET__CONTEXT_KEY_FILE"), "{err}");
    }

    #[test]
    fn time_limits_default_and_come_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.toml");
        std::fs::write(&empty, "").unwrap();
        let defaults = Settings::load(Some(&empty))
            .unwrap()
            .settings
            .worker
            .time_limits();
        assert_eq!(defaults, deepfleet_worker::TimeLimits::default());
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(
            &file,
            "[worker]\ntool_timeout_secs = 30\nstep_timeout_secs = 600\nkeep_run_secs = 0\n",
        )
        .unwrap();
        let set = Settings::load(Some(&file))
            .unwrap()
            .settings
            .worker
            .time_limits();
        assert_eq!(set.tool_call, std::time::Duration::from_secs(30));
        assert_eq!(set.step, std::time::Duration::from_secs(600));
        assert_eq!(set.keep_run, std::time::Duration::ZERO);
    }

    #[test]
    fn the_scheduler_listens_on_loopback_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("empty.toml");
        std::fs::write(&file, "").unwrap();
        let settings = Settings::load(Some(&file)).unwrap().settings;
        assert_eq!(settings.scheduler.listen, "127.0.0.1:2024");
        assert_eq!(settings.scheduler.grace_secs, 20);
    }
}
