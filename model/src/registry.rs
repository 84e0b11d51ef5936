//! [`Providers`]: resolves `provider:model` strings to clients and model
//! profiles.
//!
//! `anthropic` speaks the Messages protocol, `google_genai` the Gemini
//! one, and every other provider (openai, openrouter, fireworks, baseten,
//! ollama, or any host given a base URL) Chat Completions. Clients are
//! built on first use and cached per provider, all sharing one connection
//! pool.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use deepfleet_proto::ModelProfile;
use serde::Deserialize;

use crate::anthropic::{AnthropicClient, AnthropicConfig};
use crate::gemini::{GeminiClient, GeminiConfig};
use crate::http::{DEFAULT_TIMEOUT, http_client};
use crate::openai::{OpenAiClient, OpenAiConfig};
use crate::profiles;
use crate::replay::{ReplayClient, ReplayEngine};
use crate::retry::RetryPolicy;
use crate::{ErrorKind, ModelClient, ModelError};

/// Default API roots of the providers deepfleet knows by name.
const DEFAULT_BASE_URLS: &[(&str, &str)] = &[
    ("openai", "https://api.openai.com/v1"),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("fireworks", "https://api.fireworks.ai/inference/v1"),
    ("baseten", "https://inference.baseten.co/v1"),
    ("ollama", "http://localhost:11434/v1"),
    ("anthropic", "https://api.anthropic.com"),
    (
        "google_genai",
        "https://generativelanguage.googleapis.com/v1beta",
    ),
];

/// Key variables the providers' own SDKs read, tried after the
/// `{PROVIDER}_API_KEY` convention.
const KEY_ALIASES: &[(&str, &str)] = &[
    ("google_genai", "GOOGLE_API_KEY"),
    ("google_genai", "GEMINI_API_KEY"),
];

/// The provider name of scripted models (`replay:PATH`).
const REPLAY: &str = "replay";

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
    /// Limit of one HTTP attempt, in seconds.
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Whether every call streams (SSE), deltas discarded unless the
    /// caller asks for them; long completions then never sit idle on a
    /// proxy's timeout.
    #[serde(default)]
    pub stream: bool,
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
            .field("stream", &self.stream)
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

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Protocol {
    fn of(provider: &str) -> Self {
        match provider {
            "anthropic" => Protocol::Anthropic,
            "google_genai" => Protocol::Gemini,
            _ => Protocol::OpenAi,
        }
    }
}

/// A built client, before it is shared as a `dyn ModelClient`.
#[derive(Debug)]
enum Built {
    OpenAi(OpenAiClient),
    Anthropic(AnthropicClient),
    Gemini(GeminiClient),
}

impl Built {
    fn into_shared(self) -> Arc<dyn ModelClient> {
        match self {
            Built::OpenAi(client) => Arc::new(client),
            Built::Anthropic(client) => Arc::new(client),
            Built::Gemini(client) => Arc::new(client),
        }
    }

    /// Where a call of `model` goes (tests and diagnostics).
    #[cfg(test)]
    fn endpoint(&self, model: &str) -> String {
        match self {
            Built::OpenAi(client) => client.endpoint().to_owned(),
            Built::Anthropic(client) => client.endpoint().to_owned(),
            Built::Gemini(client) => client.endpoint(model, "generateContent"),
        }
    }
}

type EnvLookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Resolves `provider:model` strings; cheap to share behind an `Arc`.
pub struct Providers {
    configs: HashMap<String, ProviderConfig>,
    env: EnvLookup,
    retry: RetryPolicy,
    http: Mutex<Option<reqwest::Client>>,
    clients: Mutex<HashMap<String, Arc<dyn ModelClient>>>,
    engines: Mutex<HashMap<PathBuf, Arc<ReplayEngine>>>,
}

impl fmt::Debug for Providers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Providers")
            .field("configs", &self.configs)
            .field("retry", &self.retry)
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
            http: Mutex::new(None),
            clients: Mutex::new(HashMap::new()),
            engines: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `retry` for the clients built from now on.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Resolves `provider:model` (split at the first colon, so model names
    /// may contain colons, as Ollama's do). `replay:PATH` loads the script
    /// at PATH once and shares its engine.
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
        if provider == REPLAY {
            return Ok(ResolvedModel {
                client: self.replay(model)?,
                model: model.to_owned(),
                profile,
            });
        }
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let client = match clients.get(provider) {
            Some(client) => client.clone(),
            None => {
                let client = self.build(provider)?.into_shared();
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

    fn replay(&self, path: &str) -> Result<Arc<dyn ModelClient>, ModelError> {
        let mut engines = self.engines.lock().unwrap_or_else(PoisonError::into_inner);
        let engine = match engines.get(&PathBuf::from(path)) {
            Some(engine) => engine.clone(),
            None => {
                // A broken script is a configuration mistake: fail the call
                // for good rather than retrying it.
                let engine = Arc::new(
                    ReplayEngine::load(path)
                        .map_err(|e| ModelError::new(ErrorKind::BadRequest, e.to_string()))?,
                );
                engines.insert(PathBuf::from(path), engine.clone());
                engine
            }
        };
        Ok(Arc::new(ReplayClient::new(engine).with_retry(self.retry)))
    }

    fn build(&self, provider: &str) -> Result<Built, ModelError> {
        let config = self.configs.get(provider).cloned().unwrap_or_default();
        let prefix = provider.to_ascii_uppercase().replace('-', "_");
        let base_url = (self.env)(&format!("{prefix}_BASE_URL"))
            .or(config.base_url)
            .or_else(|| {
                DEFAULT_BASE_URLS
                    .iter()
                    .find(|(name, _)| *name == provider)
                    .map(|(_, url)| (*url).to_owned())
            })
            .ok_or_else(|| {
                ModelError::new(
                    ErrorKind::Unsupported,
                    format!(
                        "unknown model provider {provider:?}; configure a base_url for it \
                         or set {prefix}_BASE_URL"
                    ),
                )
            })?;
        let api_key = (self.env)(&format!("{prefix}_API_KEY"))
            .or_else(|| {
                KEY_ALIASES
                    .iter()
                    .filter(|(name, _)| *name == provider)
                    .find_map(|(_, variable)| (self.env)(variable))
            })
            .or(config.api_key);
        let timeout = config
            .timeout_secs
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_TIMEOUT);
        let (retry, stream, http) = (self.retry, config.stream, self.http()?);
        Ok(match Protocol::of(provider) {
            Protocol::OpenAi => Built::OpenAi(OpenAiClient::with_http(
                http,
                OpenAiConfig {
                    base_url,
                    api_key,
                    timeout,
                    retry,
                    stream,
                },
            )?),
            Protocol::Anthropic => Built::Anthropic(AnthropicClient::with_http(
                http,
                AnthropicConfig {
                    base_url,
                    api_key,
                    timeout,
                    retry,
                    stream,
                },
            )?),
            Protocol::Gemini => Built::Gemini(GeminiClient::with_http(
                http,
                GeminiConfig {
                    base_url,
                    api_key,
                    timeout,
                    retry,
                    stream,
                },
            )?),
        })
    }

    fn http(&self) -> Result<reqwest::Client, ModelError> {
        let mut http = self.http.lock().unwrap_or_else(PoisonError::into_inner);
        match &*http {
            Some(client) => Ok(client.clone()),
            None => {
                let client = http_client()?;
                *http = Some(client.clone());
                Ok(client)
            }
        }
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
