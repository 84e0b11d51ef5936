//! The project sections of the configuration file. A `deepfleet.toml`
//! beside a project's specs, the project manifest, names its agents
//! (`[agents]`), the variables its processes see (`[env]`, `env_file`)
//! and the defaults of `deepfleet run` (`[run]`), so that `run`, `dev` and
//! `scheduler` started in the project need no flags. It is an ordinary
//! configuration file: fleet settings may sit beside these sections.
//!
//! Paths in these sections are relative to the file, so a project works
//! from any working directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SettingsError;

/// The file a command reads when no `--config` names one: the project
/// manifest of the working directory.
pub const MANIFEST: &str = "deepfleet.toml";

/// Defaults of `deepfleet run`; its flags win.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDefaults {
    /// The agent `run` uses without `--agent`: a name of `[agents]`.
    /// Default: none (the only agent of `[agents]`, when there is one).
    pub agent: Option<String>,
    /// The tasks file `run` reads when none is given. Default: none.
    pub tasks: Option<PathBuf>,
    /// Where `run` writes result lines without `--out`. Default: none
    /// (`results.jsonl` in the working directory).
    pub out: Option<PathBuf>,
    /// Steps `run` runs at once without `--concurrency`. Default: 16.
    pub concurrency: u16,
}

impl Default for RunDefaults {
    fn default() -> Self {
        RunDefaults {
            agent: None,
            tasks: None,
            out: None,
            concurrency: 16,
        }
    }
}

/// The `[env]` and `env_file` of a configuration file, read before the
/// rest because variables set settings too.
#[derive(Debug, Default, Deserialize)]
struct EnvSections {
    #[serde(default)]
    env: BTreeMap<String, String>,
    env_file: Option<PathBuf>,
}

/// The variables a configuration file gives its processes.
#[derive(Debug, Default)]
pub struct Variables {
    /// Its `[env]` table.
    pub table: BTreeMap<String, String>,
    /// The variables of its `env_file`, over the table's.
    pub env_file: BTreeMap<String, String>,
}

impl Variables {
    /// Every variable, the env file's over the table's.
    pub fn all(&self) -> impl Iterator<Item = (String, String)> {
        let mut all = self.table.clone();
        all.extend(self.env_file.clone());
        all.into_iter()
    }
}

/// The variables of the configuration file at `file`. A file that does
/// not parse gives none here; loading the settings reports it.
pub fn variables(file: &Path) -> Result<Variables, SettingsError> {
    let Ok(sections) = config::Config::builder()
        .add_source(config::File::from(file).required(true))
        .build()
        .and_then(config::Config::try_deserialize::<EnvSections>)
    else {
        return Ok(Variables::default());
    };
    let mut env_file = BTreeMap::new();
    if let Some(rel) = sections.env_file {
        let path = beside(file, &rel);
        let env_file_error = |source| SettingsError::EnvFile {
            path: path.clone(),
            source,
        };
        for entry in dotenvy::from_path_iter(&path).map_err(env_file_error)? {
            let (name, value) = entry.map_err(env_file_error)?;
            env_file.insert(name, value);
        }
    }
    Ok(Variables {
        table: sections.env,
        env_file,
    })
}

/// `path` as written in the configuration file at `file`: relative ones
/// are relative to the file's folder.
pub fn beside(file: &Path, path: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_owned(),
    }
}

/// The configuration file of a command: the one `--config` (or
/// `DEEPFLEET_CONFIG`) names, else the working directory's manifest when
/// there is one.
pub fn locate(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = flag {
        return Some(path.to_owned());
    }
    let manifest = Path::new(MANIFEST);
    manifest.is_file().then(|| manifest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_env_file_overlays_the_env_table() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".env"),
            "B=from-file\n# a comment\nC=\"quoted\"\n",
        )
        .unwrap();
        let manifest = dir.path().join(MANIFEST);
        std::fs::write(
            &manifest,
            "env_file = \".env\"\n[env]\nA = \"a\"\nB = \"from-table\"\n",
        )
        .unwrap();
        let vars: BTreeMap<String, String> = variables(&manifest).unwrap().all().collect();
        assert_eq!(vars["A"], "a");
        assert_eq!(vars["B"], "from-file");
        assert_eq!(vars["C"], "quoted");
    }

    #[test]
    fn a_missing_env_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join(MANIFEST);
        std::fs::write(&manifest, "env_file = \"missing.env\"\n").unwrap();
        let e = format!("{:#}", variables(&manifest).unwrap_err());
        assert!(e.contains("missing.env"), "{e}");
    }

    #[test]
    fn relative_paths_are_the_files_neighbours() {
        let file = Path::new("proj/deepfleet.toml");
        assert_eq!(beside(file, Path::new("a.yaml")), Path::new("proj/a.yaml"));
        assert_eq!(beside(file, Path::new("/abs.yaml")), Path::new("/abs.yaml"));
        assert_eq!(
            beside(Path::new("deepfleet.toml"), Path::new("a.yaml")),
            Path::new("a.yaml")
        );
    }
}
