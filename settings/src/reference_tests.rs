//! `docs/configuration.md`, `deploy/deepfleet.example.toml`, the Helm
//! chart's configuration and the variables the docs name, held to the
//! settings types: a setting added, renamed or given another default
//! fails here until each of them follows. (The flags' variables are held
//! to them in the binary, which owns the flags.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::{Settings, names, variable};

/// `path` in the repository, above this crate's folder.
fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn settings() -> Vec<String> {
    names::of::<Settings>().unwrap()
}

/// The default of `name` as the reference writes it: `` `64` ``,
/// `` `"deepfleet"` ``, `none`; `None` for a setting under a map, whose
/// defaults live elsewhere.
fn documented_default(defaults: &Value, name: &str) -> Option<String> {
    if name.split('.').any(|part| part == names::ANY) {
        return None;
    }
    let pointer = format!("/{}", name.replace('.', "/"));
    Some(match defaults.pointer(&pointer) {
        None | Some(Value::Null) => "none".to_owned(),
        Some(value) => format!("`{value}`"),
    })
}

/// The reference's table rows: setting -> (variable, default).
fn reference_rows() -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(repo_file("docs/configuration.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, setting, var, default, ..] = cells.as_slice() else {
            panic!("a row of docs/configuration.md without four cells: {line}");
        };
        let unquote = |cell: &str| cell.trim_matches('`').to_owned();
        let row = (unquote(var), (*default).to_owned());
        assert!(
            rows.insert(unquote(setting), row).is_none(),
            "{setting} has two rows in docs/configuration.md"
        );
    }
    rows
}

#[test]
fn every_setting_is_in_the_reference_with_its_variable_and_default() {
    let defaults = serde_json::to_value(Settings::default()).unwrap();
    let rows = reference_rows();
    for name in settings() {
        let Some((var, default)) = rows.get(&name) else {
            panic!("docs/configuration.md has no row for `{name}`");
        };
        assert_eq!(var, &variable(&name), "the variable of `{name}`");
        match documented_default(&defaults, &name) {
            Some(want) => assert!(
                default.starts_with(&want),
                "docs/configuration.md gives `{name}` the default {default:?}, the types {want}"
            ),
            None => assert!(!default.is_empty(), "`{name}` has no default cell"),
        }
    }
    let known: BTreeSet<String> = settings().into_iter().collect();
    let stale: Vec<&String> = rows.keys().filter(|row| !known.contains(*row)).collect();
    assert!(
        stale.is_empty(),
        "docs/configuration.md names settings that do not exist: {stale:?}"
    );
}

#[test]
fn the_reference_gives_the_model_clients_own_defaults() {
    use deepfleet_model::transport::{
        DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT,
    };
    let rows = reference_rows();
    for (name, want) in [
        ("providers.<name>.timeout_secs", DEFAULT_TIMEOUT.as_secs()),
        (
            "providers.<name>.idle_timeout_secs",
            DEFAULT_IDLE_TIMEOUT.as_secs(),
        ),
        (
            "providers.<name>.max_response_bytes",
            DEFAULT_MAX_RESPONSE_BYTES,
        ),
    ] {
        let default = &rows[name].1;
        assert!(
            default.starts_with(&format!("`{want}`")),
            "docs/configuration.md gives `{name}` the default {default:?}, the client {want}"
        );
    }
}

/// The example with every optional setting switched on: `# key = ...`
/// and `# [table]` lines lose their `# `; prose (`## ...`) stays.
fn uncommented(example: &str) -> String {
    let is_setting = |rest: &str| {
        rest.starts_with('[')
            || rest.split_once(" = ").is_some_and(|(key, _)| {
                !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    example
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if is_setting(rest) => rest,
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn leaves(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                leaves(value, &child, out);
            }
        }
        _ => out.push(path.to_owned()),
    }
}

fn toml_leaves(text: &str) -> Vec<String> {
    let table: Value = config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Toml))
        .build()
        .unwrap()
        .try_deserialize()
        .unwrap();
    let mut out = Vec::new();
    leaves(&table, "", &mut out);
    out
}

#[test]
fn the_example_file_loads_with_every_setting_at_its_default() {
    let path = repo_file("deploy/deepfleet.example.toml");
    let loaded = Settings::load_from(Some(&path), []).unwrap();
    assert!(loaded.unknown.is_empty());
    assert_eq!(
        serde_json::to_value(&loaded.settings).unwrap(),
        serde_json::to_value(Settings::default()).unwrap(),
        "the example's values are the defaults"
    );

    let all = uncommented(&std::fs::read_to_string(&path).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deepfleet.toml");
    std::fs::write(&file, &all).unwrap();
    std::fs::write(dir.path().join(".env"), "FROM_ENV_FILE=1\n").unwrap();
    let loaded = Settings::load_from(Some(&file), []).unwrap().settings;
    assert_eq!(loaded.env_file_vars["FROM_ENV_FILE"], "1");
    assert!(loaded.providers.contains_key("openai"));
    assert!(loaded.profiles.contains_key("openai:gpt-5"));
    let set = toml_leaves(&all);
    for name in settings() {
        assert!(
            set.iter().any(|key| names::matches(&name, key)),
            "deploy/deepfleet.example.toml does not show `{name}`"
        );
    }
}

#[test]
fn the_charts_configuration_names_only_settings() {
    let template =
        std::fs::read_to_string(repo_file("helm/deepfleet/templates/configmap.yaml")).unwrap();
    let names = settings();
    let mut keys = 0;
    for line in template.lines().map(str::trim_start) {
        let Some((key, _)) = line.split_once(" = ") else {
            continue;
        };
        // `providers.{{ $name | quote }}.base_url`: any provider name.
        let key = key.replace("{{ $name | quote }}", "openai");
        assert!(
            names.iter().any(|name| names::matches(name, &key)),
            "the chart writes `{key}`, which is no setting"
        );
        keys += 1;
    }
    assert!(keys > 10, "the chart's keys were not found");
}

/// `DEEPFLEET__...` names in `text`, up to the first character that can
/// be no part of one; `DEEPFLEET__WORKER__...` (a family) is left out.
fn variables_named_in(text: &str) -> Vec<String> {
    let prefix = "DEEPFLEET__";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || "_<>".contains(c)))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        if !name.ends_with("__") {
            out.push(name.to_owned());
        }
        rest = &tail[end..];
    }
    out
}

#[test]
fn every_variable_the_docs_and_deployments_name_is_a_setting() {
    let variables: BTreeSet<String> = settings().iter().map(|name| variable(name)).collect();
    let mut files = vec![
        repo_file("README.md"),
        repo_file("RELIABILITY.md"),
        repo_file("deploy/compose.yaml"),
        repo_file("deploy/deepfleet.example.toml"),
        repo_file("helm/deepfleet/values.yaml"),
    ];
    for dir in ["docs", "helm/deepfleet/templates"] {
        for entry in std::fs::read_dir(repo_file(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    let mut seen = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in variables_named_in(&text) {
            // `DEEPFLEET__PROVIDERS__OPENAI__API_KEY` is an instance of
            // `DEEPFLEET__PROVIDERS__<NAME>__API_KEY`.
            let key = name["DEEPFLEET__".len()..]
                .to_lowercase()
                .replace("__", ".");
            assert!(
                variables.contains(&name) || settings().iter().any(|s| names::matches(s, &key)),
                "{} names {name}, which sets no setting",
                file.display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 40, "only {seen} variables found");
}
