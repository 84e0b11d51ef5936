//! Why settings could not be loaded, or what they configure could not be
//! built: each error names the setting, its variable or the server.

use std::path::PathBuf;

/// Why loading or using the settings failed.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The settings types could not be probed for their names (a bug of
    /// a new field's type, caught by the tests).
    #[error("listing the settings")]
    Names(#[source] serde::de::value::Error),
    /// The defaults could not be laid out as a configuration layer.
    #[error("laying out the default settings")]
    Defaults(#[source] config::ConfigError),
    /// The file or a variable holds something the settings cannot take.
    #[error("reading configuration{}", variable.as_ref().map(|v| format!(" (the variable {v})")).unwrap_or_default())]
    Read {
        /// The variable the bad value came from, when one did.
        variable: Option<String>,
        /// What was wrong, with the setting's key.
        #[source]
        source: config::ConfigError,
    },
    /// The configuration file's `env_file` cannot be read or parsed.
    #[error("reading env_file {}", path.display())]
    EnvFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: dotenvy::Error,
    },
    /// `context_key` is no key.
    #[error("context_key (DEEPFLEET__CONTEXT_KEY)")]
    ContextKey(#[source] deepfleet_store::sealed::SealError),
    /// `context_key_file` cannot be read.
    #[error("reading context_key_file {} (DEEPFLEET__CONTEXT_KEY_FILE)", path.display())]
    ContextKeyFile {
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
    /// `context_key_file` holds no key.
    #[error("the key in {}", path.display())]
    KeyInFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with the key.
        #[source]
        source: deepfleet_store::sealed::SealError,
    },
    /// A worker of a fleet has no context key: it could run none of the
    /// fleet's runs, whose context is sealed with it.
    #[error(
        "a distributed worker needs the fleet's context_key (DEEPFLEET__CONTEXT_KEY, base64 of 32 bytes, or a file named by DEEPFLEET__CONTEXT_KEY_FILE; \
         `deepfleet keygen` makes one)"
    )]
    NoContextKey,
    /// Neither a flag nor the settings give the broker's URL.
    #[error("no queue URL: pass --queue amqp://... or set DEEPFLEET__QUEUE")]
    NoQueue,
    /// Neither a flag nor the settings give the store's URL.
    #[error("no store URL: pass --store redis://... or set DEEPFLEET__STORE")]
    NoStore,
    /// The broker did not answer or refused the connection.
    #[error("connecting to RabbitMQ at {url}")]
    Queue {
        /// The broker's URL, password hidden.
        url: String,
        /// Why.
        #[source]
        source: deepfleet_queue::QueueError,
    },
    /// The store did not answer or refused the connection.
    #[error("connecting to Redis at {url}")]
    Store {
        /// The store's URL, password hidden.
        url: String,
        /// Why.
        #[source]
        source: deepfleet_store::StoreError,
    },
}
