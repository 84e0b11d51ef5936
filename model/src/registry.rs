//! [`Providers`]: resolves `provider:model` strings to clients and model
//! profiles.
//!
//! Which protocol a name speaks and where it lives by default is the
//! table in `hosts.rs`; a name not listed there speaks Chat Completions
//! once a base URL is configured for it. HTTP clients are built on first
//! use and cached per provider, all sharing one connection pool.
//! Providers registered with [`Providers::with_factory`] (the replay
//! provider) are served by their factory instead.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use deepfleet_proto::ModelProfile;
use serde::Deserialize;

use crate::factory::ProviderFactory;
use crate::hosts::{known, wire_of};
use crate::profiles;
use crate::protocols::Wire;
use crate::ratelimit::RateGate;
use crate::retry::RetryPolicy;
use crate::transport::{HttpModel, TransportConfig, http_client};
use crate::{ErrorKind, ModelClient, ModelError};

/// Settings of one provider, e.g. a `[providers.openai]` table.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// API root; `{PROVIDER}_BASE_URL` overrides it.
    #[serde(default)]
    pub base_url: Option<String>,
    /// API key; `{PROVIDER}_API_KEY` overrides it.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Limit of one HTTP attempt, in seconds, from connecting to the
    /// answer's last byte, streamed or not (default 600).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Longest silence in the middle of an answer, in seconds, before the
    /// attempt fails as a timeout (default 300).
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// Largest answer body read, in bytes, before the call fails as
    /// `ResponseTooLarge` (default 16 MiB).
    #[serde(default)]
    pub max_response_bytes: Option<u64>,
    /// Whether every call streams (SSE), deltas discarded unless the
    /// caller asks for them; long completions then never sit idle on a
    /// proxy's timeout.
    #[serde(default)]
    pub stream: bool,
    /// Whether calls speak HTTP/2 without negotiating it first (h2c on a
    /// plain `http` URL): all calls then share one connection instead of
    /// holding one each. For gateways and local servers that accept it;
    /// `https` providers negotiate HTTP/2 on their own.
    #[serde(default)]
    pub http2_prior_knowledge: bool,
    /// Model profiles by name or name prefix, over the built-in table
    /// ([`crate::profiles`]).
    #[serde(default)]
    pub profiles: HashMap<String, ModelProfile>,
}

// Hand-written so the key never reaches a log line.
impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("timeout_secs", &self.timeout_secs)
            .field("idle_timeout_secs", &self.idle_timeout_secs)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("stream", &self.stream)
            .field("http2_prior_knowledge", &self.http2_prior_knowledge)
            .field("profiles", &self.profiles)
            .finish()
    }
}

/// A resolved model: the client to call, the model name to send, and the
/// model's limits when known.
#[derive(Clone)]
pub struct ResolvedModel {
    /// The provider's client.
    pub client: Arc<dyn ModelClient>,
    /// The model name without the provider prefix.
    pub model: String,
    /// The model's limits: the provider config's `profiles`, else the
    /// built-in table; `None` for a model neither knows.
    pub profile: Option<ModelProfile>,
}

type EnvLookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Resolves `provider:model` strings; cheap to share behind an `Arc`.
pub struct Providers {
    configs: HashMap<String, ProviderConfig>,
    env: EnvLookup,
    retry: RetryPolicy,
    rate_gate: Option<RateGate>,
    http: Mutex<Option<reqwest::Client>>,
    clients: Mutex<HashMap<String, Arc<dyn ModelClient>>>,
    factories: HashMap<String, Arc<dyn ProviderFactory>>,
}

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Providers")
            .field("configs", &self.configs)
            .field("retry", &self.retry)
            .field("factories", &self.factories.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Providers {
    /// Providers configured by `configs` (keyed by provider name), with
    /// overrides from the process environment.
    pub fn new(configs: HashMap<String, ProviderConfig>) -> Self {
        Self::with_env(configs, |name| std::env::var(name).ok())
    }

    /// Like [`Providers::new`], reading variables through `env` (tests
    /// inject theirs instead of mutating the process environment).
    pub fn with_env(
        configs: HashMap<String, ProviderConfig>,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Providers {
            configs,
            env: Box::new(env),
            retry: RetryPolicy::default(),
            rate_gate: None,
            http: Mutex::new(None),
            clients: Mutex::new(HashMap::new()),
            factories: HashMap::new(),
        }
    }

    /// Uses `retry` for the clients built from now on.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Passes every HTTP call of the clients built from now on through
    /// `gate` (the fleet-wide rate limiter).
    pub fn with_rate_gate(mut self, gate: RateGate) -> Self {
        self.rate_gate = Some(gate);
        self
    }

    /// Serves `provider` from `factory` instead of HTTP: the embedding
    /// code's own providers (the replay provider of tests and examples).
    pub fn with_factory(
        mut self,
        provider: impl Into<String>,
        factory: Arc<dyn ProviderFactory>,
    ) -> Self {
        self.factories.insert(provider.into(), factory);
        self
    }

    /// Resolves `provider:model` (split at the first colon, so model names
    /// may contain colons, as Ollama's do). A registered factory answers
    /// for its provider on every call; HTTP clients are built once per
    /// provider and cached. A hosted provider without a key is refused
    /// here, naming where the key would come from: otherwise every call
    /// would fail on the provider's 401 (or on DNS, offline) after its
    /// retries, never naming the key.
    pub fn resolve(&self, spec: &str) -> Result<ResolvedModel, ModelError> {
        let Some((provider, model)) = spec.split_once(':') else {
            return Err(ModelError::new(
                ErrorKind::Unsupported,
                format!(
                    "model {spec:?} names no provider; write provider:model, e.g. openai:gpt-4.1"
                ),
            ));
        };
        let profile = match self.configs.get(provider) {
            Some(config) => profiles::lookup(&config.profiles, model),
            None => profiles::builtin(model),
        };
        if let Some(factory) = self.factories.get(provider) {
            return Ok(ResolvedModel {
                client: factory.client(model, self.retry)?,
                model: model.to_owned(),
                profile,
            });
        }
        self.check_key(provider)?;
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let client = match clients.get(provider) {
            Some(client) => client.clone(),
            None => {
                let client: Arc<dyn ModelClient> = self.build(provider)?;
                clients.insert(provider.to_owned(), client.clone());
                client
            }
        };
        Ok(ResolvedModel {
            client,
            model: model.to_owned(),
            profile,
        })
    }

    /// A provider that speaks HTTP/2 by prior knowledge gets a connection
    /// pool of its own (built once: clients are cached per provider); the
    /// others share the negotiating one.
    fn build(&self, provider: &str) -> Result<Arc<dyn HttpModel>, ModelError> {
        let (wire, config) = self.route(provider)?;
        let prior_knowledge = self
            .configs
            .get(provider)
            .is_some_and(|config| config.http2_prior_knowledge);
        let http = if prior_knowledge {
            http_client(true)?
        } else {
            self.http()?
        };
        wire.client(http, config)
    }

    /// The protocol and transport settings of `provider`: environment
    /// first, then its configuration, then the table of known hosts.
    fn route(&self, provider: &str) -> Result<(Wire, TransportConfig), ModelError> {
        let config = self.configs.get(provider).cloned().unwrap_or_default();
        let host = known(provider);
        let prefix = provider.to_ascii_uppercase().replace('-', "_");
        let base_url = (self.env)(&format!("{prefix}_BASE_URL"))
            .or_else(|| config.base_url.clone())
            .or_else(|| host.map(|host| host.base_url.to_owned()))
            .ok_or_else(|| {
                ModelError::new(
                    ErrorKind::Unsupported,
                    format!(
                        "unknown model provider {provider:?}; configure a base_url for it \
                         or set {prefix}_BASE_URL"
                    ),
                )
            })?;
        let api_key = self.api_key(provider, &config);
        let defaults = TransportConfig::new(base_url);
        let transport = TransportConfig {
            timeout: config
                .timeout_secs
                .map_or(defaults.timeout, Duration::from_secs),
            idle_timeout: config
                .idle_timeout_secs
                .map_or(defaults.idle_timeout, Duration::from_secs),
            max_response_bytes: config
                .max_response_bytes
                .unwrap_or(defaults.max_response_bytes),
            retry: self.retry,
            stream: config.stream,
            provider: provider.to_owned(),
            rate_gate: self.rate_gate.clone(),
            api_key,
            ..defaults
        };
        Ok((wire_of(provider), transport))
    }

    /// The variables that may hold `provider`'s key, in the order tried.
    fn key_variables(provider: &str) -> Vec<String> {
        let prefix = provider.to_ascii_uppercase().replace('-', "_");
        let aliases = known(provider).map_or(&[][..], |host| host.key_variables);
        std::iter::once(format!("{prefix}_API_KEY"))
            .chain(aliases.iter().map(|&variable| variable.to_owned()))
            .collect()
    }

    /// `provider`'s key: its variables first, then its configuration.
    fn api_key(&self, provider: &str, config: &ProviderConfig) -> Option<String> {
        Self::key_variables(provider)
            .iter()
            .find_map(|variable| (self.env)(variable))
            .or_else(|| config.api_key.clone())
    }

    /// Refuses a provider that takes no call without a key ([`known`]
    /// hosts but Ollama) when none is set; a provider named only in the
    /// configuration (a proxy, a local server) may need none.
    fn check_key(&self, provider: &str) -> Result<(), ModelError> {
        if !known(provider).is_some_and(|host| host.needs_key) {
            return Ok(());
        }
        let config = self.configs.get(provider).cloned().unwrap_or_default();
        if self.api_key(provider, &config).is_some() {
            return Ok(());
        }
        let variables = Self::key_variables(provider);
        let variables = match variables.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => variables.concat(),
        };
        Err(ModelError::new(
            ErrorKind::Auth,
            format!(
                "provider {provider} needs an API key: set {variables} \
                 or providers.{provider}.api_key"
            ),
        ))
    }

    fn http(&self) -> Result<reqwest::Client, ModelError> {
        let mut http = self.http.lock().unwrap_or_else(PoisonError::into_inner);
        match &*http {
            Some(client) => Ok(client.clone()),
            None => {
                let client = http_client(false)?;
                *http = Some(client.clone());
                Ok(client)
            }
        }
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
