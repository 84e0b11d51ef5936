//! The chart rendered with the tools venv's Helm SDK
//! (`scripts/helm/render.py`), and a Deployment's container as the kubelet
//! would start it: command and args, the environment with every
//! `secretKeyRef`/`configMapKeyRef` resolved from the rendered Secrets and
//! ConfigMaps, ports, volumes (ConfigMap files, emptyDirs) and the
//! probes.

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use serde_json::Value;

use crate::tools::root;

/// The rendered manifests of one release.
pub struct Rendered {
    docs: Vec<Value>,
}

/// What a volume mount puts at its path.
pub enum Source {
    /// Files by path relative to the mount (a ConfigMap's items).
    Files(Vec<(String, String)>),
    /// An empty directory of the pod.
    EmptyDir,
}

pub struct Mount {
    pub path: String,
    pub read_only: bool,
    pub source: Source,
}

/// One container of a Deployment, resolved.
pub struct Container {
    pub command: Option<Vec<String>>,
    pub args: Option<Vec<String>>,
    pub env: Vec<(String, String)>,
    pub mounts: Vec<Mount>,
    /// `(path, port)` of the readiness and liveness probes' `httpGet`, a
    /// named port resolved through the container's ports.
    pub readiness: (String, u16),
    pub liveness: (String, u16),
    pub run_as: Option<(u32, u32)>,
    pub read_only_root: bool,
    pub termination_grace_secs: u64,
}

impl Rendered {
    /// Renders the chart with `values` files and `--set` expressions.
    pub fn render(python: &Path, values: &[&Path], sets: &[String]) -> Self {
        let mut cmd = Command::new(python);
        cmd.arg(root().join("scripts/helm/render.py"));
        for file in values {
            cmd.arg("-f").arg(file);
        }
        for set in sets {
            cmd.arg("--set").arg(set);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "rendering the chart: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Rendered {
            docs: serde_json::from_slice(&out.stdout).unwrap(),
        }
    }

    fn find(&self, kind: &str, name: &str) -> &Value {
        self.docs
            .iter()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
    }

    /// The first container of the Deployment whose name ends with `suffix`.
    pub fn deployment(&self, suffix: &str) -> Container {
        let deployment = self
            .docs
            .iter()
            .find(|d| {
                d["kind"] == "Deployment"
                    && d["metadata"]["name"]
                        .as_str()
                        .is_some_and(|n| n.ends_with(suffix))
            })
            .unwrap_or_else(|| panic!("no Deployment *{suffix} rendered"));
        let pod = &deployment["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        let ports: Vec<(String, u16)> = list(&container["ports"])
            .iter()
            .map(|p| {
                let port = u16::try_from(p["containerPort"].as_u64().unwrap()).unwrap();
                (p["name"].as_str().unwrap_or_default().to_owned(), port)
            })
            .collect();
        let probe = |which: &str| {
            let get = &container[which]["httpGet"];
            let port = match &get["port"] {
                Value::String(name) => {
                    ports
                        .iter()
                        .find(|(n, _)| n == name)
                        .unwrap_or_else(|| panic!("{which} names no port {name}"))
                        .1
                }
                port => u16::try_from(port.as_u64().unwrap()).unwrap(),
            };
            (get["path"].as_str().unwrap().to_owned(), port)
        };
        let security = &pod["securityContext"];
        let run_as = security["runAsUser"].as_u64().map(|uid| {
            let gid = security["runAsGroup"].as_u64().unwrap_or(uid);
            (u32::try_from(uid).unwrap(), u32::try_from(gid).unwrap())
        });
        Container {
            command: container.get("command").map(strings),
            args: container.get("args").map(strings),
            env: list(&container["env"])
                .iter()
                .map(|e| (e["name"].as_str().unwrap().to_owned(), self.env_value(e)))
                .collect(),
            mounts: list(&container["volumeMounts"])
                .iter()
                .map(|m| self.mount(pod, m))
                .collect(),
            readiness: probe("readinessProbe"),
            liveness: probe("livenessProbe"),
            run_as,
            read_only_root: container["securityContext"]["readOnlyRootFilesystem"] == true,
            termination_grace_secs: pod["terminationGracePeriodSeconds"].as_u64().unwrap_or(30),
        }
    }

    fn env_value(&self, var: &Value) -> String {
        let value = if let Some(value) = var.get("value") {
            value.as_str().unwrap().to_owned()
        } else if let Some(from) = var["valueFrom"].get("secretKeyRef") {
            self.secret_key(
                from["name"].as_str().unwrap(),
                from["key"].as_str().unwrap(),
            )
        } else if let Some(from) = var["valueFrom"].get("configMapKeyRef") {
            let map = self.find("ConfigMap", from["name"].as_str().unwrap());
            map["data"][from["key"].as_str().unwrap()]
                .as_str()
                .unwrap()
                .to_owned()
        } else {
            panic!("an env source this test does not resolve: {var}")
        };
        // The kubelet expands $(VAR); the values this test renders use none.
        assert!(!value.contains("$("), "{var} needs $(VAR) expansion");
        value
    }

    /// A Secret's key: `stringData` as written, `data` base64-decoded.
    /// The value of `key` in the rendered Secret whose name ends with
    /// `suffix` (the release's name comes first).
    pub fn secret_value(&self, suffix: &str, key: &str) -> String {
        let name = self
            .docs
            .iter()
            .filter(|d| d["kind"] == "Secret")
            .filter_map(|d| d["metadata"]["name"].as_str())
            .find(|name| name.ends_with(suffix))
            .unwrap_or_else(|| panic!("no Secret *{suffix} rendered"))
            .to_owned();
        self.secret_key(&name, key)
    }

    fn secret_key(&self, name: &str, key: &str) -> String {
        let secret = self.find("Secret", name);
        if let Some(text) = secret["stringData"][key].as_str() {
            return text.to_owned();
        }
        let encoded = secret["data"][key]
            .as_str()
            .unwrap_or_else(|| panic!("Secret {name} has no key {key}"));
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap(),
        )
        .unwrap()
    }

    fn mount(&self, pod: &Value, mount: &Value) -> Mount {
        let name = mount["name"].as_str().unwrap();
        let volume = list(&pod["volumes"])
            .into_iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no volume {name}"));
        let source = if let Some(config) = volume.get("configMap") {
            let data = &self.find("ConfigMap", config["name"].as_str().unwrap())["data"];
            let files = match config.get("items") {
                Some(items) => list(items)
                    .iter()
                    .map(|item| {
                        let key = item["key"].as_str().unwrap();
                        (
                            item["path"].as_str().unwrap().to_owned(),
                            text(&data[key], key),
                        )
                    })
                    .collect(),
                None => data
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(key, value)| (key.clone(), text(value, key)))
                    .collect(),
            };
            Source::Files(files)
        } else if let Some(secret) = volume.get("secret") {
            let name = secret["secretName"].as_str().unwrap();
            let files = list(&secret["items"])
                .iter()
                .map(|item| {
                    let key = item["key"].as_str().unwrap();
                    (
                        item["path"].as_str().unwrap().to_owned(),
                        self.secret_key(name, key),
                    )
                })
                .collect();
            Source::Files(files)
        } else if volume.get("emptyDir").is_some() {
            Source::EmptyDir
        } else {
            panic!("a volume this test does not provide: {volume}")
        };
        Mount {
            path: mount["mountPath"].as_str().unwrap().to_owned(),
            read_only: mount["readOnly"] == true,
            source,
        }
    }
}

fn list(value: &Value) -> Vec<Value> {
    value.as_array().cloned().unwrap_or_default()
}

fn strings(value: &Value) -> Vec<String> {
    list(value)
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

fn text(value: &Value, key: &str) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("no ConfigMap key {key}"))
        .to_owned()
}
