//! An agents folder (`--agents DIR`): which of its YAML files are agent
//! specs.
//!
//! A folder holds more than specs (a replay script beside its spec, as in
//! `examples/briefings`), so a file is a spec only when it declares an
//! agent: its top level is a mapping with both `name` and `model` keys,
//! the two fields every spec has. Other YAML files are skipped with a note
//! in the log; one with only one of the two keys gets a warning (it may be
//! a spec missing a field), and YAML that does not parse is an error at
//! startup, since it may be a broken spec.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_norway::Value;

/// What a YAML file of an agents folder is.
#[derive(Debug, PartialEq, Eq)]
pub enum FileKind {
    /// It declares an agent: a mapping with `name` and `model`.
    Spec,
    /// Something else (a replay script, say).
    Other,
    /// A mapping with `name` or `model` but not both; the missing key.
    Incomplete(&'static str),
}

/// What the YAML `text` is; an error when it does not parse.
pub fn classify(text: &str) -> Result<FileKind, serde_norway::Error> {
    let Value::Mapping(top) = serde_norway::from_str::<Value>(text)? else {
        return Ok(FileKind::Other);
    };
    Ok(
        match (top.contains_key("name"), top.contains_key("model")) {
            (true, true) => FileKind::Spec,
            (true, false) => FileKind::Incomplete("model"),
            (false, true) => FileKind::Incomplete("name"),
            (false, false) => FileKind::Other,
        },
    )
}

/// The YAML files (`*.yaml`, `*.yml`) of `dir`, sorted.
pub fn yaml_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// What `path` is, logging the files that are not specs; an error names
/// the file when it cannot be read or is not YAML.
pub fn kind_of(path: &Path) -> anyhow::Result<FileKind> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let kind =
        classify(&text).map_err(|e| anyhow::anyhow!("{}: not valid YAML: {e}", path.display()))?;
    match kind {
        FileKind::Spec => {}
        FileKind::Other => tracing::info!(
            file = %path.display(),
            "skipped: not an agent spec (no top-level `name` and `model`)"
        ),
        FileKind::Incomplete(missing) => tracing::warn!(
            file = %path.display(),
            missing,
            "skipped: looks like an agent spec but has no top-level `{missing}`"
        ),
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::agent_source::AgentSource;
    use deepfleet_proto::AgentSpec;

    #[test]
    fn only_mappings_with_name_and_model_are_specs() {
        assert_eq!(
            classify("name: a\nmodel: replay:s.yaml\n").unwrap(),
            FileKind::Spec
        );
        assert_eq!(
            classify("rules:\n  - when: {turn: 0}\n").unwrap(),
            FileKind::Other
        );
        assert_eq!(
            classify("- name: a\n  model: b\n").unwrap(),
            FileKind::Other
        );
        assert_eq!(classify("").unwrap(), FileKind::Other);
        assert_eq!(
            classify("name: a\nsystem_prompt: hi\n").unwrap(),
            FileKind::Incomplete("model")
        );
        assert_eq!(
            classify("model: openai:x\n").unwrap(),
            FileKind::Incomplete("name")
        );
        assert!(classify("name: [a\n").is_err());
    }

    fn load(path: &Path) -> anyhow::Result<AgentSpec> {
        let text = std::fs::read_to_string(path)?;
        AgentSpec::from_yaml(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// `examples/briefings` holds a spec and its replay script.
    #[test]
    fn the_briefings_example_is_one_spec_beside_its_script() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/briefings");
        let specs = AgentSource::Folder(dir).load_all(&load).unwrap();
        let names: Vec<&str> = specs.iter().map(|(_, s)| s.name.as_str()).collect();
        assert_eq!(names, ["briefings"]);
    }

    #[test]
    fn a_broken_spec_is_an_error_naming_file_field_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.yaml"), "rules: []\n").unwrap();
        std::fs::write(
            dir.path().join("agent.yaml"),
            "name: a\nmodel: openai:x\nlimits:\n  max_stepz: 3\n",
        )
        .unwrap();
        let err = format!(
            "{:#}",
            AgentSource::Folder(dir.path().to_owned())
                .load_all(&load)
                .unwrap_err()
        );
        assert!(err.contains("agent.yaml"), "{err}");
        assert!(err.contains("limits") && err.contains("line 4"), "{err}");
        std::fs::write(dir.path().join("agent.yaml"), "name: a\nmodel: openai:x\n").unwrap();
        let bad = dir.path().join("bad.yml");
        std::fs::write(&bad, "name: [a\n").unwrap();
        let err = format!(
            "{:#}",
            AgentSource::Folder(dir.path().to_owned())
                .load_all(&load)
                .unwrap_err()
        );
        assert!(
            err.contains("bad.yml") && err.contains("not valid YAML"),
            "{err}"
        );
    }

    #[test]
    fn a_folder_without_specs_says_what_a_spec_is() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.yaml"), "rules: []\n").unwrap();
        let err = format!(
            "{:#}",
            AgentSource::Folder(dir.path().to_owned())
                .load_all(&load)
                .unwrap_err()
        );
        assert!(err.contains("`name` and `model`"), "{err}");
    }
}
