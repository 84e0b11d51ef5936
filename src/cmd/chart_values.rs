//! `deepfleet chart-values`: the project manifest as values of the Helm
//! chart (`helm/deepfleet`), so the chart serves the project's agents:
//! `[agents]` becomes the chart's `agents` (each spec checked, as the
//! scheduler will load it) and `[env]` its `pod.extraEnv`.
//!
//! Helm can read no file outside its chart, so the manifest reaches it
//! through a values file: `deepfleet chart-values > project.yaml`, then
//! `helm install fleet helm/deepfleet -f project.yaml`. `env_file` stays
//! out: it holds what stays out of version control, and keys reach the
//! chart's pods from Secrets (`providerSecrets`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use deepfleet_model::Providers;
use deepfleet_proto::AgentSpec;
use serde_json::{Value, json};

use super::agent_source::AgentSource;
use crate::settings::Settings;

/// Arguments of `deepfleet chart-values`.
#[derive(Args)]
pub struct ChartValuesArgs {
    /// Write the values here instead of stdout.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Use this model (`provider:model`) instead of every model of the
    /// specs, as `run --model` does (a `replay:` model cannot run in a
    /// cluster).
    #[arg(long)]
    model: Option<String>,
}

pub fn run(args: &ChartValuesArgs, settings: &Settings) -> anyhow::Result<ExitCode> {
    let text = document(&values(settings, args.model.as_deref())?)?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .context("writing to stdout")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `values` as a values file.
fn document(values: &Value) -> anyhow::Result<String> {
    let yaml = serde_norway::to_string(values).context("writing the values as YAML")?;
    Ok(format!(
        "# Helm values of the deepfleet chart, from the project manifest's [agents] and [env]\n\
         # (`deepfleet chart-values`); provider keys come from `providerSecrets`.\n{yaml}"
    ))
}

/// The chart values of the project `settings` describe.
fn values(settings: &Settings, model: Option<&str>) -> anyhow::Result<Value> {
    // Keys are the cluster's (providerSecrets), checked by the scheduler
    // there; here a spec only has to name providers the workers serve.
    let lookup = settings.var_lookup();
    let providers = deepfleet_replay::register(Providers::with_env(
        settings.providers.clone(),
        move |name| {
            lookup(name).or_else(|| name.ends_with("_API_KEY").then(|| "from-secret".to_owned()))
        },
    ));
    let options = super::agent_options(settings);
    let load = |path: &Path| crate::batch_io::load_spec(path, model, &providers, &options);
    let source = AgentSource::choose(None, settings)?;
    let mut agents = serde_json::Map::new();
    for (path, spec) in source.load_all(&load)? {
        refuse_replay(&path, &spec)?;
        let value = serde_json::to_value(&spec)
            .with_context(|| format!("{}: writing the spec", path.display()))?;
        agents.insert(spec.name.clone(), value);
    }
    let mut extra_env = Vec::new();
    for (name, value) in &settings.env {
        if name.ends_with("_API_KEY") {
            bail!(
                "[env] sets {name}: a key does not go into chart values; give it to the chart's \
                 pods from a Secret (providerSecrets: [{{env: {name}, secretName: ..., secretKey: ...}}])"
            );
        }
        extra_env.push(json!({"name": name, "value": value}));
    }
    let mut values = json!({ "agents": agents });
    if !extra_env.is_empty() {
        values["pod"] = json!({ "extraEnv": extra_env });
    }
    Ok(values)
}

/// A replay script is a file of this machine; the chart's workers have
/// none.
fn refuse_replay(path: &Path, spec: &AgentSpec) -> anyhow::Result<()> {
    let models =
        std::iter::once(&spec.model).chain(spec.subagents.iter().filter_map(|s| s.model.as_ref()));
    for model in models {
        if model.starts_with("replay:") {
            bail!(
                "{}: model {model} is a replay script of this machine, which the chart's workers \
                 cannot read; pass --model provider:model",
                path.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(manifest: &str, spec: &str) -> (tempfile::TempDir, Settings) {
        // Resolving a hosted provider builds its HTTPS client.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("agent.yaml"), spec).unwrap();
        let file = dir.path().join("deepfleet.toml");
        std::fs::write(&file, manifest).unwrap();
        let settings = Settings::load(Some(&file)).unwrap().settings;
        (dir, settings)
    }

    #[test]
    fn agents_and_env_become_values() {
        let (_dir, settings) = project(
            "[agents]\nhelper = \"agent.yaml\"\n[env]\nRUST_LOG = \"info\"\n",
            "name: helper\nmodel: openai:gpt-4.1-mini\nsystem_prompt: Help.\n",
        );
        let values = values(&settings, None).unwrap();
        assert_eq!(values["agents"]["helper"]["model"], "openai:gpt-4.1-mini");
        assert_eq!(values["agents"]["helper"]["system_prompt"], "Help.");
        assert_eq!(
            values["pod"]["extraEnv"],
            json!([{"name": "RUST_LOG", "value": "info"}])
        );
    }

    #[test]
    fn replay_models_and_keys_in_env_are_refused() {
        let (_dir, settings) = project(
            "[agents]\nhelper = \"agent.yaml\"\n",
            "name: helper\nmodel: replay:script.yaml\n",
        );
        std::fs::write(
            settings.agents["helper"].with_file_name("script.yaml"),
            "rules: []\n",
        )
        .unwrap();
        let e = format!("{:#}", values(&settings, None).unwrap_err());
        assert!(e.contains("replay script of this machine"), "{e}");
        let values = values(&settings, Some("openai:gpt-4.1")).unwrap();
        assert_eq!(values["agents"]["helper"]["model"], "openai:gpt-4.1");

        let (_dir, settings) = project(
            "[agents]\nhelper = \"agent.yaml\"\n[env]\nOPENAI_API_KEY = \"sk-x\"\n",
            "name: helper\nmodel: openai:gpt-4.1\n",
        );
        let e = format!("{:#}", super::values(&settings, None).unwrap_err());
        assert!(e.contains("providerSecrets"), "{e}");
    }

    /// `helm/deepfleet/ci/project-values.yaml`, which `make helm` renders
    /// and validates with the chart's other value sets, is this command's
    /// output for `examples/briefings`; `UPDATE_CHART_VALUES=1` rewrites it.
    #[test]
    fn the_charts_project_value_set_is_the_briefings_example() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let manifest = root.join("examples/briefings/deepfleet.toml");
        let settings = Settings::load(Some(&manifest)).unwrap().settings;
        let text = document(&values(&settings, Some("openai:gpt-4.1-mini")).unwrap()).unwrap();
        let committed = root.join("helm/deepfleet/ci/project-values.yaml");
        if std::env::var_os("UPDATE_CHART_VALUES").is_some() {
            std::fs::write(&committed, &text).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(&committed).unwrap_or_default(),
            text,
            "helm/deepfleet/ci/project-values.yaml is stale: rerun with UPDATE_CHART_VALUES=1"
        );
    }
}
