//! The HTTP API's keys: who may call it, as which tenant and role.
//!
//! A key is configured by its SHA-256 hash, never in clear: a line
//! `<sha256 hex> <tenant> <role>` (what `deepfleet api-key new` prints),
//! either in `[api.keys]` under a name of the operator's choosing or one
//! per line in `api.keys_file` (a Kubernetes Secret mounted as a file).
//! The scheduler parses and checks the lines when it starts.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::SettingsError;
use crate::cors::CorsSettings;

/// The HTTP API's keys and limits.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiSettings {
    /// API keys by a name of your choosing: `"<sha256 hex> <tenant>
    /// <role>"`. Default: none.
    #[serde(default, skip_serializing)]
    pub keys: BTreeMap<String, String>,
    /// A file of key lines, one per line (`#` starts a comment), e.g. a
    /// mounted Kubernetes Secret. Default: none.
    pub keys_file: Option<PathBuf>,
    /// Serve a listener that is not loopback without any key (every
    /// caller is the default tenant's admin). Default: false.
    pub allow_open: bool,
    /// Runs one tenant may have pending or running at once; past it a new
    /// run is refused with 429 and `Retry-After`. Default: none (no
    /// limit).
    pub tenant_runs_in_flight: Option<u32>,
    /// Host names an API without keys answers besides `localhost`,
    /// `*.localhost` and loopback addresses (any port): the names it is
    /// reached by on a network. Other names are refused, so a web page
    /// cannot reach a keyless API through DNS rebinding. Default: none.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Which browser origins may call the API (`[api.cors]`).
    #[serde(default)]
    pub cors: CorsSettings,
}

impl std::fmt::Debug for ApiSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiSettings")
            .field("keys", &self.keys.keys().collect::<Vec<_>>())
            .field("keys_file", &self.keys_file)
            .field("allow_open", &self.allow_open)
            .field("tenant_runs_in_flight", &self.tenant_runs_in_flight)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("cors", &self.cors)
            .finish()
    }
}

/// One configured key line and where it came from, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLine {
    /// `api.keys.<name>` or `<file>:<line>`.
    pub origin: String,
    /// The line: `<sha256 hex> <tenant> <role>`.
    pub text: String,
}

impl ApiSettings {
    /// Every configured key line: `[api.keys]` first, then the lines of
    /// `keys_file` that are neither blank nor comments.
    pub fn key_lines(&self) -> Result<Vec<KeyLine>, SettingsError> {
        let mut lines: Vec<KeyLine> = self
            .keys
            .iter()
            .map(|(name, text)| KeyLine {
                origin: format!("api.keys.{name}"),
                text: text.trim().to_owned(),
            })
            .collect();
        if let Some(path) = &self.keys_file {
            let text =
                std::fs::read_to_string(path).map_err(|source| SettingsError::ApiKeysFile {
                    path: path.clone(),
                    source,
                })?;
            for (number, line) in (1..).zip(text.lines()) {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                lines.push(KeyLine {
                    origin: format!("{}:{number}", path.display()),
                    text: line.to_owned(),
                });
            }
        }
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn key_lines_come_from_the_table_then_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys");
        std::fs::write(&file, "# keys\n\nbbbb t2 read\n").unwrap();
        let settings = ApiSettings {
            keys: BTreeMap::from([("ci".to_owned(), " aaaa t1 submit ".to_owned())]),
            keys_file: Some(file.clone()),
            ..ApiSettings::default()
        };
        let lines = settings.key_lines().unwrap();
        assert_eq!(
            lines,
            [
                KeyLine {
                    origin: "api.keys.ci".into(),
                    text: "aaaa t1 submit".into()
                },
                KeyLine {
                    origin: format!("{}:3", file.display()),
                    text: "bbbb t2 read".into()
                },
            ]
        );
        let missing = ApiSettings {
            keys_file: Some(dir.path().join("nope")),
            ..ApiSettings::default()
        };
        assert!(
            missing
                .key_lines()
                .unwrap_err()
                .to_string()
                .contains("nope")
        );
        assert!(!format!("{settings:?}").contains("aaaa"));
    }
}
