//! Where `dev` and `scheduler` get their agent specs: an agents folder
//! (`--agents DIR`, whose files that declare an agent are specs, see
//! [`super::agents_dir`]) or the project manifest's `[agents]` (graph name
//! = spec file), the flag winning.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure};
use deepfleet_proto::AgentSpec;

use super::agents_dir::{self, FileKind};
use crate::settings::Settings;

/// Loads and checks one spec file.
pub type Load<'a> = &'a dyn Fn(&Path) -> anyhow::Result<AgentSpec>;

/// The specs a command serves.
#[derive(Debug, Clone)]
pub enum AgentSource {
    /// Every YAML file of the folder that declares an agent.
    Folder(PathBuf),
    /// The manifest's `[agents]`: each file must hold the spec of its
    /// graph name.
    Listed(BTreeMap<String, PathBuf>),
}

impl AgentSource {
    /// `--agents DIR` when given, else the settings' `[agents]`.
    pub fn choose(flag: Option<PathBuf>, settings: &Settings) -> anyhow::Result<Self> {
        if let Some(dir) = flag {
            return Ok(AgentSource::Folder(dir));
        }
        if settings.agents.is_empty() {
            bail!(
                "no agents: pass --agents DIR, or list them in the project manifest \
                 (`[agents]` of {}, or of the file --config names: NAME = \"spec.yaml\")",
                crate::settings::MANIFEST
            );
        }
        Ok(AgentSource::Listed(settings.agents.clone()))
    }

    /// The files that may hold specs, sorted.
    pub fn files(&self) -> anyhow::Result<Vec<PathBuf>> {
        match self {
            AgentSource::Folder(dir) => agents_dir::yaml_files(dir),
            AgentSource::Listed(agents) => {
                let mut files: Vec<PathBuf> = agents.values().cloned().collect();
                files.sort();
                files.dedup();
                Ok(files)
            }
        }
    }

    /// The spec in `path`, loaded by `load`; `None` when a folder's file
    /// declares no agent. A listed file must declare the agent it is
    /// listed for.
    pub fn load_one(&self, path: &Path, load: Load<'_>) -> anyhow::Result<Option<AgentSpec>> {
        match self {
            AgentSource::Folder(_) => {
                if agents_dir::kind_of(path)? != FileKind::Spec {
                    return Ok(None);
                }
                load(path).map(Some)
            }
            AgentSource::Listed(agents) => {
                let spec = load(path)?;
                let names: Vec<&str> = agents
                    .iter()
                    .filter(|(_, file)| file.as_path() == path)
                    .map(|(name, _)| name.as_str())
                    .collect();
                ensure!(
                    names.contains(&spec.name.as_str()),
                    "{}: the spec is named {:?}, but [agents] lists the file as {}; \
                     a graph's name and its spec's `name` must be the same",
                    path.display(),
                    spec.name,
                    names.join(", ")
                );
                Ok(Some(spec))
            }
        }
    }

    /// Every spec with its file, sorted by file; an error names the file,
    /// and so does a source without specs.
    pub fn load_all(&self, load: Load<'_>) -> anyhow::Result<Vec<(PathBuf, AgentSpec)>> {
        let mut specs = Vec::new();
        for path in self.files()? {
            if let Some(spec) = self.load_one(&path, load)? {
                specs.push((path, spec));
            }
        }
        ensure!(
            !specs.is_empty(),
            "no agent specs in {self}: a spec is a YAML file (*.yaml, *.yml) with top-level `name` and `model`"
        );
        Ok(specs)
    }
}

impl fmt::Display for AgentSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentSource::Folder(dir) => write!(f, "{}", dir.display()),
            AgentSource::Listed(agents) => {
                let names: Vec<&str> = agents.keys().map(String::as_str).collect();
                write!(f, "[agents] ({})", names.join(", "))
            }
        }
    }
}

/// The spec file `deepfleet run` uses: `flag` as a name of `[agents]` or
/// a path, else `run.agent`, else the only agent of `[agents]`.
pub fn run_agent(flag: Option<&str>, settings: &Settings) -> anyhow::Result<PathBuf> {
    let agents = &settings.agents;
    let Some(wanted) = flag.or(settings.run.agent.as_deref()) else {
        return match agents.len() {
            1 => Ok(agents.values().next().cloned().unwrap_or_default()),
            0 => bail!(
                "no agent: pass --agent SPEC.yaml, or list it in the project manifest \
                 ([agents] of {})",
                crate::settings::MANIFEST
            ),
            _ => bail!(
                "{} agents in [agents] ({}): pick one with --agent NAME or run.agent",
                agents.len(),
                agents.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        };
    };
    if let Some(path) = agents.get(wanted) {
        return Ok(path.clone());
    }
    let path = Path::new(wanted);
    if flag.is_some() && (path.exists() || agents.is_empty()) {
        return Ok(path.to_owned());
    }
    bail!(
        "no agent {wanted:?} in [agents] ({}){}",
        agents.keys().cloned().collect::<Vec<_>>().join(", "),
        if flag.is_some() {
            " and no such file"
        } else {
            " (run.agent)"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(agents: &[(&str, &str)], default: Option<&str>) -> Settings {
        let mut s = Settings {
            agents: agents
                .iter()
                .map(|(n, p)| ((*n).to_owned(), PathBuf::from(p)))
                .collect(),
            ..Settings::default()
        };
        s.run.agent = default.map(str::to_owned);
        s
    }

    #[test]
    fn run_picks_the_named_the_default_or_the_only_agent() {
        let one = settings(&[("a", "p/a.yaml")], None);
        assert_eq!(run_agent(None, &one).unwrap(), Path::new("p/a.yaml"));
        assert_eq!(run_agent(Some("a"), &one).unwrap(), Path::new("p/a.yaml"));
        let two = settings(&[("a", "p/a.yaml"), ("b", "p/b.yaml")], Some("b"));
        assert_eq!(run_agent(None, &two).unwrap(), Path::new("p/b.yaml"));
        let e = run_agent(None, &settings(&[("a", "x"), ("b", "y")], None)).unwrap_err();
        assert!(e.to_string().contains("pick one with --agent NAME"), "{e}");
        let e = run_agent(Some("c"), &two).unwrap_err();
        assert!(
            e.to_string()
                .contains("no agent \"c\" in [agents] (a, b) and no such file"),
            "{e}"
        );
    }

    #[test]
    fn without_a_manifest_the_flag_is_a_path() {
        let none = Settings::default();
        assert_eq!(
            run_agent(Some("spec.yaml"), &none).unwrap(),
            Path::new("spec.yaml")
        );
        assert!(run_agent(None, &none).is_err());
    }

    #[test]
    fn a_listed_file_must_hold_the_spec_of_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("spec.yaml");
        std::fs::write(&file, "name: other\nmodel: replay:s.yaml\n").unwrap();
        let source = AgentSource::Listed([("mine".to_owned(), file.clone())].into());
        let load = |p: &Path| {
            let text = std::fs::read_to_string(p)?;
            AgentSpec::from_yaml(&text).map_err(|e| anyhow::anyhow!("{e}"))
        };
        let e = source.load_all(&load).unwrap_err();
        assert!(
            format!("{e:#}").contains("named \"other\", but [agents] lists the file as mine"),
            "{e:#}"
        );
        std::fs::write(&file, "name: mine\nmodel: replay:s.yaml\n").unwrap();
        let specs = source.load_all(&load).unwrap();
        assert_eq!(specs[0].1.name, "mine");
    }
}
